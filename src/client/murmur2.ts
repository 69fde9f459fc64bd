/**
 * Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2), bit for bit, so a key lands on
 * the same partition as it would with a Java producer. Arithmetic is on signed 32-bit ints like
 * Java's: `Math.imul` for multiplication, `>>>` for the unsigned shifts.
 */

const SEED = 0x9747b28c;
const M = 0x5bd1e995;
const R = 24;

/** The murmur2 hash of `data` as a signed 32-bit int (what Java's `Utils.murmur2` returns). */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  let h = (SEED ^ length) | 0;
  const length4 = length >>> 2;
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4;
    let k = (data[i4]! & 0xff) | ((data[i4 + 1]! & 0xff) << 8) | ((data[i4 + 2]! & 0xff) << 16) | ((data[i4 + 3]! & 0xff) << 24);
    k = Math.imul(k, M);
    k ^= k >>> R;
    k = Math.imul(k, M);
    h = Math.imul(h, M);
    h ^= k;
  }
  const tail = length & ~3;
  // Java's fall-through switch on length % 4, written as ifs (the project forbids fall-through).
  const rest = length % 4;
  if (rest >= 3) h ^= (data[tail + 2]! & 0xff) << 16;
  if (rest >= 2) h ^= (data[tail + 1]! & 0xff) << 8;
  if (rest >= 1) {
    h ^= data[tail]! & 0xff;
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/** Kafka's `Utils.toPositive`: clears the sign bit (not Math.abs, which fails on INT_MIN). */
export function toPositive(n: number): number {
  return n & 0x7fffffff;
}
