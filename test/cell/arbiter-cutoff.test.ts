// Proves, with real processes (an embedded arbiter and three brokers), that a partition leader cut
// off from its arbiter fences itself before anyone else can lead, under continuous acks=all
// produce from the idempotent producer:
// - the old leader acknowledges writes sent straight to it at most until its lease could have
//   expired, then refuses them with a typed error (ARBITER_UNAVAILABLE or NOT_LEADER), and its last
//   acknowledgement comes before the new leader's first;
// - another in-sync broker takes over with a higher epoch;
// - once the old leader reaches the arbiter again (or is resumed after SIGSTOP) it refuses writes,
//   drops any divergent tail and rejoins the ISR as a follower;
// - every acknowledged record is readable exactly once, and after the cell stops the replicas
//   agree batch by batch.
// The cut is made by per-broker TCP proxies between the brokers and the arbiter (blackhole: no
// byte forwarded either way, nothing closed) or by freezing the leader process with SIGSTOP.
import { afterAll, describe, expect, it } from 'vitest';
import { createClient, parseAddress, type Producer } from '../../src/client/index.ts';
import { ProcessCell } from '../helpers/cell-process.ts';
import { checkAcknowledged, checkReplicasAgree, ContinuousProducer, partitionMarks, type PartitionMarks, Probe, readAll, sleep, stableLeader, tracer, waitFor, type Outcome, type PartitionView } from '../helpers/partition-probe.ts';
import { randInt, seededRandom, testSeed } from '../helpers/random.ts';
import { TcpProxy } from '../helpers/tcp-proxy.ts';
import { cleanupTempDirs } from '../helpers/tmp.ts';

afterAll(cleanupTempDirs);

const TOPIC = 'k';
const LEASE_TTL_MS = 2000;
const BLACKHOLE_ROUNDS = 3;
const SIGSTOP_ROUNDS = 2;
/** Errors with which a fenced (or demoted) old leader may refuse a write. */
const FENCED = /^(ARBITER_UNAVAILABLE|NOT_LEADER)$/;
const { trace, brokers: traceBrokers } = tracer('arbiter-cutoff');

const codeOf = (o: Outcome): string => (o.ok ? 'ok' : o.code);
const isFenced = (o: Outcome): boolean => !o.ok && FENCED.test(o.code);

/** Creates the topic, a raw probe per broker and the patient main stream of acks=all writes. */
async function startProducing(cell: ProcessCell, client: ReturnType<typeof createClient>): Promise<{ probes: Map<number, Probe>; producer: Producer; producing: ContinuousProducer }> {
  await client.admin().createTopics([{ name: TOPIC, partitions: 1, replicationFactor: 3, config: { 'min.insync.replicas': '2' } }]);
  const probes = new Map([1, 2, 3].map((id) => [id, new Probe(cell.portOf(id), TOPIC)]));
  const producer = client.producer({ acks: 'all', lingerMs: 2, retriesMax: 1000, deliveryTimeoutMs: 60_000, requestTimeoutMs: 3000 });
  const producing = new ContinuousProducer(producer, TOPIC, { onFailure: (f) => trace(`send of ${f.value} failed: ${f.code}`) });
  return { probes, producer, producing };
}

/** Polls the given brokers until one reports a leader other than `old` with an epoch above `epoch`. */
function successor(probes: Map<number, Probe>, ids: number[], old: number, epoch: number): Promise<PartitionView> {
  return waitFor(
    `a successor of broker ${old}`,
    15_000,
    async () => {
      for (const id of ids) {
        const v = await probes.get(id)!.partition(1000);
        if (v && v.leaderId !== old && v.leaderId >= 0 && v.leaderEpoch > epoch) return v;
      }
      return undefined;
    },
    20,
  );
}

/** Waits until every broker agrees on `leader` in `epoch` with the full ISR: the old leader is back as a follower. */
function rejoined(probes: Map<number, Probe>, leader: PartitionView, old: number): Promise<true> {
  return waitFor(
    `broker ${old} back in the ISR of broker ${leader.leaderId} (epoch ${leader.leaderEpoch})`,
    30_000,
    async () => {
      const views = await Promise.all([...probes.values()].map((p) => p.partition(1000)));
      return views.every((v) => v && v.leaderId === leader.leaderId && v.leaderEpoch === leader.leaderEpoch && v.isr.length === 3) ? true : undefined;
    },
    100,
  );
}

/** The first write the new leader acknowledges (raw, acks=all). */
function firstAck(probe: Probe, name: () => string, rawAcked: Map<string, number>): Promise<Outcome> {
  return waitFor(
    'a write acknowledged by the new leader',
    15_000,
    async () => {
      const value = name();
      const o = await probe.produce(value, 'all');
      if (!o.ok) return undefined;
      rawAcked.set(value, o.offset);
      return o;
    },
    20,
  );
}

describe('leader cut off from the arbiter', () => {
  it(`fences itself before a successor leads, over ${BLACKHOLE_ROUNDS} blackholes of its arbiter link`, async () => {
    const rand = seededRandom(testSeed('arbiter-cutoff'));
    const proxies = new Map<number, TcpProxy>();
    for (const id of [1, 2, 3]) proxies.set(id, await TcpProxy.start());
    const cell = new ProcessCell({
      leaseTtlMs: LEASE_TTL_MS,
      arbiterEndpointFor: (id, endpoint) => {
        const proxy = proxies.get(id)!;
        proxy.setTarget(parseAddress(endpoint));
        return proxy.endpoint;
      },
    });
    let client: ReturnType<typeof createClient> | null = null;
    let producing: ContinuousProducer | null = null;
    let probes = new Map<number, Probe>();
    let marks: PartitionMarks | undefined;
    try {
      await cell.start();
      traceBrokers(cell);
      client = createClient({ brokers: cell.addresses(), metadataMaxAgeMs: 500, retry: { retriesMax: 50 } as never });
      let producer: Producer;
      ({ probes, producer, producing } = await startProducing(cell, client));
      const rawAcked = new Map<string, number>();
      let probeSeq = 0;

      for (let round = 0; round < BLACKHOLE_ROUNDS; round++) {
        const before = await stableLeader(probes.values(), 3);
        const old = before.leaderId;
        const others = [1, 2, 3].filter((id) => id !== old);
        const oldProbe = probes.get(old)!;
        // Traffic first, for a random while.
        const countAt = producing.count;
        const warmup = randInt(rand, 20, 200);
        await waitFor(`${warmup} acknowledgements before the cut`, 20_000, () => (producing!.count >= countAt + warmup ? true : undefined), 10);
        const sanity = await oldProbe.produce(`r${round}-sanity`, 'all');
        expect(codeOf(sanity), 'a write to the leader before the cut').toBe('ok');
        if (sanity.ok) rawAcked.set(`r${round}-sanity`, sanity.offset);

        trace(`round ${round}: cutting leader ${old} (epoch ${before.leaderEpoch}) off; ${producing.count} acks`);
        const cutAt = Date.now();
        proxies.get(old)!.blackhole();

        // Straight to the old leader: successes, then typed refusals only.
        const onOld: Outcome[] = [];
        let after: PartitionView | undefined;
        let electedAt = 0;
        let newFirst: Outcome | undefined;
        const oldLoop = (async () => {
          const deadline = cutAt + 15_000;
          while (Date.now() < deadline) {
            const value = `r${round}-old${probeSeq++}`;
            const o = await oldProbe.produce(value, 'all');
            onOld.push(o);
            if (o.ok) rawAcked.set(value, o.offset);
            // Enough once it refused five times in a row after the successor took a write.
            if (newFirst && onOld.length >= 5 && onOld.slice(-5).every(isFenced)) return;
            await sleep(randInt(rand, 10, 60));
          }
        })();
        const newLoop = (async () => {
          after = await successor(probes, others, old, before.leaderEpoch);
          electedAt = Date.now();
          newFirst = await firstAck(probes.get(after.leaderId)!, () => `r${round}-new${probeSeq++}`, rawAcked);
        })();
        await Promise.all([oldLoop, newLoop]);

        // (b) a successor with a higher epoch.
        expect(after!.leaderId).not.toBe(old);
        expect(after!.leaderEpoch).toBeGreaterThan(before.leaderEpoch);
        // (a) the old leader acknowledged only while its lease could be valid, then refused with a typed error.
        const firstFenced = onOld.findIndex(isFenced);
        expect(firstFenced, `the old leader never refused: ${onOld.slice(-3).map(codeOf).join(', ')}`).toBeGreaterThanOrEqual(0);
        expect(onOld.slice(firstFenced).map(codeOf).filter((c) => !FENCED.test(c)), 'answers of the old leader after its first refusal').toEqual([]);
        // Before the fence: acknowledgements, or a write caught at the cut that could not be confirmed.
        for (const o of onOld.slice(0, firstFenced)) if (!o.ok) expect(o.sentAt - cutAt, `${o.code} before the fence`).toBeLessThan(LEASE_TTL_MS);
        const successes = onOld.filter((o) => o.ok);
        const lastOldAck = successes.length > 0 ? successes[successes.length - 1]!.at : cutAt;
        expect(lastOldAck - cutAt, 'the old leader acknowledged after its lease could have expired').toBeLessThanOrEqual(LEASE_TTL_MS);
        expect(lastOldAck, 'last ack of the old leader vs. the successor seen').toBeLessThan(electedAt);
        expect(lastOldAck, 'last ack of the old leader vs. first ack of the new one').toBeLessThan(newFirst!.at);
        // eslint-disable-next-line no-console
        console.log(
          `[arbiter-cutoff] round ${round}: leader ${old} cut off; ${successes.length} acks on it, the last at +${lastOldAck - cutAt} ms; ` +
            `first refusal +${onOld[firstFenced]!.at - cutAt} ms (${codeOf(onOld[firstFenced]!)}); broker ${after!.leaderId} leads epoch ${after!.leaderEpoch} ` +
            `at +${electedAt - cutAt} ms, first ack +${newFirst!.at - cutAt} ms`,
        );

        // (c) the link comes back: the old leader follows and returns to the ISR.
        const reset = rand() < 0.5;
        const restoredAt = Date.now();
        proxies.get(old)!.restore({ reset });
        await rejoined(probes, after!, old);
        expect(codeOf(await oldProbe.produce(`r${round}-follower`, 'all')), 'a write to the old leader once back').toBe('NOT_LEADER');
        // eslint-disable-next-line no-console
        console.log(`[arbiter-cutoff] round ${round}: link restored (${reset ? 'connections reset' : 'held bytes delivered'}); broker ${old} back in the ISR after ${Date.now() - restoredAt} ms`);
      }
      // (d) every acknowledged record, exactly once.
      await producing.stop();
      expect(producing.failures.map((f) => `${f.value}: ${f.code}`), 'sends that failed for good').toEqual([]);
      const final = await stableLeader(probes.values(), 3);
      const seen = await readAll(cell.portOf(final.leaderId), TOPIC);
      checkAcknowledged(seen, [producing.acked, rawAcked]);
      marks = await partitionMarks(cell, TOPIC);
      // eslint-disable-next-line no-console
      console.log(`[arbiter-cutoff] ${producing.count} records acknowledged to the producer and ${rawAcked.size} raw; the log holds ${seen.length}`);
      await producer.close();
    } finally {
      await producing?.stop(10_000);
      for (const p of probes.values()) p.drop();
      for (const p of proxies.values()) p.restore();
      await client?.close().catch(() => undefined);
      await cell.close();
      for (const p of proxies.values()) await p.close();
    }
    // (d) the replicas agree batch by batch.
    await checkReplicasAgree(cell, TOPIC, [1, 2, 3], marks!);
  }, 110_000);

  it(`a frozen leader (SIGSTOP) refuses writes as soon as it resumes, drops its divergent tail and rejoins, over ${SIGSTOP_ROUNDS} rounds`, async () => {
    const rand = seededRandom(testSeed('arbiter-cutoff-sigstop'));
    const cell = new ProcessCell({ leaseTtlMs: LEASE_TTL_MS });
    let client: ReturnType<typeof createClient> | null = null;
    let producing: ContinuousProducer | null = null;
    let probes = new Map<number, Probe>();
    const divergent: string[] = [];
    let marks: PartitionMarks | undefined;
    try {
      await cell.start();
      traceBrokers(cell);
      client = createClient({ brokers: cell.addresses(), metadataMaxAgeMs: 500, retry: { retriesMax: 50 } as never });
      let producer: Producer;
      ({ probes, producer, producing } = await startProducing(cell, client));
      const rawAcked = new Map<string, number>();
      let probeSeq = 0;

      for (let round = 0; round < SIGSTOP_ROUNDS; round++) {
        const before = await stableLeader(probes.values(), 3);
        const old = before.leaderId;
        const followers = [1, 2, 3].filter((id) => id !== old);
        const oldProbe = probes.get(old)!;
        const countAt = producing.count;
        const warmup = randInt(rand, 20, 200);
        await waitFor(`${warmup} acknowledgements first`, 20_000, () => (producing!.count >= countAt + warmup ? true : undefined), 10);

        // A tail only the leader holds: freeze the followers, let the fetches they had pending at
        // the leader be answered (a fetch waits at most 500 ms), then write to the leader alone.
        for (const id of followers) cell.pause(id);
        await sleep(600);
        const tail = Array.from({ length: randInt(rand, 1, 4) }, (_, i) => `r${round}-tail${i}`);
        for (const value of tail) expect(codeOf(await oldProbe.produce(value, 'leader')), `acks=1 write of ${value} to the leader`).toBe('ok');
        divergent.push(...tail);
        trace(`round ${round}: freezing leader ${old} (epoch ${before.leaderEpoch}) with a tail of ${tail.length}`);
        cell.pause(old);
        const frozenAt = Date.now();
        for (const id of followers) cell.resume(id);

        const after = await successor(probes, followers, old, before.leaderEpoch);
        const electedAt = Date.now();
        // The successor writes over the offsets of the old leader's tail.
        const newFirst = await firstAck(probes.get(after.leaderId)!, () => `r${round}-new${probeSeq++}`, rawAcked);
        expect(after.leaderId).not.toBe(old);
        expect(after.leaderEpoch).toBeGreaterThan(before.leaderEpoch);

        // A write waiting at the frozen leader, and one right after it resumes: both refused.
        const queued = oldProbe.produce(`r${round}-queued`, 'all', 10_000);
        await sleep(100);
        const resumedAt = Date.now();
        cell.resume(old);
        const q = await queued;
        const next = await oldProbe.produce(`r${round}-resumed`, 'all');
        expect([codeOf(q), codeOf(next)].filter((c) => !FENCED.test(c)), 'answers of the resumed old leader').toEqual([]);
        // eslint-disable-next-line no-console
        console.log(
          `[arbiter-cutoff] round ${round}: leader ${old} frozen with a tail of ${tail.length}; broker ${after.leaderId} leads epoch ${after.leaderEpoch} at +${electedAt - frozenAt} ms, ` +
            `first ack +${newFirst.at - frozenAt} ms; resumed at +${resumedAt - frozenAt} ms: ${codeOf(q)} after ${q.at - resumedAt} ms, then ${codeOf(next)}`,
        );

        await rejoined(probes, after, old);
        expect(codeOf(await oldProbe.produce(`r${round}-follower`, 'all')), 'a write to the old leader once back').toBe('NOT_LEADER');
        // eslint-disable-next-line no-console
        console.log(`[arbiter-cutoff] round ${round}: broker ${old} back in the ISR ${Date.now() - resumedAt} ms after SIGCONT`);
      }
      await producing.stop();
      expect(producing.failures.map((f) => `${f.value}: ${f.code}`), 'sends that failed for good').toEqual([]);
      const final = await stableLeader(probes.values(), 3);
      const seen = await readAll(cell.portOf(final.leaderId), TOPIC);
      checkAcknowledged(seen, [producing.acked, rawAcked]);
      marks = await partitionMarks(cell, TOPIC);
      const values = new Set(seen.map((s) => s.value));
      expect(divergent.filter((v) => values.has(v)), 'divergent tail records readable').toEqual([]);
      // eslint-disable-next-line no-console
      console.log(`[arbiter-cutoff] ${producing.count} records acknowledged to the producer and ${rawAcked.size} raw; the log holds ${seen.length}`);
      await producer.close();
    } finally {
      await producing?.stop(10_000);
      for (const p of probes.values()) p.drop();
      await client?.close().catch(() => undefined);
      await cell.close();
    }
    // The replicas agree batch by batch, and no replica kept a divergent tail.
    await checkReplicasAgree(cell, TOPIC, [1, 2, 3], marks!, divergent);
  }, 110_000);
});
