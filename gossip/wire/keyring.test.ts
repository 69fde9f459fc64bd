// Proves the key ring refuses short, empty and too many keys with a typed INVALID_CONFIG (unless
// the dev deployment's insecureDevKey allows a short one), signs with the primary and verifies
// under any key.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isEdgeqError } from '../../src/core/index.ts';
import { Keyring, KEY_BYTES_MIN } from './keyring.ts';

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
});
