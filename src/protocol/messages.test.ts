// Proves the Fetch shapes of messages.ts match edgeq.proto for the origin filter of global topics
// (field numbers appended, never reused) and that the new fields round-trip: the origin and
// after_origin_offset (absent reads as null), scanned_to, and origin_cursors decoding to a
// Record<string, number>.
import { describe, expect, it } from 'vitest';
import { decodeBody, encodeMessage } from './codec.ts';
import type { FetchPartition, FetchPartitionResult, FetchRequest, FetchResponse } from './messages.ts';
import { messageType } from './schema.ts';

const fieldsOf = (type: string) => Object.fromEntries(Object.values(messageType(type).fields).map((f) => [f.name, f.id]));

describe('Fetch message shapes', () => {
  it('numbers the origin fields after the existing ones', () => {
    expect(fieldsOf('FetchPartition')).toEqual({ partition: 1, fetchOffset: 2, maxBytes: 3, currentLeaderEpoch: 4, origin: 5, afterOriginOffset: 6, session: 7 });
    expect(fieldsOf('FetchPartitionResult')).toEqual({
      partition: 1, error: 2, highWatermark: 3, logStartOffset: 4, logEndOffset: 5, records: 6, leaderEpoch: 7, scannedTo: 8, originCursors: 9, originDeletedUpTo: 10,
    });
    // Every key of the TypeScript shapes is a field of the .proto.
    const partition: Required<FetchPartition> = { partition: 0, fetchOffset: 0, maxBytes: 0, currentLeaderEpoch: 0, origin: '', afterOriginOffset: 0, session: '' };
    const result: Required<FetchPartitionResult> = {
      partition: 0, error: null, highWatermark: 0, logStartOffset: 0, logEndOffset: 0, records: new Uint8Array(), leaderEpoch: 0, scannedTo: 0, originCursors: {}, originDeletedUpTo: {},
    };
    expect(Object.keys(partition).sort()).toEqual(Object.keys(fieldsOf('FetchPartition')).sort());
    expect(Object.keys(result).sort()).toEqual(Object.keys(fieldsOf('FetchPartitionResult')).sort());
  });

  it('round-trips the origin filter and the cursors, telling an absent origin apart from one given', () => {
    const req: FetchRequest = { topics: [{ name: 'g', partitions: [{ partition: 0, fetchOffset: -1, maxBytes: 10, origin: 'us-east', afterOriginOffset: 2 ** 40 }, { partition: 1, fetchOffset: 0, maxBytes: 10 }] }] };
    const back = decodeBody<FetchRequest>('FetchRequest', encodeMessage('FetchRequest', req));
    const [a, b] = back.topics[0]!.partitions;
    expect([a!.fetchOffset, a!.origin, a!.afterOriginOffset]).toEqual([-1, 'us-east', 2 ** 40]);
    expect([b!.origin ?? null, b!.afterOriginOffset ?? null]).toEqual([null, null]);

    const res: FetchResponse = {
      topics: [{ name: 'g', partitions: [{ partition: 0, highWatermark: 5, logStartOffset: 0, logEndOffset: 5, records: Buffer.from([1, 2]), leaderEpoch: 1, scannedTo: 2 ** 41, originCursors: { 'us-east': 2 ** 42, 'eu-west': -1 } }] }],
    };
    const p = decodeBody<FetchResponse>('FetchResponse', encodeMessage('FetchResponse', res)).topics[0]!.partitions[0]!;
    expect(p.scannedTo).toBe(2 ** 41);
    expect({ ...p.originCursors }).toEqual({ 'us-east': 2 ** 42, 'eu-west': -1 });
    expect(typeof p.originCursors!['us-east']).toBe('number');
    const bare = decodeBody<FetchResponse>('FetchResponse', encodeMessage('FetchResponse', { topics: [{ name: 'g', partitions: [{ partition: 0 }] }] })).topics[0]!.partitions[0]!;
    expect({ ...bare.originCursors }).toEqual({});
  });
});
