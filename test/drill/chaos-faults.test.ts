// Proves the campaign's storage faults on real processes (1 region, a cell of 3 brokers on the power-loss storage, topics flushed with sync): a broker's power loss loses no acked record and the broker restarts and rejoins every ISR; a follower whose log has flipped bits is repaired from its leader, with 0 divergent offsets and no corrupted record ever read.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../src/testing/index.ts';
import { DevControlDriver, type Deployment } from '../../drill/faults/index.ts';
import { fetchCell, runChecked, type CheckedRunResult } from '../../drill/runner/index.ts';
import { chaosFaultSpecs, RoundLedger, type ChaosFaultName } from '../../drill/chaos/index.ts';
import { DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, stopAllDevs } from '../helpers/dev-process.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

/**
 * A run: 6 s of workload at 20 records/s, the fault at 1.5 s held 2 s. Then the runner waits for
 * recovery (≤ 60 s), converges (≤ 30 s here) and checks: a broker restart with log replay is a
 * few seconds, so ~20 s per run on a quiet machine; 120 s leaves room for 2 loaded cores.
 */
const RUN_MS = 6_000;
const RUN_TEST_MS = 120_000;
/** Bound on the restarted broker being back in every ISR (replicaLagTimeMaxMs-scale catch-up on a loaded machine). */
const REJOIN_MS = 60_000;

let driver: DevControlDriver;
let deployment: Deployment;

beforeAll(async () => {
  const base = await freeRange(DEV_REGIONS_PORT_SPAN);
  const dev = startDevRegions(await tempDir('edgeq-chaos-faults-'), base, { regions: '1', brokersPerRegion: 3, env: { EDGEQ_FAULT_STORAGE: 'power-loss', EDGEQ_LOG__FLUSH_POLICY: 'sync' } });
  const ready = await dev.ready;
  driver = await DevControlDriver.connect(ready.control);
  deployment = await driver.deployment();
}, 180_000);

afterAll(async () => {
  await stopAllDevs();
  await cleanupTempDirs();
});

/** One run of a fault; its topics are kept (the tests look at their replicas afterwards). */
async function run(name: ChaosFaultName, seed: number): Promise<{ result: CheckedRunResult; ledger: RoundLedger }> {
  const ledger = new RoundLedger();
  const region = deployment.regions[0]!.region;
  const result = await runChecked({ driver, deployment, scenario: `chaos-${name}`, region, seed, rate: 20, durationMs: RUN_MS, faults: [{ fault: chaosFaultSpecs(ledger)[name], region, atMs: 1_500, holdMs: 2_000 }], convergeTimeoutMs: 30_000, deleteTopics: 'never' });
  return { result, ledger };
}

/** Every partition of the runs' topics (the runner names them drill-…) has all 3 replicas in its ISR again. */
async function rejoined(): Promise<void> {
  const r = deployment.regions[0]!;
  await waitFor('every replica back in its ISR', REJOIN_MS, async () => {
    const cell = await fetchCell(r.gateway, null).catch(() => null);
    const parts = cell?.partitions.filter((p) => p.topic.startsWith('drill-')) ?? [];
    return parts.length > 0 && parts.every((p) => p.isr.length === 3) ? true : undefined;
  }, 250);
}

describe('campaign faults on a real cell', () => {
  it('deployment runs on the power-loss storage', () => {
    expect(deployment.faultStorage).toBe('power-loss');
    expect(deployment.regions[0]!.brokers).toHaveLength(3);
  });

  it('power loss of one broker: with sync no acked record is lost; it restarts and rejoins', async () => {
    const { result, ledger } = await run('power-loss-broker', 101);
    expect(ledger.powerLosses).toHaveLength(1);
    expect(ledger.powerLosses[0]!.healedAtMs).not.toBeNull();
    const { report, check } = result;
    expect(report.timeline.some((e) => e.event === 'fault.power-loss')).toBe(true);
    // The workload ran through the fault: writes were acknowledged after the power loss (recoverMs
    // is null without one), and the runner's own recovery check (in the verdict) wants every lane
    // that acknowledged before the fault to acknowledge again after the heal. How many records a
    // loaded machine acknowledges in 6 s is not the point (a fixed count failed at exactly 50).
    expect(check.acked).toBeGreaterThan(0);
    expect(report.recoverMs).not.toBeNull();
    expect(report, JSON.stringify({ reasons: report.reasons, ex: check.examples })).toMatchObject({ verdict: 'pass', lost: 0, divergentOffsets: 0, reordered: 0 });
    const victim = ledger.powerLosses[0]!.brokers[0]!;
    expect((await driver.processes()).find((p) => p.name === victim)?.pid).not.toBeNull();
    await rejoined();
  }, RUN_TEST_MS + REJOIN_MS);

  it('flipped bits in a follower: repaired, never read, 0 divergent offsets', async () => {
    const { result, ledger } = await run('corrupt-flip', 202);
    expect(ledger.corruptions.length).toBeGreaterThan(0);
    for (const c of ledger.corruptions) expect(c.corruption.kind).toBe('flip');
    const { report, check } = result;
    // unexpected 0: no consumer ever read a record value the workload did not send (a corrupted one).
    expect(report, JSON.stringify({ reasons: report.reasons, ex: check.examples })).toMatchObject({ verdict: 'pass', lost: 0, divergentOffsets: 0 });
    expect(check.unexpected).toBe(0);
  }, RUN_TEST_MS);

  it('a truncated follower tail: cut back and refetched, 0 divergent offsets, nothing lost', async () => {
    const { result, ledger } = await run('corrupt-truncate', 303);
    expect(ledger.corruptions.length).toBeGreaterThan(0);
    const { report, check } = result;
    expect(report, JSON.stringify({ reasons: report.reasons, ex: check.examples })).toMatchObject({ verdict: 'pass', lost: 0, divergentOffsets: 0 });
  }, RUN_TEST_MS);
});
