// Proves, with real processes (an embedded arbiter and three brokers), that a broker whose arbiter
// watch breaks for good is not left blind: its link to the arbiter is cut (a TCP proxy that
// forwards nothing) while more events than the arbiter keeps are written, so when the link comes
// back the revision its watch would resume from is compacted away and the watch fails. The broker
// must read the cell again: it then follows a leader elected after the break, holds a topic
// created after it, and is back in the ISR.
import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedArbiter, HISTORY_EVENTS_MAX_DEFAULT } from '../../region/arbiter/index.ts';
import { createClient, parseAddress } from '../../src/client/index.ts';
import { ProcessCell } from '../helpers/cell-process.ts';
import { Probe, stableLeader, waitFor } from '../helpers/partition-probe.ts';
import { TcpProxy } from '../helpers/tcp-proxy.ts';
import { cleanupTempDirs } from '../helpers/tmp.ts';

afterAll(cleanupTempDirs);

const TOPIC = 'w';
/** Writes past the arbiter's kept history, so a watch from before them cannot resume. */
const FILLER_WRITES = HISTORY_EVENTS_MAX_DEFAULT + 100;
/** Filler writes in flight at once (the client allows 1024 pending requests). */
const FILLER_CONCURRENCY = 500;
/** Time for the blind broker to catch up and rejoin, on a loaded machine: lease TTL, election, a lag window and a fetch. */
const REJOIN_MS_MAX = 30_000;

describe('a broken arbiter watch (finding 10), real processes', () => {
  it('makes the broker read the cell again: it follows a later leader, holds a later topic and rejoins the ISR', async () => {
    const proxies = new Map<number, TcpProxy>();
    for (const id of [1, 2, 3]) proxies.set(id, await TcpProxy.start());
    const cell = new ProcessCell({
      leaseTtlMs: 2000,
      arbiterEndpointFor: (id, endpoint) => {
        const proxy = proxies.get(id)!;
        proxy.setTarget(parseAddress(endpoint));
        return proxy.endpoint;
      },
    });
    let client: ReturnType<typeof createClient> | null = null;
    let filler: EmbeddedArbiter | null = null;
    const probes = new Map<number, Probe>();
    try {
      await cell.start();
      client = createClient({ brokers: cell.addresses(), metadataMaxAgeMs: 500, retry: { retriesMax: 50 } as never });
      await client.admin().createTopics([{ name: TOPIC, partitions: 1, replicationFactor: 3, config: { 'min.insync.replicas': '2' } }]);
      for (const id of [1, 2, 3]) probes.set(id, new Probe(cell.portOf(id), TOPIC));
      const before = await stableLeader(probes.values(), 3);
      const blind = [1, 2, 3].find((id) => id !== before.leaderId)!;
      const other = [1, 2, 3].find((id) => id !== before.leaderId && id !== blind)!;
      expect((await probes.get(before.leaderId)!.produce('before', 'all')).ok).toBe(true);

      proxies.get(blind)!.blackhole();
      filler = new EmbeddedArbiter({ port: cell.arbiter!.port });
      for (let done = 0; done < FILLER_WRITES; done += FILLER_CONCURRENCY) {
        await Promise.all(Array.from({ length: Math.min(FILLER_CONCURRENCY, FILLER_WRITES - done) }, (_, i) => filler!.put(`/elsewhere/${i % 10}`, Buffer.from(String(done + i)))));
      }
      // The link comes back as new connections: the watch's resume finds its revision compacted.
      proxies.get(blind)!.restore({ reset: true });

      // Changes the blind broker can only learn by reading the cell again.
      await cell.kill(before.leaderId);
      await client.admin().createTopics([{ name: 'after', partitions: 1, replicationFactor: 3 }]);

      const view = await waitFor(`broker ${blind} to follow the leader elected after its watch broke, back in the ISR`, REJOIN_MS_MAX, async () => {
        const [seen, truth] = await Promise.all([probes.get(blind)!.partition(1000), probes.get(other)!.partition(1000)]);
        if (!seen || !truth || truth.leaderId === before.leaderId || truth.leaderId < 0) return undefined;
        const agree = seen.leaderId === truth.leaderId && seen.leaderEpoch === truth.leaderEpoch;
        return agree && truth.isr.includes(blind) ? truth : undefined;
      }, 200);
      expect(view.leaderEpoch).toBeGreaterThan(before.leaderEpoch);
      const after = await waitFor(`broker ${blind} to hold the topic created after its watch broke`, REJOIN_MS_MAX, () => new Probe(cell.portOf(blind), 'after').partition(1000), 200);
      expect(after.leaderId).toBeGreaterThanOrEqual(0);
    } finally {
      for (const p of probes.values()) p.drop();
      for (const p of proxies.values()) p.restore();
      await filler?.close();
      await client?.close().catch(() => undefined);
      await cell.close();
      for (const p of proxies.values()) await p.close();
    }
  }, 120_000);
});
