// Proves push-pull (the mesh's TCP state sync) over mutual TLS on real sockets: two members with
// certificates of the mesh's CA join and converge over TLS 1.3; a member without a certificate,
// with one from another CA, with an expired one, or speaking plaintext cannot sync state with a
// TLS member (the handshake is refused and counted as `tls-refused`, nothing of it is merged);
// a dialer that does not trust the listener sends nothing; a verifyPeer check refuses a
// verified certificate it does not want; a TLS 1.2 client is refused by the 1.3 floor; and a
// certificate reload on the listener keeps the mesh syncing with the new certificate.
import { connect as tlsConnect } from 'node:tls';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../src/testing/index.ts';
import { MeshAgent, type MeshAgentOptions, type MeshTls } from '../../gossip/index.ts';
import { TestCa, type Issued } from '../helpers/test-ca.ts';

const KEY = 'mesh-tls-test-key-0123456789abcdef';
/** Fast timers: push-pull every second, so a test waits ~1 s for an anti-entropy round. */
const FAST = { probeIntervalMs: 100, probeTimeoutMs: 50, gossipIntervalMs: 50, pushPullIntervalMs: 1_000, reconnectIntervalMs: 200, joinRetryMs: 100, joinRetryMsMax: 400 };
/** Bound of each wait: a join or a refusal takes one handshake (~10 ms on loopback); 15 s leaves room on a loaded 2-core machine. */
const WAIT_MS = 15_000;

let ca: TestCa;
let otherCa: TestCa;
let a: Issued;
let b: Issued;
let a2: Issued;
let foreign: Issued;
let expired: Issued;
beforeAll(async () => {
  ca = await TestCa.create('mesh CA');
  otherCa = await TestCa.create('another CA');
  a = await ca.server('mesh-a');
  b = await ca.server('mesh-b');
  a2 = await ca.server('mesh-a-renewed');
  foreign = await otherCa.server('mesh-foreign');
  expired = await ca.client('mesh-expired', { expired: true });
});

const running: MeshAgent[] = [];
afterEach(async () => {
  for (const x of running.splice(0)) await x.stop();
});

/** Fixed TLS material: `issued` (or no certificate) and trust in `caPem`. */
function material(issued: Issued | null, caPem: string | string[]): MeshTls & { swap(next: Issued): void } {
  let current = issued;
  const listeners = new Set<() => void>();
  const pems = () => ({ ...(current ? { cert: current.cert, key: current.key } : {}), ca: caPem });
  return {
    serverOptions: pems,
    clientOptions: pems,
    onChange: (l) => (listeners.add(l), () => listeners.delete(l)),
    swap(next) {
      current = next;
      for (const l of listeners) l();
    },
  };
}

async function agent(options: Partial<MeshAgentOptions> & { member: string }): Promise<MeshAgent> {
  const x = new MeshAgent({ clusterName: 'tls', region: 'us-east', keys: [KEY], bindHost: '127.0.0.1', bindPort: 0, config: FAST, ...options });
  running.push(x);
  await x.start();
  return x;
}

/** Resolves with the details of the first `n` drops of `reason` seen by `x` from now on; rejects after WAIT_MS. */
function drops(x: MeshAgent, reason: string, n: number): Promise<string[]> {
  const details: string[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => (stop(), reject(new Error(`${details.length} of ${n} ${reason} drops within ${WAIT_MS} ms`))), WAIT_MS);
    const stop = x.observe({
      drop: (e) => {
        if (e.reason !== reason) return;
        details.push(e.detail);
        if (details.length >= n) {
          clearTimeout(timer);
          stop();
          resolve(details);
        }
      },
    });
  });
}

describe('push-pull over mutual TLS', () => {
  it('two members with certificates of the mesh CA join over TLS 1.3 and converge', async () => {
    const x = await agent({ member: 'a', tls: material(a, ca.cert) });
    x.setState('region/us-east', { written: 'before b joined' });
    const y = await agent({ member: 'b', region: 'eu-west', tls: material(b, ca.cert), seeds: [x.self().address] });
    // The join is a push-pull: b learns a's state from it, over TLS.
    await eventually(() => y.stateOf('region/us-east')?.value !== undefined && x.member('b')?.state === 'alive' && y.member('a')?.state === 'alive', WAIT_MS, 'a and b joined');
    expect(y.stateOf('region/us-east')!.value).toEqual({ written: 'before b joined' });
    y.setState('region/eu-west', { written: 'by b' });
    await eventually(() => x.stateOf('region/eu-west') !== undefined, WAIT_MS, 'b’s state at a');
    // Anti-entropy rounds run too (one per second each), none refused.
    await eventually(() => x.stats().pushPulls >= 2 && y.stats().pushPulls >= 2, WAIT_MS, 'periodic push-pulls');
    for (const m of [x, y]) {
      expect(m.stats().pushPullsFailed).toBe(0);
      expect(m.stats().drops['tls-refused']).toBe(0);
    }
  });

  const refused: [string, () => MeshTls | undefined, RegExp][] = [
    ['without a certificate (TLS, CA only)', () => material(null, ca.cert), /no client certificate/],
    ['with a certificate from another CA', () => material(foreign, [otherCa.cert, ca.cert]), /client certificate refused: (UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT|SELF_SIGNED|DEPTH_ZERO)/],
    ['with an expired certificate', () => material(expired, ca.cert), /client certificate refused: CERT_HAS_EXPIRED/],
    ['speaking plaintext TCP', () => undefined, /wrong version number|packet length|http request/i],
  ];
  it.each(refused)('a member %s cannot sync state with a TLS member: refused, counted, nothing merged', async (_name, tls, detail) => {
    const x = await agent({ member: 'a', tls: material(a, ca.cert) });
    x.setState('secret/state', { only: 'for members' });
    const refusals = drops(x, 'tls-refused', 2);
    const tlsOption = tls();
    const intruder = await agent({ member: 'intruder', ...(tlsOption ? { tls: tlsOption } : {}), seeds: [x.self().address] });
    intruder.setState('forged/state', { by: 'intruder' });
    // Two refused handshakes: the join and at least one retry (joinRetryMs 100 ms, doubling to 400 ms).
    const details = await refusals;
    expect(details.join(' | ')).toMatch(detail);
    expect(x.stats().drops['tls-refused']).toBeGreaterThanOrEqual(2);
    // Nothing crossed either way: no member learned the other, no state was merged.
    expect(x.member('intruder')).toBeUndefined();
    expect(x.stateOf('forged/state')).toBeUndefined();
    expect(intruder.member('a')).toBeUndefined();
    expect(intruder.stateOf('secret/state')).toBeUndefined();
    expect(intruder.stats().pushPulls).toBeGreaterThanOrEqual(1);
    expect(intruder.stats().pushPullsFailed).toBe(intruder.stats().pushPulls);
  });

  it('a dialer that does not trust the listener\'s CA sends nothing: it refuses the listener first', async () => {
    const x = await agent({ member: 'a', tls: material(a, ca.cert) });
    x.setState('secret/state', 1);
    // b holds a good certificate but trusts only another CA: a's certificate fails b's check.
    const y = await agent({ member: 'b', tls: material(b, otherCa.cert), seeds: [x.self().address] });
    await eventually(() => y.stats().pushPulls >= 2, WAIT_MS, 'two failed joins');
    expect(y.stats().pushPullsFailed).toBe(y.stats().pushPulls);
    // a answered no push-pull (it knows no peer, so it ran none either): no frame reached it.
    expect(x.stats().pushPulls).toBe(0);
    expect(y.stateOf('secret/state')).toBeUndefined();
    expect(x.member('b')).toBeUndefined();
  });

  it('verifyPeer refuses a verified certificate it does not want, counted with its reason', async () => {
    const only = { ...material(a, ca.cert), verifyPeer: (cert: { subject: { CN?: string | string[] } }) => (cert.subject.CN === 'mesh-a' ? null : `${String(cert.subject.CN)} is not on the member list`) };
    const x = await agent({ member: 'a', tls: only });
    const refusal = drops(x, 'tls-refused', 1);
    const y = await agent({ member: 'b', tls: material(b, ca.cert), seeds: [x.self().address] });
    expect((await refusal)[0]).toMatch(/mesh-b is not on the member list/);
    expect(x.member('b')).toBeUndefined();
    expect(y.member('a')).toBeUndefined();
  });

  it('refuses a TLS 1.2 client: the floor is 1.3', async () => {
    const x = await agent({ member: 'a', tls: material(a, ca.cert) });
    const refusal = drops(x, 'tls-refused', 1);
    const port = Number(x.self().address.split(':')[1]);
    const err = await new Promise<Error | null>((resolve) => {
      const s = tlsConnect({ host: '127.0.0.1', port, cert: b.cert, key: b.key, ca: ca.cert, maxVersion: 'TLSv1.2', checkServerIdentity: () => undefined });
      s.once('secureConnect', () => (s.destroy(), resolve(null)));
      s.once('error', (e) => resolve(e));
    });
    expect(err?.message).toMatch(/protocol version|alert/i);
    expect((await refusal)[0]).toMatch(/unsupported protocol|version/i);
  });

  it('a reloaded listener certificate takes effect for new handshakes; syncing goes on', async () => {
    const tlsA = material(a, ca.cert);
    const x = await agent({ member: 'a', tls: tlsA });
    const y = await agent({ member: 'b', tls: material(b, ca.cert), seeds: [x.self().address] });
    await eventually(() => x.member('b')?.state === 'alive' && y.member('a')?.state === 'alive', WAIT_MS, 'joined');
    tlsA.swap(a2);
    // Which certificate a presents now: the renewed one.
    const port = Number(x.self().address.split(':')[1]);
    const cn = await new Promise<string>((resolve, reject) => {
      const s = tlsConnect({ host: '127.0.0.1', port, cert: b.cert, key: b.key, ca: ca.cert, checkServerIdentity: () => undefined });
      s.once('secureConnect', () => {
        resolve(String(s.getPeerCertificate().subject.CN));
        s.destroy();
      });
      s.once('error', reject);
    });
    expect(cn).toBe('mesh-a-renewed');
    const before = y.stats().pushPulls;
    x.setState('after/reload', 1);
    await eventually(() => y.stats().pushPulls >= before + 2 && y.stateOf('after/reload') !== undefined, WAIT_MS, 'push-pulls after the reload');
    expect(y.stats().pushPullsFailed).toBe(0);
  });
});
