// Proves the broker's keys file: it is validated with INVALID_CONFIG naming the field, keys resolve to their tenant and role (a wrong key to null), certificate identities match exactly before by prefix, a tenant's grants answer per action and topic (`*` included), and the cell's roles may do anything.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BrokerAuth } from './broker-auth.ts';

const sha = (k: string) => createHash('sha256').update(k).digest('hex');

const auth = BrokerAuth.fromJson({
  keys: [
    { sha256: sha('k-shop'), tenant: 'shop', grants: [{ topic: 'orders', actions: ['write'] }, { topic: '*', actions: ['read'] }] },
    { sha256: sha('k-gw'), tenant: 'gw', role: 'internal', grants: [] },
  ],
  certificates: [
    { identity: 'broker-*', role: 'broker' },
    { identity: 'broker-special', tenant: 'special', grants: [{ topic: 'a', actions: ['admin'] }] },
  ],
});

describe('BrokerAuth', () => {
  it('resolves keys to tenants and roles, and a wrong key to null', () => {
    expect(auth.authenticateKey('k-shop')).toMatchObject({ tenant: 'shop', role: 'tenant' });
    expect(auth.authenticateKey('k-gw')).toMatchObject({ tenant: 'gw', role: 'internal' });
    expect(auth.authenticateKey('k-nope')).toBeNull();
    expect(auth.authenticateKey('')).toBeNull();
  });

  it('matches certificate identities exactly first, then by prefix', () => {
    expect(auth.principalOfCertificate('broker-special')).toMatchObject({ role: 'tenant', tenant: 'special' });
    expect(auth.principalOfCertificate('broker-3')).toMatchObject({ role: 'broker', name: 'broker-3' });
    expect(auth.principalOfCertificate('gateway')).toBeNull();
  });

  it('answers grants per action and topic; cell roles may do anything', () => {
    const shop = auth.authenticateKey('k-shop')!;
    expect([shop.can('write', 'orders'), shop.can('read', 'orders'), shop.can('write', 'other'), shop.can('read', 'other'), shop.can('admin', 'orders')]).toEqual([true, true, false, true, false]);
    // Asked again (memoised): the same answers.
    expect([shop.can('write', 'orders'), shop.can('write', 'other')]).toEqual([true, false]);
    expect(auth.authenticateKey('k-gw')!.can('admin', '*')).toBe(true);
  });

  it('refuses a malformed file naming the field', () => {
    expect(() => BrokerAuth.fromJson({ keys: [{ sha256: 'zz', tenant: 't', grants: [] }] })).toThrow(/keys\.0\.sha256/);
    expect(() => BrokerAuth.fromJson({ keys: [{ sha256: sha('x'), tenant: 't', role: 'broker', grants: [] }] })).toThrow(/keys\.0\.role/);
    expect(() => BrokerAuth.fromJson({ keys: [], certificates: [{ identity: 'app' }] })).toThrow(/role tenant but no tenant/);
  });
});
