/**
 * The mesh key ring: every message is sealed with AES-256-GCM under the primary key and opened
 * under any key of the ring, as HashiCorp memberlist does (security.go). Rotation is two steps on
 * every member: add the new key as secondary (accepted, not yet sent), then make it primary and
 * keep the old one as secondary until every member has switched, then drop it. Two keys at once
 * is enough for that and bounds the work of refusing a forged message to two tag checks.
 *
 * The AES key is not the configured key itself but HKDF-SHA256 of it (info `AEAD_KEY_INFO`):
 * configured keys may be any length of at least 32 bytes (a passphrase, a dev key), AES-256 needs
 * exactly 32, and the same configured key also MACs the version-1 wire (HMAC-SHA256, kept for a
 * rolling upgrade, see codec.ts): one key, two algorithms, two derived keys.
 *
 * Nonces are 12 random bytes per message (memberlist's choice). NIST SP 800-38D bounds a key
 * with random nonces to 2^32 messages (the chance of any nonce repeating stays under 2^-32,
 * n² / 2^97). The mesh sends ~20 datagrams/s per member, so 20 members (400/s) reach 2^32 in
 * 2^32 / 400 s = 124 days and 200 members in 12 days: rotate the key (two steps, above) at least
 * that often; the docs say so. Random bytes are drawn `NONCE_POOL_BYTES` at a time.
 */
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomFillSync, timingSafeEqual } from 'node:crypto';
import { EdgeqError } from '../../src/core/index.ts';

/** Keys accepted at once: the primary and one being rotated in or out. */
export const KEYS_MAX = 2;
/** Bytes of an HMAC-SHA256 (the version-1 wire). */
export const MAC_BYTES = 32;
/** Bytes of a GCM nonce (the standard 96 bits: no GHASH of the nonce). */
export const NONCE_BYTES = 12;
/** Bytes of a GCM tag (the full 128 bits). */
export const TAG_BYTES = 16;
/** A key shorter than this is refused outside the local dev deployment: 256 bits, AES-256's and SHA-256's strength. */
export const KEY_BYTES_MIN = 32;
/** HKDF's info for the AES-256-GCM key: changing it changes every ciphertext (a new wire version). */
export const AEAD_KEY_INFO = 'edgeq mesh aes-256-gcm v2';
/** Random bytes drawn at once for nonces: 341 nonces per draw. */
const NONCE_POOL_BYTES = 4092;

/** Options of the key ring. */
export interface KeyringOptions {
  /**
   * Accept keys shorter than KEY_BYTES_MIN. Only for the local dev deployment, which runs on one
   * machine with a key written in its source; never in production.
   */
  insecureDevKey?: boolean;
  /** Where nonces come from; random by default. Tests fix it to check ciphertexts byte by byte. */
  nonce?: () => Uint8Array;
}

/** A key as given: bytes, or a string taken as its UTF-8 bytes. */
export type MeshKey = Uint8Array | string;

/** The AES-256-GCM key derived from a configured key. */
export function aeadKeyOf(key: Uint8Array): Buffer {
  return Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), AEAD_KEY_INFO, 32));
}

/** 12 random bytes at a time out of a pool refilled by one randomFillSync call. */
function pooledNonces(): () => Uint8Array {
  const pool = Buffer.allocUnsafe(NONCE_POOL_BYTES);
  let at = NONCE_POOL_BYTES;
  return () => {
    if (at + NONCE_BYTES > NONCE_POOL_BYTES) {
      randomFillSync(pool);
      at = 0;
    }
    at += NONCE_BYTES;
    return pool.subarray(at - NONCE_BYTES, at);
  };
}

/** Seals with the primary key and opens under every key of the ring. */
export class Keyring {
  private readonly keys: Buffer[];
  private readonly aeadKeys: Buffer[];
  private readonly nextNonce: () => Uint8Array;

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
    this.aeadKeys = this.keys.map(aeadKeyOf);
    this.nextNonce = options.nonce ?? pooledNonces();
  }

  /** How many keys the ring accepts. */
  get size(): number {
    return this.keys.length;
  }

  /**
   * Writes `nonce[12] ‖ AES-256-GCM(primary, nonce, aad, plaintext) ‖ tag[16]` into `out` at
   * `at` (which must have room for NONCE_BYTES + plaintext + TAG_BYTES); returns the end.
   */
  sealInto(out: Buffer, at: number, aad: Uint8Array, plaintext: Uint8Array): number {
    const nonce = this.nextNonce();
    if (nonce.length !== NONCE_BYTES) throw new EdgeqError('INVALID_CONFIG', `a mesh nonce must be ${NONCE_BYTES} bytes, got ${nonce.length}`, { details: { key: 'nonce' } });
    out.set(nonce, at);
    const cipher = createCipheriv('aes-256-gcm', this.aeadKeys[0]!, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(aad);
    let end = at + NONCE_BYTES;
    const body = cipher.update(plaintext);
    out.set(body, end);
    end += body.length;
    const tail = cipher.final();
    out.set(tail, end);
    end += tail.length;
    out.set(cipher.getAuthTag(), end);
    return end + TAG_BYTES;
  }

  /**
   * Opens `sealed` = nonce ‖ ciphertext ‖ tag under each key of the ring in turn; the plaintext,
   * or null when no key's tag matches (a forged, altered, truncated or foreign message).
   */
  open(aad: Uint8Array, sealed: Uint8Array): Buffer | null {
    if (sealed.length < NONCE_BYTES + TAG_BYTES) return null;
    const nonce = sealed.subarray(0, NONCE_BYTES);
    const body = sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES);
    const tag = sealed.subarray(sealed.length - TAG_BYTES);
    // A failed tag is reported by final() throwing; the stack trace of that error is half the cost
    // of refusing a forged datagram (5.1 → 2.8 µs per key measured here), and a flood of forgeries
    // is exactly when that cost matters. The error itself is never looked at.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      for (const key of this.aeadKeys) {
        const decipher = createDecipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES });
        decipher.setAAD(aad);
        decipher.setAuthTag(tag);
        const plain = decipher.update(body);
        try {
          // final() checks the tag: until it passes, `plain` is not to be trusted and is dropped.
          const tail = decipher.final();
          return tail.length === 0 ? plain : Buffer.concat([plain, tail]);
        } catch {
          // Not this key (or not authentic): try the next one.
        }
      }
      return null;
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }
  }

  /** The version-1 wire's MAC of `data` under the primary key (the MAC-only mode kept for a rolling upgrade). */
  sign(data: Uint8Array): Buffer {
    return createHmac('sha256', this.keys[0]!).update(data).digest();
  }

  /** True when `mac` is the version-1 MAC of `data` under any key of the ring (constant-time compare). */
  verify(data: Uint8Array, mac: Uint8Array): boolean {
    if (mac.length !== MAC_BYTES) return false;
    for (const key of this.keys) {
      if (timingSafeEqual(createHmac('sha256', key).update(data).digest(), mac)) return true;
    }
    return false;
  }
}
