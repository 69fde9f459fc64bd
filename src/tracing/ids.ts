/**
 * Trace and span ids for the spans made here: hex from a pool of random bytes filled by the
 * operating system's generator (one randomFillSync per POOL_BYTES / 8 span ids). The SDK's
 * generator builds each id from Math.random() a byte at a time; at 1% sampling that code runs too
 * rarely to stay compiled or cached, and ids are made on the produce path (traceSend).
 */
import { randomFillSync } from 'node:crypto';

/** Bytes drawn from the OS at a time: 512 span ids. */
const POOL_BYTES = 4_096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let used = POOL_BYTES;

function hex(bytes: number): string {
  for (;;) {
    if (used + bytes > POOL_BYTES) {
      randomFillSync(pool);
      used = 0;
    }
    const start = used;
    used += bytes;
    // An all-zero id is invalid (W3C): draw again (probability 2^-64 for a span id).
    for (let i = start; i < used; i++) if (pool[i] !== 0) return pool.toString('hex', start, used);
  }
}

/** A new 16-byte trace id, 32 lowercase hex characters, never all zeros. */
export function newTraceId(): string {
  return hex(16);
}

/** A new 8-byte span id, 16 lowercase hex characters, never all zeros. */
export function newSpanId(): string {
  return hex(8);
}
