/** Proves that an EmbeddedArbiter survives its `edgeq arbiter` process being killed and restarted: acknowledged state is kept, lease-bound keys are dropped, watches resume with no event lost or repeated, and an unreachable or silent arbiter fails requests with ARBITER_UNAVAILABLE in bounded time. */
import { afterAll, describe, expect, it } from 'vitest';
import { createServer, type Socket } from 'node:net';
import { isEdgeqError } from '../../src/core/index.ts';
import { EmbeddedArbiter, type WatchEvent } from '../../region/arbiter/index.ts';
import { spawnArbiter } from '../helpers/arbiter-process.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

afterAll(cleanupTempDirs);

const v = (s: string): Buffer => Buffer.from(s);

/** Polls `fn` until it resolves, for at most `timeoutMs` (used while a connection is re-made). */
async function eventually<T>(fn: () => Promise<T>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

async function waitForEvents(events: WatchEvent[], n: number, timeoutMs: number): Promise<void> {
  await eventually(async () => {
    if (events.length < n) throw new Error(`have ${events.length} of ${n} events`);
  }, timeoutMs);
}

describe('EmbeddedArbiter against a restarted arbiter process', () => {
  it('keeps acknowledged state across SIGKILL and resumes watches exactly once', async () => {
    const dataDir = await tempDir('arbiter-restart-');
    const first = await spawnArbiter({ dataDir });
    const client = new EmbeddedArbiter({ port: first.port, requestTimeoutMs: 2_000, reconnectBackoffMsMax: 200 });
    const events: WatchEvent[] = [];
    const errors: Error[] = [];
    await client.watchPrefix('cell/', (e) => events.push(e), { fromRevision: 0, onError: (e) => errors.push(e) });
    const r1 = await client.put('cell/topic/a', v('a'));
    const lease = await client.grantLease(60_000);
    const r2 = await client.put('cell/brokers/1', v('b1'), { leaseId: lease.id });
    const cas = await client.compareAndSet('cell/leader', v('c1'), { expectedModRevision: 0 });
    await waitForEvents(events, 3, 5_000);

    await first.kill('SIGKILL');
    const second = await spawnArbiter({ dataDir, port: first.port });
    try {
      // The acknowledged writes survived; the lease did not, and took its key with it.
      const leader = await eventually(() => client.get('cell/leader'), 10_000);
      expect(leader).toMatchObject({ modRevision: cas.revision });
      expect(await client.get('cell/topic/a')).toMatchObject({ createRevision: r1 });
      expect(await client.get('cell/brokers/1')).toBeNull();
      await expect(lease.keepAliveOnce()).rejects.toMatchObject({ code: 'LEASE_EXPIRED' });
      const r5 = await client.put('cell/topic/b', v('b'));
      await waitForEvents(events, 5, 5_000);
      expect(events.map((e) => [e.type, e.key, e.modRevision])).toEqual([
        ['put', 'cell/topic/a', r1],
        ['put', 'cell/brokers/1', r2],
        ['put', 'cell/leader', cas.revision],
        ['delete', 'cell/brokers/1', cas.revision + 1],
        ['put', 'cell/topic/b', r5],
      ]);
      expect(errors).toEqual([]);
    } finally {
      await client.close();
      await second.kill();
    }
  });

  it('stops cleanly on SIGTERM', async () => {
    const proc = await spawnArbiter({ dataDir: await tempDir('arbiter-term-') });
    const client = new EmbeddedArbiter({ port: proc.port });
    await client.put('k', v('x'));
    expect(await proc.kill('SIGTERM')).toBe(0);
    await client.close();
  });
});

describe('EmbeddedArbiter when the arbiter cannot answer', () => {
  it('times out against a server that never answers', async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((s) => sockets.add(s));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    const client = new EmbeddedArbiter({ port, requestTimeoutMs: 300 });
    const started = Date.now();
    const err = await client.get('k').catch((e: unknown) => e);
    expect(isEdgeqError(err, 'ARBITER_UNAVAILABLE')).toBe(true);
    expect(Date.now() - started).toBeLessThan(3_000);
    await client.close();
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => silent.close(resolve));
  });

  it('fails requests while nothing listens, then reconnects when an arbiter appears on the port', async () => {
    // Find a free port, then leave it empty.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise((resolve) => probe.close(resolve));
    const client = new EmbeddedArbiter({ port, requestTimeoutMs: 300, reconnectBackoffMsMax: 100 });
    await expect(client.put('k', v('x'))).rejects.toMatchObject({ code: 'ARBITER_UNAVAILABLE' });
    const proc = await spawnArbiter({ port });
    try {
      expect(await eventually(() => client.put('k', v('x')), 10_000)).toBe(1);
      expect(client.isConnected()).toBe(true);
    } finally {
      await client.close();
      await proc.kill();
    }
  });
});
