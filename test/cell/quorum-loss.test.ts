// Proves, with real processes (a 3-node etcd cluster and three brokers using it as their arbiter),
// that a cell whose arbiter loses its quorum stops acknowledging writes within a bounded time (the
// leases can no longer be renewed, so leaders stop taking writes before they could expire), that
// clients see a typed, retriable error (ARBITER_UNAVAILABLE) rather than a hang or a success, and
// that once the quorum is back writes resume and every record acknowledged before, during and
// after the outage is readable exactly once.
import { afterAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.ts';
import { ProcessCell } from '../helpers/cell-process.ts';
import { ETCD_ELECTION_TIMEOUT_MS, etcdAvailable, startEtcdCluster, type EtcdCluster, type EtcdNode } from '../helpers/etcd.ts';
import { checkAcknowledged, checkReplicasAgree, ContinuousProducer, partitionMarks, type PartitionMarks, Probe, readAll, sleep, stableLeader, tracer, waitFor, type Outcome } from '../helpers/partition-probe.ts';
import { randInt, seededRandom, testSeed } from '../helpers/random.ts';
import { cleanupTempDirs } from '../helpers/tmp.ts';

let cluster: EtcdCluster | undefined;
afterAll(async () => {
  await cluster?.stop();
  await cleanupTempDirs();
});

const TOPIC = 'q';
const LEASE_TTL_MS = 2000;
/** How long the quorum stays lost. */
const OUTAGE_MS = 6000;
const { trace, brokers: traceBrokers } = tracer('quorum-loss');

const codeOf = (o: Outcome): string => (o.ok ? 'ok' : o.code);

const ETCD = etcdAvailable();
// eslint-disable-next-line no-console
if (!ETCD) console.warn('[quorum-loss] skipped: /usr/bin/etcd is not installed (scripts/test.sh or apt-get install etcd-server etcd-client)');

describe.skipIf(!ETCD)('arbiter quorum lost', () => {
  it('stops acknowledging with ARBITER_UNAVAILABLE while etcd has no quorum, and loses nothing acknowledged', async () => {
    const rand = seededRandom(testSeed('quorum-loss'));
    cluster = await startEtcdCluster(3);
    const endpoints = cluster.endpoints.map((u) => u.replace(/^https?:\/\//, ''));
    const cell = new ProcessCell({ leaseTtlMs: LEASE_TTL_MS, etcdEndpoints: endpoints });
    let client: ReturnType<typeof createClient> | null = null;
    let producing: ContinuousProducer | null = null;
    let canary: ContinuousProducer | null = null;
    const probes = new Map<number, Probe>();
    const down: EtcdNode[] = [];
    let marks: PartitionMarks | undefined;
    try {
      await cell.start();
      traceBrokers(cell);
      trace('cell started');
      client = createClient({ brokers: cell.addresses(), metadataMaxAgeMs: 500, retry: { retriesMax: 50 } as never });
      await client.admin().createTopics([{ name: TOPIC, partitions: 1, replicationFactor: 3, config: { 'min.insync.replicas': '2' } }]);
      for (const id of [1, 2, 3]) probes.set(id, new Probe(cell.portOf(id), TOPIC));
      // The main stream: idempotent, patient (it rides the outage out).
      const producer = client.producer({ acks: 'all', lingerMs: 2, retriesMax: 1000, deliveryTimeoutMs: 90_000, requestTimeoutMs: 3000 });
      producing = new ContinuousProducer(producer, TOPIC, { onFailure: (f) => trace(`send of ${f.value} failed: ${f.code}`) });
      // The canary: gives up quickly, so the outage shows as failed sends and their errors. Not
      // idempotent: an idempotent producer whose batch failed must bump its epoch (InitProducerId,
      // which needs the arbiter) before it sends anything else, so its sends would just wait.
      const canaryProducer = client.producer({ acks: 'all', idempotent: false, lingerMs: 0, retriesMax: 2, retryBackoffMs: 100, deliveryTimeoutMs: 2000, requestTimeoutMs: 1500 });
      canary = new ContinuousProducer(canaryProducer, TOPIC, { prefix: 'c', inflightMax: 5, pauseMs: 50, onFailure: (f) => trace(`canary send of ${f.value} failed: ${f.code}`) });
      const rawAcked = new Map<string, number>();
      let probeSeq = 0;

      // Before: a healthy cell.
      const before = await stableLeader(probes.values(), 3);
      const warmup = randInt(rand, 50, 300);
      await waitFor(`${warmup} acknowledgements before the outage`, 20_000, () => (producing!.count >= warmup && canary!.count > 0 ? true : undefined), 10);
      const sanity = await probes.get(before.leaderId)!.produce('before', 'all');
      expect(codeOf(sanity), 'a write to the leader before the outage').toBe('ok');
      if (sanity.ok) rawAcked.set('before', sanity.offset);

      // Two of three etcd nodes go: no quorum.
      down.push(...[0, 1, 2].sort(() => rand() - 0.5).slice(0, 2).map((i) => cluster!.nodes[i]!));
      trace(`stopping etcd ${down.map((n) => n.name).join(', ')}; leader ${before.leaderId} epoch ${before.leaderEpoch}; ${producing.count} acks`);
      const canaryFailuresBefore = canary.failures.length;
      // SIGKILL: the nodes vanish at once (a graceful stop that loses the quorum half-way can take
      // seconds, which would blur when the quorum was lost).
      const stoppingAt = Date.now();
      await Promise.all(down.map((n) => n.stop('SIGKILL')));
      const lostAt = Date.now();
      trace(`quorum lost (the stops took ${lostAt - stoppingAt} ms)`);

      // During: raw writes straight to every broker, every 50-150 ms.
      const during: { id: number; o: Outcome }[] = [];
      const until = lostAt + OUTAGE_MS;
      for (let i = 0; i < 1000 && Date.now() < until; i++) {
        for (const [id, probe] of probes) {
          const value = `during${probeSeq++}`;
          const o = await probe.produce(value, 'all', 3000);
          during.push({ id, o });
          if (o.ok) rawAcked.set(value, o.offset);
        }
        await sleep(randInt(rand, 50, 150));
      }
      const restartAt = Date.now();
      // Nothing acknowledged once the leases could have run out. Their last renewal may come a little
      // after the loss: etcd 3.4 renews leases on the leader alone (not through raft), and a leader
      // that lost its quorum only steps down at its next check-quorum tick, up to two election
      // timeouts later; until then it keeps renewing, and in etcd's own view the lease is valid.
      const fenceBy = lostAt + 2 * ETCD_ELECTION_TIMEOUT_MS + LEASE_TTL_MS;
      const lateRaw = during.filter(({ o }) => o.ok && o.sentAt >= fenceBy);
      expect(lateRaw.map(({ id, o }) => `broker ${id} at +${o.at - lostAt} ms`), 'raw writes acknowledged without a quorum').toEqual([]);
      expect(producing.acksBetween(fenceBy, restartAt), 'producer acknowledgements without a quorum').toBe(0);
      expect(canary.acksBetween(fenceBy, restartAt), 'canary acknowledgements without a quorum').toBe(0);
      // The leader, once fenced, says ARBITER_UNAVAILABLE, marked retriable; the others, NOT_LEADER.
      const fromLeader = during.filter(({ id, o }) => id === before.leaderId && o.sentAt >= fenceBy).map(({ o }) => o);
      expect(fromLeader.length).toBeGreaterThan(0);
      expect(fromLeader.filter((o) => o.ok || o.code !== 'ARBITER_UNAVAILABLE' || !o.retriable).map(codeOf), 'answers of the leader without a quorum').toEqual([]);
      const fromOthers = during.filter(({ id, o }) => id !== before.leaderId && o.sentAt >= fenceBy).map(({ o }) => o);
      expect(fromOthers.filter((o) => o.ok || !/^(ARBITER_UNAVAILABLE|NOT_LEADER)$/.test(o.code)).map(codeOf), 'answers of the other brokers without a quorum').toEqual([]);
      // The canary's sends failed for good within their delivery timeout, with typed retriable errors.
      const canaryFailed = canary.failures.slice(canaryFailuresBefore).filter((f) => f.at >= fenceBy && f.at < restartAt);
      const canaryCodes = [...new Set(canaryFailed.map((f) => f.code))];
      expect(canaryFailed.length, 'canary sends failed during the outage').toBeGreaterThan(0);
      expect(canaryFailed.filter((f) => !f.retriable).map((f) => `${f.value}: ${f.code}`), 'non-retriable failures').toEqual([]);
      expect(canaryCodes, 'canary failure codes').toContain('ARBITER_UNAVAILABLE');
      const lastAck = Math.max(lostAt, ...producing.ackTimes.filter((t) => t < restartAt), ...canary.ackTimes.filter((t) => t < restartAt));
      // eslint-disable-next-line no-console
      console.log(
        `[quorum-loss] etcd ${down.map((n) => n.name).join(', ')} down for ${restartAt - lostAt} ms: last ack at +${lastAck - lostAt} ms; ` +
          `leader ${before.leaderId} answered ${[...new Set(fromLeader.map(codeOf))].join(', ')}; ${canaryFailed.length} canary sends failed (${canaryCodes.join(', ')})`,
      );

      // After: the quorum returns and writes resume.
      await Promise.all(down.map((n) => n.restart()));
      down.length = 0;
      await Promise.all(cluster.nodes.map((n) => n.waitHealthy(30_000)));
      const healthyAt = Date.now();
      trace(`etcd healthy again after ${healthyAt - restartAt} ms`);
      const resumed = await waitFor(
        'a write acknowledged after the quorum returned',
        45_000,
        async () => {
          for (const probe of probes.values()) {
            const value = `after${probeSeq++}`;
            const o = await probe.produce(value, 'all', 3000);
            if (o.ok) {
              rawAcked.set(value, o.offset);
              return o;
            }
          }
          return undefined;
        },
        100,
      );
      const acksAt = producing.count;
      const canaryAt = canary.count;
      await waitFor('both producers acknowledged again', 45_000, () => (producing!.count >= acksAt + 100 && canary!.count >= canaryAt + 10 ? true : undefined), 20);
      const after = await stableLeader(probes.values(), 3, 45_000);
      // eslint-disable-next-line no-console
      console.log(
        `[quorum-loss] etcd healthy ${healthyAt - restartAt} ms after the restart; first raw ack ${resumed.at - healthyAt} ms later; ` +
          `leader ${after.leaderId} epoch ${after.leaderEpoch} (before: ${before.leaderId} epoch ${before.leaderEpoch}) with the full ISR ${Date.now() - healthyAt} ms after`,
      );

      await Promise.all([producing.stop(), canary.stop()]);
      expect(producing.failures.filter((f) => !f.retriable).map((f) => `${f.value}: ${f.code}`), 'non-retriable failures of the main producer').toEqual([]);
      const seen = await readAll(cell.portOf(after.leaderId), TOPIC);
      // The idempotent producer's records exactly once; the canary's and the raw ones at least once.
      checkAcknowledged(seen, [producing.acked, canary.acked, rawAcked]);
      marks = await partitionMarks(cell, TOPIC);
      // eslint-disable-next-line no-console
      console.log(
        `[quorum-loss] acknowledged: ${producing.count} to the producer (${producing.failures.length} failed), ${canary.count} to the canary ` +
          `(${canary.failures.length} failed), ${rawAcked.size} raw; the log holds ${seen.length}`,
      );
      await Promise.all([producer.close(), canaryProducer.close()]);
    } finally {
      await Promise.all([producing?.stop(10_000), canary?.stop(10_000)]);
      for (const p of probes.values()) p.drop();
      // Back to a quorum first, so the brokers can hand their leases back as they stop.
      await Promise.all(down.map((n) => n.restart().catch(() => undefined)));
      await client?.close().catch(() => undefined);
      await cell.close();
    }
    await checkReplicasAgree(cell, TOPIC, [1, 2, 3], marks!);
  }, 110_000);
});
