/**
 * The request bodies the gateway benchmarks send, in one place so that `bench:gateway` and
 * `profile:gateway` measure the same requests:
 * - `single`: `application/json` `{"records":[{"value"}]}` (no key, no partition);
 * - `json100`: the same with `batchRecords` records;
 * - `protobuf100`: `application/x-protobuf` ProduceRequest with one partition holding one
 *   uncompressed batch of `batchRecords` records, answered in protobuf. A body names one
 *   partition, so there is one body per partition for a connection to rotate over.
 */
import { buildBatch } from '../../src/log/index.ts';
import { Acks, encodeMessage } from '../../src/protocol/index.ts';
import type { CannonRequest } from './autocannon.ts';

export type GatewayCase = 'single' | 'json100' | 'protobuf100';
export type GatewayAcks = '1' | 'all';

export interface GatewayRequestShape {
  valueBytes: number;
  batchRecords: number;
  partitions: number;
}

/** The requests one connection loops over, for a case and acks level, and records per request. */
export async function gatewayRequests(topic: string, c: GatewayCase, acks: GatewayAcks, shape: GatewayRequestShape): Promise<{ requests: CannonRequest[]; recordsPerRequest: number }> {
  const path = `/v1/topics/${topic}/records?acks=${acks}`;
  const value = 'v'.repeat(shape.valueBytes);
  if (c === 'single' || c === 'json100') {
    const n = c === 'single' ? 1 : shape.batchRecords;
    const body = JSON.stringify({ records: Array.from({ length: n }, () => ({ value })) });
    return { requests: [{ method: 'POST', path, headers: { 'content-type': 'application/json' }, body }], recordsPerRequest: n };
  }
  const batch = await buildBatch(Array.from({ length: shape.batchRecords }, () => ({ value })));
  const requests = Array.from({ length: shape.partitions }, (_, partition): CannonRequest => ({
    method: 'POST',
    path,
    headers: { 'content-type': 'application/x-protobuf', accept: 'application/x-protobuf' },
    body: Buffer.from(encodeMessage('ProduceRequest', { acks: acks === 'all' ? Acks.ALL : Acks.LEADER, timeoutMs: 30_000, topics: [{ name: topic, partitions: [{ partition, records: batch }] }] })),
  }));
  return { requests, recordsPerRequest: shape.batchRecords };
}
