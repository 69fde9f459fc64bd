// Proves the drill's timeline recorder with real processes: two regions of `edgeq dev` (one broker
// each, the link emulator between them) polled every 250 ms; cutting the link shows the other
// region's member going suspect or dead in each region's timeline, with the detection time after
// the marked fault, and healing it shows the member alive again. The fault goes through the
// drill's own fault driver, which heals it.
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../src/testing/index.ts';
import { DevControlDriver } from '../../drill/faults/index.ts';
import { detectMs, TimelineRecorder } from '../../drill/timeline/index.ts';
import { DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, stopAllDevs } from '../helpers/dev-process.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

afterAll(async () => {
  await stopAllDevs();
  await cleanupTempDirs();
});

/** Bound on the mesh marking a region suspect/dead or alive again (a loaded 2-core machine). */
const MESH_MS = 60_000;

describe('drill timeline (2 regions)', () => {
  it('records the mesh marking a cut-off region and its return, and the detection time', async () => {
    const base = await freeRange(DEV_REGIONS_PORT_SPAN);
    const dev = startDevRegions(await tempDir('edgeq-drill-timeline-'), base, { regions: '2', brokersPerRegion: 1 });
    const ready = await dev.ready;
    const [a, b] = ready.regions as [(typeof ready.regions)[0], (typeof ready.regions)[0]];
    const driver = await DevControlDriver.connect(ready.control);
    const rec = new TimelineRecorder({ gateways: ready.regions.map((r) => ({ region: r.region, url: r.gateway })) });
    rec.start();
    try {
      // Both regions see each other alive before the fault.
      await waitFor('both regions in each other\'s mesh', MESH_MS, async () => {
        const res = await fetch(`${b.gateway}/v1/mesh`);
        const m = (await res.json()) as { members: { region: string; state: string }[] };
        return m.members.some((x) => x.region === a.region && x.state === 'alive') ? true : undefined;
      }, 250);
      const faultAt = Date.now();
      rec.mark('fault', `blackhole ${a.region} <-> ${b.region}`);
      await driver.blackhole(a.region, b.region, true);
      await waitFor(`${b.region} to mark ${a.region} suspect or dead`, MESH_MS, () => (detectMs(rec.timeline(), faultAt, { memberOf: a.region }) !== null ? true : undefined), 250);
      const detected = detectMs(rec.timeline(), faultAt, { memberOf: a.region })!;
      expect(detected).toBeGreaterThan(0);
      expect(detected).toBeLessThan(MESH_MS);
      rec.mark('heal', 'links restored');
      await driver.healAll();
      await waitFor(`${a.region} alive again in ${b.region}'s timeline`, MESH_MS, () =>
        rec.timeline().some((e) => e.t > faultAt && e.region === b.region && e.event === 'mesh.member' && e.detail.includes(`(${a.region}):`) && e.detail.endsWith('→ alive')) ? true : undefined,
      250);
      const tl = rec.timeline();
      expect(tl.map((e) => e.event)).toEqual(expect.arrayContaining(['fault', 'heal', 'mesh.member']));
      // Marked in order, and every event in time order.
      expect(tl.every((e, i) => i === 0 || tl[i - 1]!.t <= e.t)).toBe(true);
      expect((await driver.links()).every((l) => !l.blackhole)).toBe(true);
    } finally {
      rec.stop();
      await driver.healAll().catch(() => undefined);
    }
    dev.child.kill('SIGTERM');
    expect(await dev.exited).toBe(0);
  }, 180_000);
});
