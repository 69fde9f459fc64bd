/**
 * One ingress step as a record of `__ingress_history`: the key is the gateway's member id, the
 * value a fixed-size versioned encoding, the timestamp the step's start (so time retention and
 * timestamp lookups work on the step's time, not the time it was written).
 *
 * Value, version 1 (45 bytes, big-endian):
 *
 *   u8  version = 1
 *   i64 t          start of the step, epoch ms, a multiple of stepMs
 *   u32 stepMs
 *   f64 records    mean records/s over the step
 *   f64 recordsMax largest sampled records/s in the step
 *   f64 bytes      mean bytes/s over the step
 *   f64 bytesMax   largest sampled bytes/s in the step
 *
 * A later version appends fields and bumps the version; a reader refuses versions it does not know.
 */
import { EdgeqError } from '../../core/index.ts';

export const INGRESS_STEP_CODEC_VERSION = 1;
export const INGRESS_STEP_VALUE_BYTES = 1 + 8 + 4 + 8 * 4;
/** A member id is a mesh member name (region-host-port): far below this. */
export const INGRESS_MEMBER_BYTES_MAX = 256;

/** One gateway's step, as written. */
export interface IngressStepRecord {
  /** The gateway that measured it (its mesh member or instance id). */
  member: string;
  t: number;
  stepMs: number;
  records: number;
  recordsMax: number;
  bytes: number;
  bytesMax: number;
}

/** The record (key, value, timestamp) of one step. */
export function encodeIngressStep(s: IngressStepRecord): { key: Buffer; value: Buffer; timestamp: number } {
  checkStep(s);
  const key = Buffer.from(s.member, 'utf8');
  const value = Buffer.alloc(INGRESS_STEP_VALUE_BYTES);
  let o = value.writeUInt8(INGRESS_STEP_CODEC_VERSION, 0);
  o = value.writeBigInt64BE(BigInt(s.t), o);
  o = value.writeUInt32BE(s.stepMs, o);
  o = value.writeDoubleBE(s.records, o);
  o = value.writeDoubleBE(s.recordsMax, o);
  o = value.writeDoubleBE(s.bytes, o);
  value.writeDoubleBE(s.bytesMax, o);
  return { key, value, timestamp: s.t };
}

/** The step of a record; INVALID_DATA naming what is wrong when it is not one. */
export function decodeIngressStep(key: Uint8Array | null, value: Uint8Array | null): IngressStepRecord {
  if (key === null || key.length === 0) throw bad('the key (member id) is missing');
  if (key.length > INGRESS_MEMBER_BYTES_MAX) throw bad(`the key is ${key.length} bytes, the limit is ${INGRESS_MEMBER_BYTES_MAX}`);
  if (value === null || value.length === 0) throw bad('the value is missing');
  const v = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  const version = v.readUInt8(0);
  if (version !== INGRESS_STEP_CODEC_VERSION) throw bad(`version ${version} is not known (this build reads ${INGRESS_STEP_CODEC_VERSION})`, { version });
  if (v.length !== INGRESS_STEP_VALUE_BYTES) throw bad(`a version-1 value is ${INGRESS_STEP_VALUE_BYTES} bytes, got ${v.length}`, { bytes: v.length });
  const t = v.readBigInt64BE(1);
  if (t < 0n || t > BigInt(Number.MAX_SAFE_INTEGER)) throw bad(`t ${t} is out of range`);
  const s: IngressStepRecord = {
    member: Buffer.from(key).toString('utf8'),
    t: Number(t),
    stepMs: v.readUInt32BE(9),
    records: v.readDoubleBE(13),
    recordsMax: v.readDoubleBE(21),
    bytes: v.readDoubleBE(29),
    bytesMax: v.readDoubleBE(37),
  };
  try {
    checkStep(s);
  } catch (err) {
    throw bad((err as EdgeqError).message);
  }
  return s;
}

function checkStep(s: IngressStepRecord): void {
  const fail = (what: string, value: unknown) => new EdgeqError('INVALID_ARGUMENT', `ingress step: ${what}, got ${String(value)}`, { details: { key: what.split(' ')[0], value } });
  if (typeof s.member !== 'string' || s.member.length === 0 || Buffer.byteLength(s.member) > INGRESS_MEMBER_BYTES_MAX) throw fail(`member must be 1..${INGRESS_MEMBER_BYTES_MAX} bytes`, s.member);
  if (!Number.isSafeInteger(s.stepMs) || s.stepMs <= 0 || s.stepMs > 0xffff_ffff) throw fail('stepMs must be a positive 32-bit integer', s.stepMs);
  if (!Number.isSafeInteger(s.t) || s.t < 0 || s.t % s.stepMs !== 0) throw fail('t must be a non-negative multiple of stepMs', s.t);
  for (const k of ['records', 'recordsMax', 'bytes', 'bytesMax'] as const) {
    if (typeof s[k] !== 'number' || !Number.isFinite(s[k]) || s[k] < 0) throw fail(`${k} must be a finite rate >= 0`, s[k]);
  }
}

function bad(message: string, details: Record<string, unknown> = {}): EdgeqError {
  return new EdgeqError('INVALID_DATA', `ingress history record: ${message}`, { details });
}
