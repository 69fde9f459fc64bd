// Proves the drills between regions with real processes on one 2-region deployment of 1 broker
// per region (10 s runs at 10 records/s per topic): region-isolate, region-kill and link-degrade
// each pass with 0 lost and every acknowledged global record in both regions after the heal
// (convergeMs set), the mesh's view of the target region is what detection means for isolate and
// kill, and the links and processes are as they were before the drill.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from '../../src/testing/index.ts';
import { DevControlDriver, type Deployment } from '../../drill/faults/index.ts';
import { runChecked } from '../../drill/runner/index.ts';
import { planDrill } from '../../drill/scenarios/index.ts';
import { DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, stopAllDevs } from '../helpers/dev-process.ts';
import { Geo } from '../helpers/geo.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

/** Each drill: 10 s (fault at 3 s, healed at 7 s): the mesh marks a silent member suspect in ~1-2 s. */
const DURATION_S = 10;
const RATE = 10;
/** Bound on one drill: its 10 s, the recovery wait (a region restarting: ~5-15 s on 2 cores), convergence (bounded 90 s) and the check. */
const DRILL_MS = 180_000;

const BIN = fileURLToPath(new URL('../../bin/edgeq.js', import.meta.url));

let control: string;
let driver: DevControlDriver;
let deployment: Deployment;

beforeAll(async () => {
  const dev = startDevRegions(await tempDir('edgeq-drill-geo-'), await freeRange(DEV_REGIONS_PORT_SPAN), { regions: '2', brokersPerRegion: 1 });
  const ready = await dev.ready;
  const geo = new Geo(ready);
  await geo.waitForExchanges(60_000);
  control = ready.control;
  driver = await DevControlDriver.connect(ready.control);
  deployment = await driver.deployment();
}, 180_000);

afterAll(async () => {
  await stopAllDevs();
  await cleanupTempDirs();
});

describe('drills between regions with real processes', () => {
  for (const [scenario, seed] of [
    ['region-isolate', 21],
    ['region-kill', 22],
    ['link-degrade', 23],
  ] as const) {
    it(`${scenario} passes, converges, and puts links and processes back`, async () => {
      const linksBefore = (await driver.links()).map(({ from, to, latencyMs, lossRate, blackhole }) => ({ from, to, latencyMs, lossRate, blackhole }));
      const plan = planDrill({ scenario, region: 'eu-west', durationS: DURATION_S, rate: RATE, seed }, deployment);
      const { report } = await runChecked({ driver, deployment, scenario, region: plan.region, seed, rate: RATE, durationMs: plan.durationMs, faults: plan.faults });
      console.log(`[drill ${scenario}] ${report.verdict} acked ${report.acked} detect ${report.detectMs} recover ${report.recoverMs} converge ${report.convergeMs} unavailable ${JSON.stringify(report.unavailableMs)} ${report.reasons.join('; ')}`);
      expect(report, report.reasons.join('; ')).toMatchObject({ scenario, region: 'eu-west', verdict: 'pass', lost: 0, reordered: 0, divergentOffsets: 0 });
      expect(report.acked).toBeGreaterThan(2 * RATE);
      expect(report.convergeMs).not.toBeNull();
      expect(report.recoverMs).not.toBeNull();
      if (scenario === 'link-degrade') {
        expect(report.detectMs).toBeNull();
        expect(report.timeline.some((e) => e.event === 'fault.degrade' && /latency 25 → 250 ms, loss 0 → 0.05/.test(e.detail))).toBe(true);
      } else {
        // us-east's mesh agent marked eu-west's member suspect or dead.
        expect(report.detectMs).not.toBeNull();
        expect(report.timeline.some((e) => e.event === 'mesh.member' && e.detail.includes('(eu-west)'))).toBe(true);
      }
      const linksAfter = (await driver.links()).map(({ from, to, latencyMs, lossRate, blackhole }) => ({ from, to, latencyMs, lossRate, blackhole }));
      expect(linksAfter).toEqual(linksBefore);
      expect((await driver.processes()).filter((p) => p.pid === null || p.held).map((p) => p.name)).toEqual([]);
    }, DRILL_MS);
  }

  it('a drill interrupted by Ctrl-C heals its fault, exits 1 and saves a failing report', async () => {
    const child = spawn(process.execPath, [BIN, 'drill', 'region-isolate', '--region', 'eu-west', '--duration-s', '20', '--rate', String(RATE), '--seed', '24', '--control', control, '--id', '20261201T000000-region-isolate-c7c7'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    // The fault is in place: every link of eu-west is cut.
    await waitFor('the drill to isolate eu-west', 60_000, async () => ((await driver.links()).filter((l) => l.blackhole).length === 2 ? true : undefined), 100);
    child.kill('SIGINT');
    expect(await exited).toBe(1);
    expect(stderr).toContain('SIGINT: healing every fault and stopping');
    expect((await driver.links()).filter((l) => l.blackhole)).toEqual([]);
    const dir = join(deployment.dataDir, 'drills');
    expect(await readdir(dir)).toContain('20261201T000000-region-isolate-c7c7.json');
    const report = JSON.parse(await readFile(join(dir, '20261201T000000-region-isolate-c7c7.json'), 'utf8')) as { verdict: string; reasons: string[] };
    expect(report.verdict).toBe('fail');
    expect(report.reasons).toContain('interrupted');
  }, DRILL_MS);
});
