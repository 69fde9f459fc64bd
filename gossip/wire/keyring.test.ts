// Proves the key ring refuses short, empty and too many keys with a typed INVALID_CONFIG (unless
// the dev deployment's insecureDevKey allows a short one), seals with the primary (AES-256-GCM
// under the HKDF-derived key, the nonce first) and opens under any key, refusing every altered
// byte; and that the MAC-only wire's HMAC signs with the primary and verifies under any key.
import { createDecipheriv, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isEdgeqError } from '../../src/core/index.ts';
import { aeadKeyOf, Keyring, KEY_BYTES_MIN, NONCE_BYTES, TAG_BYTES } from './keyring.ts';

const long = 'k'.repeat(KEY_BYTES_MIN);

describe('Keyring', () => {
  it.each([
    ['a 31-byte key', ['k'.repeat(31)]],
    ['an empty key', ['']],
    ['no key', []],
    ['three keys', [long, long, long]],
    ['a number', [42 as unknown as string]],
  ])('refuses %s with INVALID_CONFIG naming the key', (_name, keys) => {
    try {
      new Keyring(keys);
      expect.unreachable();
    } catch (err) {
      expect(isEdgeqError(err, 'INVALID_CONFIG')).toBe(true);
      expect(String((err as Error).message)).toMatch(/keys/);
    }
  });

  it('accepts a short key only with insecureDevKey', () => {
    expect(() => new Keyring(['dev'])).toThrow(/at least 32/);
    expect(new Keyring(['dev'], { insecureDevKey: true }).size).toBe(1);
    expect(() => new Keyring([''], { insecureDevKey: true })).toThrow(/empty/);
  });

  it('signs with the primary and verifies under either key', () => {
    const a = Buffer.alloc(32, 0xaa);
    const b = Buffer.alloc(40, 0xbb);
    const ring = new Keyring([a, b]);
    const data = Buffer.from('hello');
    const macA = createHmac('sha256', a).update(data).digest();
    const macB = createHmac('sha256', b).update(data).digest();
    expect(ring.sign(data)).toEqual(macA);
    expect(ring.verify(data, macA)).toBe(true);
    expect(ring.verify(data, macB)).toBe(true);
    expect(new Keyring([a]).verify(data, macB)).toBe(false);
    expect(ring.verify(data, macA.subarray(0, 31))).toBe(false);
    expect(ring.verify(Buffer.from('hellp'), macA)).toBe(false);
  });

  it('seals with the primary key, nonce first, and opens under either key; any altered byte opens under none', () => {
    const a = Buffer.alloc(32, 0xaa);
    const b = Buffer.alloc(40, 0xbb);
    const nonce = Buffer.alloc(NONCE_BYTES, 5);
    const aad = Buffer.from('header');
    const plain = Buffer.from('the state of a region');
    const ring = new Keyring([a, b], { nonce: () => nonce });
    const out = Buffer.alloc(NONCE_BYTES + plain.length + TAG_BYTES);
    expect(ring.sealInto(out, 0, aad, plain)).toBe(out.length);
    expect(out.subarray(0, NONCE_BYTES)).toEqual(nonce);
    // Independently: AES-256-GCM under HKDF(a), the tag last.
    const d = createDecipheriv('aes-256-gcm', aeadKeyOf(a), nonce);
    d.setAAD(aad);
    d.setAuthTag(out.subarray(out.length - TAG_BYTES));
    expect(Buffer.concat([d.update(out.subarray(NONCE_BYTES, out.length - TAG_BYTES)), d.final()])).toEqual(plain);
    expect(ring.open(aad, out)).toEqual(plain);
    expect(new Keyring([b, a]).open(aad, out)).toEqual(plain);
    expect(new Keyring([b]).open(aad, out)).toBeNull();
    expect(ring.open(Buffer.from('headeR'), out)).toBeNull();
    for (let at = 0; at < out.length; at++) {
      const x = Buffer.from(out);
      x[at] = x[at]! ^ 1;
      expect(ring.open(aad, x), `byte ${at}`).toBeNull();
    }
    expect(ring.open(aad, out.subarray(0, NONCE_BYTES + TAG_BYTES - 1))).toBeNull();
  });

  it('refuses a nonce source of the wrong size', () => {
    const ring = new Keyring(['k'.repeat(32)], { nonce: () => Buffer.alloc(8) });
    expect(() => ring.sealInto(Buffer.alloc(64), 0, Buffer.alloc(0), Buffer.from('x'))).toThrow(/12 bytes/);
  });
});
