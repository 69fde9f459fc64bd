// Proves subscriptions and assignments survive an encode/decode round trip and bad bytes are refused.
import { describe, expect, it } from 'vitest';
import { decodeAssignment, decodeSubscription, encodeAssignment, encodeSubscription } from './consumer-protocol.ts';

describe('consumer protocol bytes', () => {
  it('round-trips a subscription with and without user data', () => {
    expect(decodeSubscription(encodeSubscription({ topics: ['b', 'a'] }))).toEqual({ topics: ['b', 'a'], userData: Buffer.alloc(0) });
    const withData = decodeSubscription(encodeSubscription({ topics: ['t'], userData: Buffer.from('hi') }));
    expect(withData.userData.toString()).toBe('hi');
  });

  it('round-trips an assignment; empty bytes mean no partitions', () => {
    const bytes = encodeAssignment({ partitions: [{ topic: 't', partitions: [0, 3] }, { topic: 'u', partitions: [] }] });
    expect(decodeAssignment(bytes)).toEqual({
      partitions: [{ topic: 't', partitions: [0, 3] }, { topic: 'u', partitions: [] }],
      userData: Buffer.alloc(0),
    });
    expect(decodeAssignment(new Uint8Array(0))).toEqual({ partitions: [], userData: Buffer.alloc(0) });
  });

  it('refuses bytes that do not decode with INVALID_REQUEST', () => {
    expect(() => decodeSubscription(Uint8Array.from([0x0a, 0x05, 0x61]))).toThrow(expect.objectContaining({ code: 'INVALID_REQUEST' }));
    expect(() => decodeAssignment(Uint8Array.from([0xff, 0xff, 0xff]))).toThrow(expect.objectContaining({ code: 'INVALID_REQUEST' }));
  });
});
