// Proves the cell drills with real processes on one 1-region deployment of 3 brokers (short runs:
// 10 s at 10 records/s per topic; the cell drops a dead follower from the ISR after 2 s instead of 10): broker-kill, leader-kill, arbiter-loss and gateway-kill each pass
// with 0 lost, records acknowledged before and after the fault, the times a drill reports, and the
// deployment whole again after it (every process running, none held); leader-kill's detection is
// a leader election; a passing drill deletes its topics, a failing one keeps them. gateway-kill runs through `edgeq drill --json`. The checker fails a drill whose workload counts a record that was never
// written as acknowledged (a planted loss), and `edgeq drill --json` prints exactly the report's
// schema and saves it where GET /v1/drills reads it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DevControlDriver, type Deployment } from '../../drill/faults/index.ts';
import { runChecked, type CheckedRunResult } from '../../drill/runner/index.ts';
import { planDrill } from '../../drill/scenarios/index.ts';
import type { DrillReport } from '../../drill/report/index.ts';
import { CheckedWorkload, type WorkloadRecord } from '../../drill/workload/index.ts';
import { runCliCaptured } from '../../src/cli/test-support.ts';
import { DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, stopAllDevs, type Ready } from '../helpers/dev-process.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

/**
 * Each drill: 10 s (fault at 3 s, healed at 7 s), 10 records/s per region and topic. The fault's
 * 4 s hold covers a failover: the dead leader's lease runs out after 2 s (cell.leaseTtlMs), and
 * the deployment's replicaLagTimeMaxMs is 2 s (REPLICA_LAG_MS), so the ISR shrinks and acks=all
 * writes resume inside the hold.
 */
const DURATION_S = 10;
const REPLICA_LAG_MS = 2_000;
/**
 * The gateway's produce timeout: well under the arbiter-loss hold (4 s), so writes that wait on
 * a leader the cell cannot confirm or elect end inside it, with their typed reason.
 */
const PRODUCE_TIMEOUT_MS = 1_500;
const RATE = 10;
/**
 * Bound on one drill: its 6 s, the recovery wait (up to 60 s, a restart is ~1-3 s), convergence
 * (a drain a few hundred ms; a 1-region deployment has nothing to exchange) and the replica read.
 */
const DRILL_MS = 120_000;

let ready: Ready;
let driver: DevControlDriver;
let deployment: Deployment;

beforeAll(async () => {
  const dev = startDevRegions(await tempDir('edgeq-drill-cell-'), await freeRange(DEV_REGIONS_PORT_SPAN), { regions: '1', brokersPerRegion: 3, env: { EDGEQ_CELL__REPLICA_LAG_TIME_MAX_MS: String(REPLICA_LAG_MS), EDGEQ_PRODUCE_TIMEOUT_MS: String(PRODUCE_TIMEOUT_MS) } });
  ready = await dev.ready;
  driver = await DevControlDriver.connect(ready.control);
  deployment = await driver.deployment();
}, 120_000);

afterAll(async () => {
  await stopAllDevs();
  await cleanupTempDirs();
});

/** The drill topics the region's cell holds. */
async function drillTopics(): Promise<string[]> {
  const res = await fetch(`${ready.gateway}/v1/topics`);
  return ((await res.json()) as { topics: string[] }).topics.filter((t) => t.startsWith('drill-')).sort();
}

async function drill(scenario: string, seed: number, makeWorkload?: (o: ConstructorParameters<typeof CheckedWorkload>[0]) => CheckedWorkload): Promise<CheckedRunResult> {
  const plan = planDrill({ scenario, region: 'us-east', durationS: DURATION_S, rate: RATE, seed }, deployment);
  const result = await runChecked({ driver, deployment, scenario: plan.scenario, region: plan.region, seed, rate: plan.rate, durationMs: plan.durationMs, faults: plan.faults, ...(makeWorkload ? { makeWorkload } : {}) });
  console.log(`[drill ${scenario}] ${result.report.verdict} acked ${result.report.acked} detect ${result.report.detectMs} recover ${result.report.recoverMs} converge ${result.report.convergeMs} unavailable ${JSON.stringify(result.report.unavailableMs)} ${result.report.reasons.join('; ')}`);
  return result;
}

/** Codes the workload gives an answer it did not get from the gateway (its own timeout, a lost connection). */
const UNTYPED = new Set(['TIMEOUT', 'ABORTED', 'CONNECTION_LOST', 'CONNECTION_REFUSED', 'BAD_ANSWER']);

/**
 * Arbiter loss: the killed leader's partition needs a leadership change the paused arbiter cannot
 * fence, so its writes answered during the hold (from a second after the kill, when what was
 * acknowledged before it has been answered) are none acknowledged and each a typed error of the
 * gateway; there is at least one; and writes to it are acknowledged again after the heal.
 */
function expectArbiterLossTyped(report: DrillReport, workload: CheckedWorkload): void {
  const kill = report.timeline.find((e) => e.event === 'fault.kill');
  const m = /leader of (\S+)-(\d+):/.exec(kill?.detail ?? '');
  expect(m, JSON.stringify(kill)).not.toBeNull();
  const [, topic, partition] = m!;
  const killAt = Date.parse(kill!.t);
  const healAt = Date.parse(report.healAt!);
  const mine = workload.produced().filter((r) => r.topic === topic && r.partition === Number(partition));
  const during = mine.filter((r) => r.outcome.atMs > killAt + 1_000 && r.outcome.atMs < healAt);
  const seen = during.map((r) => `${r.outcome.kind}:${r.outcome.kind === 'acked' ? r.outcome.offset : r.outcome.code}`);
  const all = mine.map((r) => `${r.seq}@${r.sentAtMs - killAt}→${r.outcome.atMs - killAt}:${r.outcome.kind === 'acked' ? 'acked' : r.outcome.code}`).join(' ');
  console.log(`[arbiter-loss] ${topic}-${partition}, ms from the kill (heal at ${healAt - killAt}): ${all}`);
  expect(during.length, `heal at ${healAt - killAt}: ${all}`).toBeGreaterThan(0);
  expect(during.filter((r) => r.outcome.kind === 'acked' || UNTYPED.has(r.outcome.code) || !/^[A-Z_]+$/.test(r.outcome.code)), seen.join(' ')).toEqual([]);
  expect(mine.some((r) => r.outcome.kind === 'acked' && r.sentAtMs > healAt)).toBe(true);
}

/** The deployment is whole: every process running, none held. */
async function whole(): Promise<void> {
  const procs = await driver.processes();
  expect(procs.filter((p) => p.pid === null || p.held).map((p) => p.name)).toEqual([]);
}

describe('cell drills with real processes', () => {
  for (const [scenario, seed, detects] of [
    ['leader-kill', 11, true],
    ['broker-kill', 12, false],
    ['arbiter-loss', 13, true],
  ] as const) {
    it(`${scenario} passes with nothing lost and leaves the deployment whole`, async () => {
      const topicsBefore = await drillTopics();
      let workload: CheckedWorkload | null = null;
      const { report } = await drill(scenario, seed, (o) => (workload = new CheckedWorkload(o)));
      expect(report, report.reasons.join('; ')).toMatchObject({ scenario, region: 'us-east', seed, verdict: 'pass', lost: 0, reordered: 0, divergentOffsets: 0 });
      expect(report.acked).toBeGreaterThan(RATE);
      expect(report.faultAt).not.toBeNull();
      expect(Date.parse(report.healAt!)).toBeGreaterThan(Date.parse(report.faultAt!));
      expect(report.recoverMs).not.toBeNull();
      expect(report.convergeMs).not.toBeNull();
      // A leader election is what detecting leader-kill and arbiter-loss means; broker-kill kills
      // a follower (no election: detect is null or an election), gateway-kill has no other region to see it.
      if (detects) expect(report.detectMs).not.toBeNull();
      expect(report.timeline.some((e) => e.event === 'fault' && e.detail.includes(scenario))).toBe(true);
      expect(report.timeline.some((e) => e.event === 'heal')).toBe(true);
      if (scenario === 'arbiter-loss') expectArbiterLossTyped(report, workload!);
      await whole();
      // A passing drill deletes its two topics: none of its own is left behind.
      expect(await drillTopics()).toEqual(topicsBefore);
    }, DRILL_MS);
  }

  it('fails a drill whose workload counts a record that was never written as acknowledged', async () => {
    // The planted loss: one acknowledged record, as the producer reports it, that no broker ever held.
    class LyingWorkload extends CheckedWorkload {
      override produced(): WorkloadRecord[] {
        const real = super.produced();
        // A local record, so the run does not wait for it to reach other regions: the check finds it missing.
        const acked = real.find((r) => r.outcome.kind === 'acked' && r.id.includes('/l/'));
        if (!acked) return real;
        return [...real, { ...acked, id: `${acked.region}/l/p9/999999`, seq: 999_999, producer: 'p9' }];
      }
    }
    const topicsBefore = await drillTopics();
    const { report, check } = await drill('leader-kill', 15, (o) => new LyingWorkload(o));
    expect(report.verdict).toBe('fail');
    // A failing drill keeps its topics, to be read again for a diagnosis.
    expect((await drillTopics()).filter((t) => !topicsBefore.includes(t))).toHaveLength(2);
    expect(report.lost).toBeGreaterThanOrEqual(1);
    expect(check.examples['lost']!.join(' ')).toContain('p9/999999');
    expect(report.reasons.join(' ')).toMatch(/acknowledged records lost/);
    await whole();
  }, DRILL_MS);

  it('edgeq drill gateway-kill --json passes, prints the report in its schema and saves it in the data folder', async () => {
    const run = await runCliCaptured(['drill', 'gateway-kill', '--region', 'us-east', '--duration-s', String(DURATION_S), '--rate', String(RATE), '--seed', '14', '--json', '--control', ready.control, '--id', '20261201T000000-gateway-kill-beef']);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(Object.keys(report).sort()).toEqual(
      ['scenario', 'region', 'seed', 'startedAt', 'faultAt', 'healAt', 'detectMs', 'recoverMs', 'convergeMs', 'unavailableMs', 'acked', 'lost', 'duplicates', 'reordered', 'indeterminate', 'divergentOffsets', 'timeline', 'verdict', 'reasons'].sort(),
    );
    // No other region watches this one's gateway: nothing detects its death (null), yet writes come back.
    expect(report).toMatchObject({ scenario: 'gateway-kill', region: 'us-east', seed: 14, verdict: 'pass', lost: 0, reordered: 0, divergentOffsets: 0, detectMs: null });
    expect(report['recoverMs']).not.toBeNull();
    expect(report['acked']).toBeGreaterThan(RATE);
    expect(Object.keys(report['indeterminate'] as object).sort()).toEqual(['found', 'total']);
    expect(run.stderr).toMatch(/edgeq drill: gateway-kill in us-east, 10 s at 10 records\/s per region, seed 14/);
    expect(run.stderr).toMatch(/edgeq drill: done/);
    const saved = JSON.parse(await readFile(join(deployment.dataDir, 'drills', '20261201T000000-gateway-kill-beef.json'), 'utf8'));
    expect(saved).toEqual(report);
    await whole();
  }, DRILL_MS);
});
