// Proves the checked workload and the drain with real processes: a 2-region `edgeq dev` (one broker per region), 5 s at 50 records/s per region to a global and a local topic; after the stop, every acked global record is in both regions (at its acked offset at home, with its origin elsewhere), every acked local one in its own region only, no failed record anywhere, and no reader's offsets ever went backwards.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, testSeed, waitFor } from '../../src/testing/index.ts';
import { CheckedWorkload, drain, type DrainResult, type WorkloadRecord, type WorkloadRegion } from '../../drill/workload/index.ts';
import type { CheckedTopic, PollObservation } from '../../drill/types.ts';
import { checkRun } from '../../drill/checker/index.ts';
import { DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, stopAllDevs } from '../helpers/dev-process.ts';
import { Geo } from '../helpers/geo.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

/** The run: 5 s at 50 records/s per region and topic, 4 partitions each. */
const RUN_MS = 5_000;
const RATE = 50;
const PARTITIONS = 4;
/** Bound on every acked global record reaching the other region after the stop: the exchange polls every 0.5 s; room for 2 loaded cores. */
const CONVERGE_MS = 60_000;

let regions: WorkloadRegion[];

beforeAll(async () => {
  const base = await freeRange(DEV_REGIONS_PORT_SPAN);
  const dev = startDevRegions(await tempDir('edgeq-drill-workload-'), base, { regions: '2', brokersPerRegion: 1 });
  const ready = await dev.ready;
  const geo = new Geo(ready);
  regions = ready.regions.map((r) => ({ region: r.region, gateway: r.gateway }));
  // The mesh forms and each region's entry reaches the other, so global topics are exchanged.
  await geo.waitForExchanges(60_000);
}, 180_000);

afterAll(async () => {
  await stopAllDevs();
  await cleanupTempDirs();
});

/** Offsets seen by one reader, in poll order: must only go up. Returns the places they did not. */
function backwards(polls: readonly PollObservation[]): string[] {
  const last = new Map<string, number>();
  const bad: string[] = [];
  for (const p of polls) {
    const k = `${p.region}/${p.topic}/${p.partition}`;
    let prev = last.get(k) ?? -1;
    if (p.fromOffset < prev + 1 && p.offsets.length > 0) bad.push(`${k}: poll from ${p.fromOffset} after offset ${prev}`);
    for (const o of p.offsets) {
      if (o <= prev) bad.push(`${k}: offset ${o} after ${prev}`);
      prev = Math.max(prev, o);
    }
    last.set(k, prev);
  }
  return bad;
}

/** Acked records not where they belong, and failed records found anywhere (plain code, not the checker). */
function misplaced(produced: readonly WorkloadRecord[], drained: DrainResult): string[] {
  const acked = produced.filter((r) => r.outcome.kind === 'acked');
  const problems: string[] = [];
  for (const rec of acked) {
    const off = rec.outcome.kind === 'acked' ? rec.outcome.offset : -1;
    const home = drained.regions[rec.region]![rec.topic]![rec.partition]!;
    if (home.find((x) => x.offset === off)?.value !== rec.id) problems.push(`${rec.id} not at its acked offset ${off} in ${rec.region}`);
    for (const other of regions.filter((x) => x.region !== rec.region)) {
      const there = drained.regions[other.region]![rec.topic]![rec.partition]!.filter((x) => x.value === rec.id);
      if (rec.topic === 'drill-g') {
        if (there.length !== 1) problems.push(`${rec.id} ${there.length} times in ${other.region}`);
        else if (there[0]!.originRegion !== rec.region || there[0]!.originOffset !== off) problems.push(`${rec.id} in ${other.region} with origin ${there[0]!.originRegion}@${there[0]!.originOffset}`);
      } else if (there.length !== 0) problems.push(`local ${rec.id} left its region for ${other.region}`);
    }
  }
  // A failed record was refused before anything was written: it must be nowhere.
  const everyValue = new Set(Object.values(drained.regions).flatMap((byTopic) => Object.values(byTopic).flat(2).map((x) => x.value)));
  for (const rec of produced.filter((r) => r.outcome.kind === 'failed')) if (everyValue.has(rec.id)) problems.push(`failed ${rec.id} was written`);
  return problems;
}

describe('checked workload with real processes', () => {
  it('every acked record is where it should be after the run, and no poll went backwards', async () => {
    const seed = testSeed('drill-workload');
    const acksSeen = new Map<string, number>();
    const w = new CheckedWorkload({ regions, globalTopic: 'drill-g', localTopic: 'drill-l', partitions: PARTITIONS, rate: RATE, seed, durationMs: RUN_MS, onAck: (r) => acksSeen.set(r, (acksSeen.get(r) ?? 0) + 1) });
    const topics: CheckedTopic[] = await w.ensureTopics();
    expect(topics).toEqual([{ name: 'drill-g', scope: 'global', partitions: PARTITIONS }, { name: 'drill-l', scope: 'local', partitions: PARTITIONS }]);
    const startedAt = Date.now();
    w.start();
    // The run is a length of time, not an event: the producers schedule nothing after RUN_MS.
    await sleep(RUN_MS);
    await w.stop();
    const stoppedAt = Date.now();
    const produced = w.produced();
    const stats = w.stats();
    const acked = produced.filter((r) => r.outcome.kind === 'acked');
    const scheduled = regions.length * 2 * RATE * (RUN_MS / 1000);
    // Every slot of the schedule was sent or skipped (one request per partition in flight: a
    // loaded machine skips some, by design); most are acked on a quiet deployment (~95%), and a
    // quarter is plenty for the checks below (468 of 1000 with a 3×3 deployment beside it).
    const skipped = regions.reduce((n, r) => n + stats.regions[r.region]!.skipped, 0);
    expect(produced.length + skipped).toBe(scheduled);
    expect(acked.length).toBeGreaterThan(scheduled * 0.25);
    for (const r of regions) expect(acksSeen.get(r.region)).toBe(stats.regions[r.region]!.acked);

    const global = acked.filter((r) => r.topic === 'drill-g');
    let d: DrainResult | null = null;
    const convergeStart = Date.now();
    await waitFor('every acked global record in every region', CONVERGE_MS, async () => {
      d = await drain(regions, topics);
      const everywhere = regions.every((reg) => {
        const values = new Set(d!.regions[reg.region]?.['drill-g']?.flat().map((x) => x.value));
        return global.every((g) => values.has(g.id));
      });
      return everywhere ? true : undefined;
    }, 500);
    const convergeMs = Date.now() - convergeStart;
    const drained = d! as DrainResult;
    expect(drained.undrained).toEqual([]);

    expect(misplaced(produced, drained)).toEqual([]);
    // The check can fail: a planted acked record that was never written is reported.
    const planted = { ...acked[0]!, id: `${acked[0]!.region}/g/p9/000000`, topic: 'drill-g' };
    expect(misplaced([planted], drained)).toEqual([`${planted.id} not at its acked offset ${planted.outcome.kind === 'acked' ? planted.outcome.offset : -1} in ${planted.region}`, expect.stringContaining(`${planted.id} 0 times in`)]);

    const polls = w.polls();
    expect(backwards(polls)).toEqual([]);
    const p0 = polls.find((p) => p.offsets.length > 0)!;
    expect(backwards([{ ...p0, fromOffset: 0, offsets: [0, 1, 2] }, { ...p0, fromOffset: 1, offsets: [1] }])).toHaveLength(2);
    // One reader per region, topic and partition, each of which saw records.
    const readers = new Set(polls.filter((p) => p.offsets.length > 0).map((p) => `${p.region}/${p.topic}/${p.partition}`));
    expect(readers.size).toBe(regions.length * 2 * PARTITIONS);

    // The drill's checker on the same run: it passes, and fails once a record an acked producer
    // wrote is taken out of one region's drain behind its back (a planted loss).
    const input = { topics, regions: regions.map((r) => r.region), produced, drain: drained, polls, replicas: [] };
    const verdict = checkRun(input);
    expect(verdict, JSON.stringify(verdict.examples)).toMatchObject({ verdict: 'pass', lost: 0, unexpected: 0, reordered: 0, duplicates: 0, offsetsBackwards: 0 });
    expect(verdict.acked).toBe(acked.length);
    const victim = global[0]!;
    const other = regions.find((r) => r.region !== victim.region)!.region;
    const planted2: DrainResult = {
      ...drained,
      regions: { ...drained.regions, [other]: { ...drained.regions[other]!, 'drill-g': drained.regions[other]!['drill-g']!.map((part) => part.filter((x) => x.value !== victim.id)) } },
    };
    const caught = checkRun({ ...input, drain: planted2 });
    expect(caught).toMatchObject({ verdict: 'fail', lost: 1 });
    expect(caught.examples['lost']!.join(' ')).toContain(victim.id);

    console.log(
      `[drill-workload] seed ${seed}: ${produced.length}/${scheduled} sent in ${stoppedAt - startedAt} ms, ${stats.acked} acked, ${stats.failed} failed, ${stats.indeterminate} indeterminate, ` +
        `${Object.values(stats.regions).reduce((n, s) => n + s.skipped, 0)} skipped, ${stats.polls} polls (${stats.pollsDropped} dropped); global converged ${convergeMs} ms after the stop`,
    );
  }, 150_000);
});
