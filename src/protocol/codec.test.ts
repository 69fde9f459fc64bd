// Proves every API in the table has its messages in edgeq.proto, that typed messages round-trip
// through frames (int64 as plain numbers, bytes untouched), that ERROR frames turn back into the
// typed error, and that version negotiation picks the highest common version.
import { describe, expect, it } from 'vitest';
import { EdgeqError } from '../core/index.ts';
import { API_SPECS, ApiKey, negotiateVersions, supportedVersions } from './api.ts';
import { decodeBody, decodeResponse, encodeErrorResponse, encodeMessage, encodeRequest, encodeResponse, errorOf } from './codec.ts';
import { FLAG_ERROR, FrameDecoder, parseFrame } from './frame.ts';
import type { FetchRequest, FetchResponse, ProduceRequest } from './messages.ts';
import { messageType } from './schema.ts';

describe('protocol codec', () => {
  it('has a request and a response message in the .proto for every API, with unique keys', () => {
    for (const s of API_SPECS) {
      expect(() => messageType(s.requestType)).not.toThrow();
      expect(() => messageType(s.responseType)).not.toThrow();
    }
    expect(new Set(API_SPECS.map((s) => s.key)).size).toBe(API_SPECS.length);
  });

  it('round-trips a produce request with record bytes and large offsets', () => {
    const records = Buffer.from([0, 1, 2, 254, 255]);
    const req: ProduceRequest = { acks: 3, timeoutMs: 1500, topics: [{ name: 'orders', partitions: [{ partition: 7, records, leaderEpoch: -1 }] }] };
    const frame = parseFrame(encodeRequest('Produce', 1, 42, req));
    expect(frame.apiKey).toBe(ApiKey.Produce);
    expect(frame.correlationId).toBe(42);
    const back = decodeBody<ProduceRequest>('ProduceRequest', frame.body);
    expect(back.acks).toBe(3);
    expect(back.topics[0]!.partitions[0]!.leaderEpoch).toBe(-1);
    expect(Buffer.from(back.topics[0]!.partitions[0]!.records).equals(records)).toBe(true);

    const res: FetchResponse = {
      topics: [{ name: 'orders', partitions: [{ partition: 7, highWatermark: 2 ** 40 + 3, logStartOffset: 0, logEndOffset: 2 ** 40 + 3, records, leaderEpoch: 5 }] }],
    };
    const decoded = decodeResponse('Fetch', new FrameDecoder().push(encodeResponse('Fetch', 1, 43, res))[0]!);
    expect(decoded.topics[0]!.partitions[0]!.highWatermark).toBe(2 ** 40 + 3);
    expect(decoded.topics[0]!.partitions[0]!.error ?? null).toBeNull();
  });

  it('turns an ERROR frame back into the same typed error', () => {
    const f = parseFrame(encodeErrorResponse({ apiKey: 2, apiVersion: 1, correlationId: 1 }, new EdgeqError('UNSUPPORTED_VERSION', 'nope')));
    expect(f.flags & FLAG_ERROR).toBe(FLAG_ERROR);
    let caught: unknown;
    try {
      decodeResponse('Produce', f);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(EdgeqError);
    expect((caught as EdgeqError).code).toBe('UNSUPPORTED_VERSION');
    expect(errorOf({ code: 0, message: '', retriable: false })).toBeNull();
  });

  it('negotiates the highest common version and drops APIs without overlap', () => {
    const peer = supportedVersions().map((r) => (r.apiKey === ApiKey.Fetch ? { ...r, minVersion: 5, maxVersion: 9 } : r));
    peer.push({ apiKey: 999, minVersion: 1, maxVersion: 1 });
    const chosen = negotiateVersions(peer);
    expect(chosen.get(ApiKey.Produce)).toBe(1);
    expect(chosen.has(ApiKey.Fetch)).toBe(false);
    expect(chosen.has(999)).toBe(false);
  });

  it('tells an absent replica id or leader epoch apart from 0 (a consumer fetch is not broker 0)', () => {
    const bare = decodeBody<FetchRequest>('FetchRequest', encodeMessage('FetchRequest', { topics: [{ name: 't', partitions: [{ partition: 0, fetchOffset: 0, maxBytes: 1 }] }] }));
    expect(bare.replicaId ?? null).toBeNull();
    expect(bare.topics[0]!.partitions[0]!.currentLeaderEpoch ?? null).toBeNull();
    const follower = decodeBody<FetchRequest>('FetchRequest', encodeMessage('FetchRequest', { replicaId: 0, topics: [] }));
    expect(follower.replicaId).toBe(0);
  });

  it('refuses a body that does not decode with INVALID_REQUEST', () => {
    expect(() => decodeBody('ProduceRequest', Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f]))).toThrow(EdgeqError);
  });
});
