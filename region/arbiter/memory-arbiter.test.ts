/** Proves MemoryArbiter's own behaviour beyond the shared contract: bounded history and compaction, snapshots that survive a restart, and its limits. */
import { afterAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import { FakeClock, isEdgeqError } from '../../src/core/index.ts';
import { cleanupTempDirs, tempDir } from '../../test/helpers/tmp.ts';
import type { WatchEvent } from './arbiter.ts';
import { MemoryArbiter } from './memory-arbiter.ts';
import { readSnapshotFile, writeSnapshotFile } from './snapshot.ts';
import { isCompactedError } from './validation.ts';

afterAll(cleanupTempDirs);

const v = (s: string): Buffer => Buffer.from(s);
/** Lets queued watch deliveries (microtasks) run. */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('MemoryArbiter', () => {
  it('keeps a bounded history and refuses watches older than it', async () => {
    const a = new MemoryArbiter({ clock: new FakeClock(), historyEventsMax: 3 });
    for (let i = 1; i <= 5; i++) await a.put(`k${i}`, v(String(i)));
    expect(a.compactedRevision()).toBe(2);
    const err = await a.watchPrefix('', () => undefined, { fromRevision: 1 }).catch((e: unknown) => e);
    expect(isCompactedError(err)).toBe(true);
    const seen: WatchEvent[] = [];
    const w = await a.watchPrefix('', (e) => seen.push(e), { fromRevision: 2 });
    await flush();
    expect(seen.map((e) => e.modRevision)).toEqual([3, 4, 5]);
    await w.close();
  });

  it('delivers events from a future revision only once it is reached', async () => {
    const a = new MemoryArbiter({ clock: new FakeClock() });
    const seen: number[] = [];
    await a.watchPrefix('', (e) => seen.push(e.modRevision), { fromRevision: 2 });
    for (let i = 1; i <= 3; i++) await a.put('k', v(String(i)));
    await flush();
    expect(seen).toEqual([1, 2, 3]);
  });

  it('breaks a watcher that falls too far behind instead of queueing without bound', async () => {
    const a = new MemoryArbiter({ clock: new FakeClock(), watchPendingEventsMax: 2 });
    const errors: Error[] = [];
    const seen: number[] = [];
    await a.watchPrefix('', (e) => seen.push(e.modRevision), { onError: (e) => errors.push(e) });
    // Three writes in one tick: the third finds two events still undelivered.
    void a.put('a', v('1'));
    void a.put('b', v('2'));
    void a.put('c', v('3'));
    await flush();
    expect(seen).toEqual([]);
    expect(errors).toHaveLength(1);
    expect(isEdgeqError(errors[0], 'ARBITER_UNAVAILABLE')).toBe(true);
  });

  it('bounds keys, leases and watches', async () => {
    const a = new MemoryArbiter({ clock: new FakeClock(), keysMax: 1, leasesMax: 1, watchesMax: 1 });
    await a.put('a', v('1'));
    await a.put('a', v('2'));
    await expect(a.put('b', v('1'))).rejects.toMatchObject({ code: 'ARBITER_UNAVAILABLE' });
    await a.grantLease(1000);
    await expect(a.grantLease(1000)).rejects.toMatchObject({ code: 'ARBITER_UNAVAILABLE' });
    await a.watchPrefix('', () => undefined);
    await expect(a.watchPrefix('', () => undefined)).rejects.toMatchObject({ code: 'ARBITER_UNAVAILABLE' });
    await expect(a.put('a', Buffer.alloc(1024 * 1024 + 1))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('answers ARBITER_UNAVAILABLE once closed', async () => {
    const a = new MemoryArbiter({ clock: new FakeClock() });
    await a.close();
    await expect(a.get('k')).rejects.toMatchObject({ code: 'ARBITER_UNAVAILABLE' });
  });

  it('restores keys, revisions and history from a snapshot file, dropping keys of lost leases', async () => {
    const dir = await tempDir('arbiter-snap-');
    const file = join(dir, 'arbiter.json');
    expect(await readSnapshotFile(file)).toBeNull();
    const clock = new FakeClock();
    let changes = 0;
    const a = new MemoryArbiter({ clock, onChange: () => changes++ });
    const r1 = await a.put('cell/topic/t', v('topic'));
    const lease = await a.grantLease(5000);
    await a.put('cell/brokers/1', v('b1'), { leaseId: lease.id });
    const r3 = await a.put('cell/topic/t', v('topic2'));
    expect(changes).toBe(3);
    await writeSnapshotFile(file, a.snapshot());
    await a.close();

    const b = new MemoryArbiter({ clock, snapshot: (await readSnapshotFile(file))! });
    expect(await b.get('cell/topic/t')).toMatchObject({ createRevision: r1, modRevision: r3 });
    expect(await b.get('cell/brokers/1')).toBeNull();
    expect(b.currentRevision()).toBe(r3 + 1);
    // A watcher resuming from before the restart sees the rest of history and the lease drop.
    const seen: WatchEvent[] = [];
    await b.watchPrefix('cell/', (e) => seen.push(e), { fromRevision: r1 });
    await flush();
    expect(seen.map((e) => [e.type, e.key, e.modRevision])).toEqual([
      ['put', 'cell/brokers/1', r1 + 1],
      ['put', 'cell/topic/t', r3],
      ['delete', 'cell/brokers/1', r3 + 1],
    ]);
    expect(await b.put('x', v('x'))).toBe(r3 + 2);
    await expect(b.keepAliveLease(lease.id)).rejects.toMatchObject({ code: 'LEASE_EXPIRED' });
  });

  it('refuses a malformed snapshot file', async () => {
    const dir = await tempDir('arbiter-snap-');
    const file = join(dir, 'arbiter.json');
    await writeFile(file, '{"format":1,"revision":-1}');
    await expect(readSnapshotFile(file)).rejects.toMatchObject({ code: 'STORAGE_ERROR' });
    await writeFile(file, 'not json');
    await expect(readSnapshotFile(file)).rejects.toMatchObject({ code: 'STORAGE_ERROR' });
  });
});
