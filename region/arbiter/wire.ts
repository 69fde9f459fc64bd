/**
 * The embedded arbiter's wire protocol: newline-delimited JSON over TCP on 127.0.0.1. JSON rather
 * than the broker's binary frames because the traffic is a few small control messages per second
 * and readable lines make the arbiter easy to debug with `nc`.
 *
 *   request   {"id":7,"op":"put","key":"cell/x","value":"<base64>","leaseId":"123"}
 *   response  {"id":7,"ok":true,"result":{...}}  |  {"id":7,"ok":false,"error":{"code","message","details"}}
 *   events    {"watch":3,"events":[{"type":"put","key":…,"value":"<base64>","modRevision":9}]}
 *   broken    {"watch":3,"error":{"code","message","details"}}
 *
 *   txn       {"id":8,"op":"txn","compares":[{"key","target":"mod"|"create","revision"}],
 *              "ops":[{"type":"put","key","value":"<base64>","leaseId"?} | {"type":"delete","key"} | {"type":"deletePrefix","prefix"}]}
 *             → {"ok":bool,"revision":n,"current":[kv|null, …]}
 *
 * A watch request carries the client's watch id; its response carries `startRevision`, the
 * revision the watch follows from (exclusive), so a client can resume after a reconnect.
 */
import { z } from 'zod';
import { EdgeqError, ERROR_SPECS, type ErrorCode } from '../../src/core/index.ts';
import type { KeyValue, TxnOp, WatchEvent } from './arbiter.ts';

/**
 * Longest message line. A value is at most VALUE_BYTES_MAX (1 MiB), 1.4 MiB in base64, plus a key
 * of at most 4 KiB and the envelope: 2 MiB holds any single request or response. A getPrefix
 * answer can be larger, so responses get their own, larger bound.
 */
export const REQUEST_BYTES_MAX = 2 * 1024 * 1024;
/** Longest response or event line: a getPrefix over many keys (64 MiB is ~45 000 keys of 1 KiB). */
export const RESPONSE_BYTES_MAX = 64 * 1024 * 1024;

const id = z.number().int().nonnegative();
const revision = z.number().int();
const txnCompare = z.object({ key: z.string(), target: z.enum(['mod', 'create']), revision });
const txnOp = z.discriminatedUnion('type', [
  z.object({ type: z.literal('put'), key: z.string(), value: z.string(), leaseId: z.string().optional() }),
  z.object({ type: z.literal('delete'), key: z.string() }),
  z.object({ type: z.literal('deletePrefix'), prefix: z.string() }),
]);

/** Every request the server understands. Validated here; values are checked again by the arbiter. */
export const requestSchema = z.discriminatedUnion('op', [
  z.object({ id, op: z.literal('grant'), ttlMs: z.number() }),
  z.object({ id, op: z.literal('keepAlive'), leaseId: z.string() }),
  z.object({ id, op: z.literal('revoke'), leaseId: z.string() }),
  z.object({ id, op: z.literal('get'), key: z.string() }),
  z.object({ id, op: z.literal('getPrefix'), prefix: z.string() }),
  z.object({ id, op: z.literal('put'), key: z.string(), value: z.string(), leaseId: z.string().optional() }),
  z.object({ id, op: z.literal('cas'), key: z.string(), value: z.string(), expectedModRevision: revision, leaseId: z.string().optional() }),
  z.object({ id, op: z.literal('delete'), key: z.string(), expectedModRevision: revision.optional() }),
  // Counts and sizes are checked by the arbiter (checkTxn), so a bad transaction is answered
  // INVALID_ARGUMENT like on the other arbiters; the line bound already limits the array sizes.
  z.object({ id, op: z.literal('txn'), compares: z.array(txnCompare), ops: z.array(txnOp) }),
  z.object({ id, op: z.literal('watch'), watch: id, prefix: z.string(), fromRevision: revision.optional() }),
  z.object({ id, op: z.literal('unwatch'), watch: id }),
]);

/** A request on the wire. */
export type WireRequest = z.infer<typeof requestSchema>;

/** A key-value on the wire (value in base64). */
export interface WireKeyValue {
  key: string;
  value: string;
  createRevision: number;
  modRevision: number;
  leaseId: string;
}

/** An event on the wire (value in base64). */
export interface WireEvent {
  type: 'put' | 'delete';
  key: string;
  value: string;
  modRevision: number;
}

/** An error on the wire. */
export interface WireError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

/** Any message from the server. */
export type WireServerMessage =
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: WireError }
  | { watch: number; events: WireEvent[] }
  | { watch: number; error: WireError };

export function kvToWire(kv: KeyValue): WireKeyValue {
  return { ...kv, value: kv.value.toString('base64') };
}

export function kvFromWire(kv: WireKeyValue): KeyValue {
  return { ...kv, value: Buffer.from(kv.value, 'base64') };
}

/** A transaction op on the wire (value in base64). */
export type WireTxnOp = z.infer<typeof txnOp>;

export function txnOpToWire(op: TxnOp): WireTxnOp {
  if (op.type !== 'put') return op;
  return { type: 'put', key: op.key, value: op.value.toString('base64'), ...(op.leaseId !== undefined ? { leaseId: op.leaseId } : {}) };
}

export function txnOpFromWire(op: WireTxnOp): TxnOp {
  if (op.type !== 'put') return op;
  return { type: 'put', key: op.key, value: Buffer.from(op.value, 'base64'), ...(op.leaseId !== undefined ? { leaseId: op.leaseId } : {}) };
}

export function eventToWire(e: WatchEvent): WireEvent {
  return { type: e.type, key: e.key, value: e.value.toString('base64'), modRevision: e.modRevision };
}

export function eventFromWire(e: WireEvent): WatchEvent {
  return { type: e.type, key: e.key, value: Buffer.from(e.value, 'base64'), modRevision: e.modRevision };
}

export function errorToWire(err: unknown): WireError {
  if (err instanceof EdgeqError) return { code: err.code, message: err.message, details: err.details };
  return { code: 'UNKNOWN', message: err instanceof Error ? err.message : String(err) };
}

export function errorFromWireMessage(e: WireError): EdgeqError {
  const code: ErrorCode = e.code in ERROR_SPECS ? (e.code as ErrorCode) : 'UNKNOWN';
  return new EdgeqError(code, e.message, { details: e.details ?? {} });
}
