// Proves the Fetch shapes of messages.ts match edgeq.proto for the origin filter of global topics
// (field numbers appended, never reused) and that the new fields round-trip: the origin and
// after_origin_offset (absent reads as null), scanned_to, and origin_cursors decoding to a
// Record<string, number>. And the quota messages (DescribeQuotas, AlterQuotas): their fields as
// numbered, every TypeScript key a field, and an AlterQuotas op telling an absent value apart from
// a zero, with fractions and huge values reaching the broker as they are.
import { describe, expect, it } from 'vitest';
import { decodeBody, encodeMessage } from './codec.ts';
import type { AlterQuotaOp, AlterQuotaResult, AlterQuotasRequest, FetchPartition, FetchPartitionResult, FetchRequest, FetchResponse, QuotaEntry } from './messages.ts';
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

describe('quota message shapes', () => {
  it('numbers the fields and every TypeScript key is one', () => {
    expect(fieldsOf('QuotaEntry')).toEqual({ tenant: 1, topic: 2, recordsPerSec: 3, bytesPerSec: 4, burstRecords: 5, burstBytes: 6, scope: 7 });
    expect(fieldsOf('DescribeQuotasResponse')).toEqual({ quotas: 1, error: 2 });
    expect(fieldsOf('AlterQuotaOp')).toEqual({ tenant: 1, topic: 2, remove: 3, recordsPerSec: 4, bytesPerSec: 5, burstRecords: 6, burstBytes: 7, scope: 8 });
    expect(fieldsOf('AlterQuotasRequest')).toEqual({ ops: 1 });
    expect(fieldsOf('AlterQuotaResult')).toEqual({ tenant: 1, topic: 2, error: 3, existed: 4, invalidField: 5 });
    expect(fieldsOf('AlterQuotasResponse')).toEqual({ results: 1 });
    // The throttle of KIP-219 stays field 2 of both responses.
    expect(fieldsOf('ProduceResponse')['throttleMs']).toBe(2);
    expect(fieldsOf('FetchResponse')['throttleMs']).toBe(2);
    const entry: Required<QuotaEntry> = { tenant: '', topic: '', recordsPerSec: 0, bytesPerSec: 0, burstRecords: 0, burstBytes: 0, scope: '' };
    const op: Required<AlterQuotaOp> = { tenant: '', topic: '', remove: false, recordsPerSec: 0, bytesPerSec: 0, burstRecords: 0, burstBytes: 0, scope: '' };
    const result: Required<AlterQuotaResult> = { tenant: '', topic: '', error: null, existed: false, invalidField: '' };
    expect(Object.keys(entry).sort()).toEqual(Object.keys(fieldsOf('QuotaEntry')).sort());
    expect(Object.keys(op).sort()).toEqual(Object.keys(fieldsOf('AlterQuotaOp')).sort());
    expect(Object.keys(result).sort()).toEqual(Object.keys(fieldsOf('AlterQuotaResult')).sort());
  });

  it('carries an absent value as null, a zero as 0, and fractions and huge values unchanged', () => {
    const req: AlterQuotasRequest = {
      ops: [
        { tenant: 'acme', topic: '*', recordsPerSec: 1000, bytesPerSec: 1e12 },
        { tenant: 'acme', topic: 'orders', recordsPerSec: 0, bytesPerSec: 2.5, burstRecords: 1e13, scope: 'global' },
        { tenant: 'acme', topic: 'old', remove: true },
      ],
    };
    const [a, b, c] = decodeBody<AlterQuotasRequest>('AlterQuotasRequest', encodeMessage('AlterQuotasRequest', req)).ops;
    expect([a!.recordsPerSec, a!.bytesPerSec, a!.burstRecords ?? null, a!.burstBytes ?? null, a!.scope ?? null]).toEqual([1000, 1e12, null, null, null]);
    expect([b!.recordsPerSec, b!.bytesPerSec, b!.burstRecords, b!.scope]).toEqual([0, 2.5, 1e13, 'global']);
    expect([c!.remove, c!.recordsPerSec ?? null]).toEqual([true, null]);
  });
});
