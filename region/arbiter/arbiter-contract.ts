/**
 * The contract every Arbiter implementation must keep, as one vitest suite run against each
 * (memory, embedded process, etcd). Time-dependent cases go through the harness's `elapse`, which
 * advances a fake clock or lets real time pass, so the same cases run on both.
 */
import { describe, expect, it } from 'vitest';
import { isEdgeqError } from '../../src/core/index.ts';
import type { Arbiter, TxnOp, WatchEvent } from './arbiter.ts';
import { TXN_OPS_MAX } from './validation.ts';

/** What the contract needs from one implementation. */
export interface ArbiterContractHarness {
  /** An arbiter to test; the suite isolates cases by key prefix, so it may be shared. */
  arbiter(): Arbiter;
  /** Lets `ms` of arbiter time pass: advances a fake clock, or waits on a real one. */
  elapse(ms: number): Promise<void>;
  /** TTL of the leases the suite grants. */
  leaseTtlMs: number;
  /** How late after its TTL a lease may still be deleted (etcd checks expiry every 500 ms). */
  expirySlackMs: number;
}

let caseSeq = 0;

/** A key prefix no other case (or earlier run against a shared store) uses. */
function freshPrefix(): string {
  return `contract/${process.pid}-${Date.now().toString(36)}-${caseSeq++}/`;
}

/** Collects a watch's events and lets a test await a count of them with a deadline. */
class EventLog {
  readonly events: WatchEvent[] = [];
  private waiters: { n: number; resolve: () => void }[] = [];

  readonly push = (e: WatchEvent): void => {
    this.events.push(e);
    this.waiters = this.waiters.filter((w) => (this.events.length >= w.n ? (w.resolve(), false) : true));
  };

  /** Resolves once `n` events arrived; fails the test after `timeoutMs`. */
  async waitFor(n: number, timeoutMs: number): Promise<WatchEvent[]> {
    if (this.events.length < n) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => this.waiters.push({ n, resolve })),
        new Promise<void>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`expected ${n} watch events within ${timeoutMs} ms, got ${this.events.length}: ${describeEvents(this.events)}`)), timeoutMs);
        }),
      ]).finally(() => clearTimeout(timer));
    }
    return this.events.slice(0, n);
  }
}

function describeEvents(events: WatchEvent[]): string {
  return events.map((e) => `${e.type} ${e.key}@${e.modRevision}`).join(', ');
}

async function expectCode(p: Promise<unknown>, code: 'INVALID_ARGUMENT' | 'LEASE_EXPIRED' | 'ARBITER_UNAVAILABLE'): Promise<void> {
  const err = await p.then(
    () => new Error('expected a rejection'),
    (e: unknown) => e,
  );
  expect(isEdgeqError(err) ? err.code : err).toBe(code);
}

/** Defines the contract suite for one implementation. */
export function defineArbiterContract(name: string, harness: () => ArbiterContractHarness): void {
  describe(`Arbiter contract: ${name}`, () => {
    const v = (s: string): Buffer => Buffer.from(s);
    /** Deadline for events that should arrive promptly. */
    const promptMs = 5_000;

    it('puts and gets keys with growing revisions', async () => {
      const a = harness().arbiter();
      const p = freshPrefix();
      expect(await a.get(`${p}x`)).toBeNull();
      const r1 = await a.put(`${p}x`, v('one'));
      const kv1 = await a.get(`${p}x`);
      expect(kv1).toMatchObject({ key: `${p}x`, createRevision: r1, modRevision: r1, leaseId: '0' });
      expect(kv1!.value.toString()).toBe('one');
      const r2 = await a.put(`${p}x`, v('two'));
      expect(r2).toBeGreaterThan(r1);
      const kv2 = await a.get(`${p}x`);
      expect(kv2).toMatchObject({ createRevision: r1, modRevision: r2 });
      expect(kv2!.value.toString()).toBe('two');
      const r3 = await a.put(`${p}y`, v(''));
      expect(r3).toBeGreaterThan(r2);
      expect((await a.get(`${p}y`))!.value.length).toBe(0);
    });

    it('lists a prefix sorted by key and nothing outside it', async () => {
      const a = harness().arbiter();
      const p = freshPrefix();
      for (const k of ['b', 'a/2', 'c', 'a/1', 'a']) await a.put(`${p}${k}`, v(k));
      await a.put(`${p.slice(0, -1)}-other`, v('outside'));
      const all = await a.getPrefix(p);
      expect(all.map((kv) => kv.key.slice(p.length))).toEqual(['a', 'a/1', 'a/2', 'b', 'c']);
      expect(all.map((kv) => kv.value.toString())).toEqual(['a', 'a/1', 'a/2', 'b', 'c']);
      expect((await a.getPrefix(`${p}a/`)).map((kv) => kv.key.slice(p.length))).toEqual(['a/1', 'a/2']);
      expect(await a.getPrefix(`${p}zz`)).toEqual([]);
    });

    it('creates only if absent when expectedModRevision is 0', async () => {
      const a = harness().arbiter();
      const p = freshPrefix();
      const first = await a.compareAndSet(`${p}k`, v('first'), { expectedModRevision: 0 });
      expect(first.ok).toBe(true);
      expect(first.current).toBeNull();
      expect((await a.get(`${p}k`))!.modRevision).toBe(first.revision);
      const second = await a.compareAndSet(`${p}k`, v('second'), { expectedModRevision: 0 });
      expect(second.ok).toBe(false);
      expect(second.revision).toBeGreaterThanOrEqual(first.revision);
      expect(second.current).toMatchObject({ key: `${p}k`, modRevision: first.revision });
      expect(second.current!.value.toString()).toBe('first');
    });

    it('writes only on the expected modRevision', async () => {
      const a = harness().arbiter();
      const p = freshPrefix();
      const r1 = await a.put(`${p}k`, v('1'));
      const ok = await a.compareAndSet(`${p}k`, v('2'), { expectedModRevision: r1 });
      expect(ok.ok).toBe(true);
      expect(ok.revision).toBeGreaterThan(r1);
      const stale = await a.compareAndSet(`${p}k`, v('3'), { expectedModRevision: r1 });
      expect(stale.ok).toBe(false);
      expect(stale.current).toMatchObject({ modRevision: ok.revision, createRevision: r1 });
      expect(stale.current!.value.toString()).toBe('2');
      const missing = await a.compareAndSet(`${p}nope`, v('x'), { expectedModRevision: r1 });
      expect(missing).toMatchObject({ ok: false, current: null });
      expect(await a.get(`${p}nope`)).toBeNull();
    });

    it('deletes conditionally and unconditionally', async () => {
      const a = harness().arbiter();
      const p = freshPrefix();
      const r1 = await a.put(`${p}k`, v('1'));
      const r2 = await a.put(`${p}k`, v('2'));
      const stale = await a.delete(`${p}k`, { expectedModRevision: r1 });
      expect(stale.ok).toBe(false);
      expect(stale.current).toMatchObject({ modRevision: r2 });
      expect(await a.get(`${p}k`)).not.toBeNull();
      const done = await a.delete(`${p}k`, { expectedModRevision: r2 });
      expect(done.ok).toBe(true);
      expect(done.revision).toBeGreaterThan(r2);
      expect(await a.get(`${p}k`)).toBeNull();
      await a.put(`${p}j`, v('x'));
      expect((await a.delete(`${p}j`)).ok).toBe(true);
      expect(await a.get(`${p}j`)).toBeNull();
      expect((await a.delete(`${p}never`)).ok).toBe(true);
    });

    it('lets exactly one of several concurrent CAS on the same revision win', async () => {
      const a = harness().arbiter();
      const p = freshPrefix();
      const r = await a.put(`${p}leader`, v('none'));
      const results = await Promise.all([1, 2, 3, 4, 5].map((n) => a.compareAndSet(`${p}leader`, v(`c${n}`), { expectedModRevision: r })));
      const winners = results.filter((x) => x.ok);
      expect(winners).toHaveLength(1);
      const kv = await a.get(`${p}leader`);
      expect(kv!.modRevision).toBe(winners[0]!.revision);
      const created = await Promise.all([1, 2, 3].map((n) => a.compareAndSet(`${p}new`, v(`c${n}`), { expectedModRevision: 0 })));
      expect(created.filter((x) => x.ok)).toHaveLength(1);
    });

    it('deletes the keys of an expired lease, and a watch sees the deletes', async () => {
      const h = harness();
      const a = h.arbiter();
      const p = freshPrefix();
      const lease = await a.grantLease(h.leaseTtlMs);
      expect(lease.ttlMs).toBeGreaterThanOrEqual(h.leaseTtlMs);
      await a.put(`${p}member/1`, v('m1'), { leaseId: lease.id });
      await a.compareAndSet(`${p}member/2`, v('m2'), { expectedModRevision: 0, leaseId: lease.id });
      await a.put(`${p}durable`, v('stays'));
      expect((await a.get(`${p}member/1`))!.leaseId).toBe(lease.id);
      const log = new EventLog();
      const watch = await a.watchPrefix(`${p}member/`, log.push);
      await h.elapse(lease.ttlMs);
      const events = await log.waitFor(2, h.expirySlackMs + promptMs);
      expect(events.map((e) => [e.type, e.key])).toEqual([
        ['delete', `${p}member/1`],
        ['delete', `${p}member/2`],
      ]);
      expect(await a.getPrefix(`${p}member/`)).toEqual([]);
      expect((await a.get(`${p}durable`))!.value.toString()).toBe('stays');
      await watch.close();
    });

    it('extends a lease with keepAliveOnce', async () => {
      const h = harness();
      const a = h.arbiter();
      const p = freshPrefix();
      const lease = await a.grantLease(h.leaseTtlMs);
      await a.put(`${p}k`, v('x'), { leaseId: lease.id });
      // Renewing at 70% of the TTL twice keeps the key past 1.4 TTLs.
      await h.elapse(lease.ttlMs * 0.7);
      expect(await lease.keepAliveOnce()).toBeGreaterThanOrEqual(h.leaseTtlMs);
      await h.elapse(lease.ttlMs * 0.7);
      expect(await lease.keepAliveOnce()).toBeGreaterThanOrEqual(h.leaseTtlMs);
      expect(await a.get(`${p}k`)).not.toBeNull();
      await lease.revoke();
    });

    it('rejects keepAliveOnce on an expired lease with LEASE_EXPIRED', async () => {
      const h = harness();
      const a = h.arbiter();
      const p = freshPrefix();
      const lease = await a.grantLease(h.leaseTtlMs);
      await a.put(`${p}k`, v('x'), { leaseId: lease.id });
      const log = new EventLog();
      const watch = await a.watchPrefix(p, log.push);
      await h.elapse(lease.ttlMs);
      // The delete says the arbiter has expired the lease; no sleep needed past it.
      await log.waitFor(1, h.expirySlackMs + promptMs);
      await expectCode(lease.keepAliveOnce(), 'LEASE_EXPIRED');
      await expectCode(a.put(`${p}k2`, v('y'), { leaseId: lease.id }), 'LEASE_EXPIRED');
      await watch.close();
    });

    it('revokes a lease: its keys go at once and it can no longer be used', async () => {
      const h = harness();
      const a = h.arbiter();
      const p = freshPrefix();
      const lease = await a.grantLease(h.leaseTtlMs * 10);
      await a.put(`${p}a`, v('1'), { leaseId: lease.id });
      await a.put(`${p}b`, v('2'), { leaseId: lease.id });
      await lease.revoke();
      expect(await a.getPrefix(p)).toEqual([]);
      await expectCode(lease.keepAliveOnce(), 'LEASE_EXPIRED');
      await expectCode(a.put(`${p}c`, v('3'), { leaseId: lease.id }), 'LEASE_EXPIRED');
    });

    it('replays events after a revision in order, then follows live changes', async () => {
      const a = harness().arbiter();
      const p = freshPrefix();
      const r0 = await a.put(`${p}a`, v('a0'));
      const r1 = await a.put(`${p}b`, v('b1'));
      const r2 = await a.put(`${p}a`, v('a2'));
      await a.put(`${p.slice(0, -1)}-outside`, v('no'));
      const d = await a.delete(`${p}b`);
      const log = new EventLog();
      const watch = await a.watchPrefix(p, log.push, { fromRevision: r0 });
      const replayed = await log.waitFor(3, promptMs);
      expect(replayed.map((e) => [e.type, e.key.slice(p.length), e.value.toString(), e.modRevision])).toEqual([
        ['put', 'b', 'b1', r1],
        ['put', 'a', 'a2', r2],
        ['delete', 'b', '', d.revision],
      ]);
      const r4 = await a.put(`${p}c`, v('c4'));
      const cas = await a.compareAndSet(`${p}a`, v('a5'), { expectedModRevision: r2 });
      const all = await log.waitFor(5, promptMs);
      expect(all.slice(3).map((e) => [e.type, e.key.slice(p.length), e.modRevision])).toEqual([
        ['put', 'c', r4],
        ['put', 'a', cas.revision],
      ]);
      await watch.close();
      // A closed watch gets nothing more; a marker watch proves the later write was delivered.
      const marker = new EventLog();
      const markerWatch = await a.watchPrefix(p, marker.push);
      await a.put(`${p}d`, v('d'));
      await marker.waitFor(1, promptMs);
      expect(log.events).toHaveLength(5);
      await markerWatch.close();
    });

    it('watches from now when no revision is given', async () => {
      const a = harness().arbiter();
      const p = freshPrefix();
      await a.put(`${p}old`, v('old'));
      const log = new EventLog();
      const watch = await a.watchPrefix(p, log.push);
      const r = await a.put(`${p}new`, v('new'));
      const [e] = await log.waitFor(1, promptMs);
      expect(e).toMatchObject({ type: 'put', key: `${p}new`, modRevision: r });
      expect(e!.value.toString()).toBe('new');
      await watch.close();
    });

    it('applies a transaction all at once, at one revision that watches see in op order', async () => {
      const a = harness().arbiter();
      const p = freshPrefix();
      const r0 = await a.put(`${p}t/x`, v('x0'));
      await a.put(`${p}parts/x/0`, v('old0'));
      await a.put(`${p}parts/x/1`, v('old1'));
      await a.put(`${p}parts/xy`, v('outside the prefix'));
      const log = new EventLog();
      const watch = await a.watchPrefix(p, log.push);
      const r = await a.txn({
        compares: [
          { key: `${p}t/x`, target: 'mod', revision: r0 },
          { key: `${p}t/x`, target: 'create', revision: r0 },
          { key: `${p}t/missing`, target: 'mod', revision: 0 },
        ],
        ops: [
          { type: 'put', key: `${p}t/x`, value: v('x1') },
          { type: 'deletePrefix', prefix: `${p}parts/x/` },
          { type: 'put', key: `${p}t/y`, value: v('y1') },
          { type: 'delete', key: `${p}never` },
        ],
      });
      expect(r).toMatchObject({ ok: true, current: [] });
      expect(r.revision).toBeGreaterThan(r0);
      const events = await log.waitFor(4, promptMs);
      expect(events.map((e) => [e.type, e.key.slice(p.length), e.modRevision])).toEqual([
        ['put', 't/x', r.revision],
        ['delete', 'parts/x/0', r.revision],
        ['delete', 'parts/x/1', r.revision],
        ['put', 't/y', r.revision],
      ]);
      expect(await a.get(`${p}t/x`)).toMatchObject({ createRevision: r0, modRevision: r.revision });
      expect((await a.getPrefix(`${p}parts/`)).map((kv) => kv.key.slice(p.length))).toEqual(['parts/xy']);
      await watch.close();
    });

    it('applies nothing when any compare fails, and answers the compared keys as they are', async () => {
      const a = harness().arbiter();
      const p = freshPrefix();
      const r1 = await a.put(`${p}a`, v('a'));
      const r2 = await a.put(`${p}b`, v('b'));
      const r = await a.txn({
        compares: [
          { key: `${p}a`, target: 'mod', revision: r1 },
          { key: `${p}b`, target: 'create', revision: r1 },
          { key: `${p}c`, target: 'create', revision: 0 },
        ],
        ops: [
          { type: 'put', key: `${p}c`, value: v('c') },
          { type: 'delete', key: `${p}a` },
        ],
      });
      expect(r.ok).toBe(false);
      expect(r.revision).toBeGreaterThanOrEqual(r2);
      expect(r.current.map((kv) => kv && [kv.key.slice(p.length), kv.modRevision])).toEqual([['a', r1], ['b', r2], null]);
      expect(await a.get(`${p}c`)).toBeNull();
      expect(await a.get(`${p}a`)).not.toBeNull();
    });

    it('lets exactly one of several concurrent transactions creating the same key win', async () => {
      const a = harness().arbiter();
      const p = freshPrefix();
      const results = await Promise.all(
        [1, 2, 3, 4, 5].map((n) =>
          a.txn({ compares: [{ key: `${p}topic`, target: 'mod', revision: 0 }], ops: [{ type: 'put', key: `${p}topic`, value: v(`c${n}`) }, { type: 'deletePrefix', prefix: `${p}parts/` }] }),
        ),
      );
      const winners = results.filter((r) => r.ok);
      expect(winners).toHaveLength(1);
      expect((await a.get(`${p}topic`))!.modRevision).toBe(winners[0]!.revision);
      for (const r of results.filter((x) => !x.ok)) expect(r.current[0]!.modRevision).toBe(winners[0]!.revision);
    });

    it('fails a transaction whose put names an expired lease with LEASE_EXPIRED, writing nothing', async () => {
      const h = harness();
      const a = h.arbiter();
      const p = freshPrefix();
      const lease = await a.grantLease(h.leaseTtlMs * 10);
      await lease.revoke();
      await expectCode(a.txn({ compares: [], ops: [{ type: 'put', key: `${p}plain`, value: v('x') }, { type: 'put', key: `${p}bound`, value: v('y'), leaseId: lease.id }] }), 'LEASE_EXPIRED');
      expect(await a.getPrefix(p)).toEqual([]);
    });

    it(`refuses transactions over ${TXN_OPS_MAX} ops or compares, or writing a key twice, with INVALID_ARGUMENT, writing nothing`, async () => {
      const a = harness().arbiter();
      const p = freshPrefix();
      const puts = (n: number): TxnOp[] => Array.from({ length: n }, (_, i) => ({ type: 'put', key: `${p}k${i}`, value: v('x') }));
      await expectCode(a.txn({ compares: [], ops: puts(TXN_OPS_MAX + 1) }), 'INVALID_ARGUMENT');
      const compares = Array.from({ length: TXN_OPS_MAX + 1 }, (_, i) => ({ key: `${p}c${i}`, target: 'mod' as const, revision: 0 }));
      await expectCode(a.txn({ compares, ops: puts(1) }), 'INVALID_ARGUMENT');
      await expectCode(a.txn({ compares: [], ops: [...puts(1), ...puts(1)] }), 'INVALID_ARGUMENT');
      await expectCode(a.txn({ compares: [], ops: [...puts(1), { type: 'deletePrefix', prefix: p }] }), 'INVALID_ARGUMENT');
      await expectCode(a.txn({ compares: [], ops: [{ type: 'deletePrefix', prefix: '' }] }), 'INVALID_ARGUMENT');
      await expectCode(a.txn({ compares: [{ key: `${p}a`, target: 'mod', revision: -1 }], ops: [] }), 'INVALID_ARGUMENT');
      expect(await a.getPrefix(p)).toEqual([]);
      // The limit itself is accepted everywhere (etcd's default --max-txn-ops).
      const full = await a.txn({ compares: compares.slice(0, TXN_OPS_MAX), ops: puts(TXN_OPS_MAX) });
      expect(full.ok).toBe(true);
      expect(await a.getPrefix(p)).toHaveLength(TXN_OPS_MAX);
    });

    it('rejects bad input with INVALID_ARGUMENT', async () => {
      const a = harness().arbiter();
      await expectCode(a.get(''), 'INVALID_ARGUMENT');
      await expectCode(a.put('', v('x')), 'INVALID_ARGUMENT');
      await expectCode(a.compareAndSet('', v('x'), { expectedModRevision: 0 }), 'INVALID_ARGUMENT');
      await expectCode(a.compareAndSet('k', v('x'), { expectedModRevision: -1 }), 'INVALID_ARGUMENT');
      await expectCode(a.delete(''), 'INVALID_ARGUMENT');
      await expectCode(a.grantLease(0), 'INVALID_ARGUMENT');
      await expectCode(a.grantLease(-1000), 'INVALID_ARGUMENT');
      await expectCode(a.grantLease(Number.NaN), 'INVALID_ARGUMENT');
      await expectCode(a.watchPrefix('p/', () => undefined, { fromRevision: -1 }), 'INVALID_ARGUMENT');
    });
  });
}
