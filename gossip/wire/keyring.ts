/**
 * The mesh key ring: every message carries an HMAC-SHA256 under the primary key; a message is
 * accepted under any key of the ring. Rotation is two steps on every member: add the new key as
 * secondary (accepted, not yet sent), then make it primary and keep the old one as secondary until
 * every member has switched, then drop it. Two keys at once is enough for that and bounds the
 * work of verifying a bad MAC to two HMACs.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { EdgeqError } from '../../src/core/index.ts';

/** Keys accepted at once: the primary and one being rotated in or out. */
export const KEYS_MAX = 2;
/** Bytes of an HMAC-SHA256. */
export const MAC_BYTES = 32;
/** A key shorter than this is refused outside the local dev deployment: 256 bits, SHA-256's block strength. */
export const KEY_BYTES_MIN = 32;

/** Options of the key ring. */
export interface KeyringOptions {
  /**
   * Accept keys shorter than KEY_BYTES_MIN. Only for the local dev deployment, which runs on one
   * machine with a key written in its source; never in production.
   */
  insecureDevKey?: boolean;
}

/** A key as given: bytes, or a string taken as its UTF-8 bytes. */
export type MeshKey = Uint8Array | string;

/** Signs with the primary key and verifies against every key of the ring. */
export class Keyring {
  private readonly keys: Buffer[];

  constructor(keys: readonly MeshKey[], options: KeyringOptions = {}) {
    if (!Array.isArray(keys) || keys.length < 1 || keys.length > KEYS_MAX) {
      throw new EdgeqError('INVALID_CONFIG', `mesh keys: expected 1 to ${KEYS_MAX} keys (primary first), got ${Array.isArray(keys) ? keys.length : typeof keys}`, {
        details: { key: 'keys' },
      });
    }
    this.keys = keys.map((k, i) => {
      const bytes = typeof k === 'string' ? Buffer.from(k, 'utf8') : k instanceof Uint8Array ? Buffer.from(k) : null;
      if (bytes === null) throw new EdgeqError('INVALID_CONFIG', `mesh keys[${i}]: expected bytes or a string`, { details: { key: `keys[${i}]` } });
      if (bytes.length === 0) throw new EdgeqError('INVALID_CONFIG', `mesh keys[${i}] is empty`, { details: { key: `keys[${i}]` } });
      if (bytes.length < KEY_BYTES_MIN && options.insecureDevKey !== true) {
        throw new EdgeqError('INVALID_CONFIG', `mesh keys[${i}] has ${bytes.length} bytes; at least ${KEY_BYTES_MIN} are required (insecureDevKey allows a short key in the local dev deployment only)`, {
          details: { key: `keys[${i}]`, bytes: bytes.length, bytesMin: KEY_BYTES_MIN },
        });
      }
      return bytes;
    });
  }

  /** How many keys the ring accepts. */
  get size(): number {
    return this.keys.length;
  }

  /** The MAC of `data` under the primary key. */
  sign(data: Uint8Array): Buffer {
    return createHmac('sha256', this.keys[0]!).update(data).digest();
  }

  /** True when `mac` is the MAC of `data` under any key of the ring (constant-time compare). */
  verify(data: Uint8Array, mac: Uint8Array): boolean {
    if (mac.length !== MAC_BYTES) return false;
    for (const key of this.keys) {
      if (timingSafeEqual(createHmac('sha256', key).update(data).digest(), mac)) return true;
    }
    return false;
  }
}
