// Proves that `edgeq dev` stopped while it is still starting (Ctrl-C or SIGTERM before its ready
// line) stops every child it has started so far and exits 0: before, the signal ended the
// supervisor alone and left the children running (seen: 15 orphans after an interrupted campaign).
import { readFile } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../src/testing/index.ts';
import { DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, stopAllDevs } from '../helpers/dev-process.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

afterAll(async () => {
  await stopAllDevs();
  await cleanupTempDirs();
});

/** True while any process of the group led by `pid` is alive. */
function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('edgeq dev stopped while starting', () => {
  it('stops every child started so far and exits 0', async () => {
    const dataDir = await tempDir('edgeq-dev-stop-');
    const dev = startDevRegions(dataDir, await freeRange(DEV_REGIONS_PORT_SPAN), { regions: '2', brokersPerRegion: 1 });
    let readyFirst = false;
    void dev.ready.then(() => (readyFirst = true), () => undefined);
    // An arbiter is up (its listening line is in its log), so children exist, and the gateways are not yet.
    await waitFor('an arbiter to be up', 60_000, async () => ((await readFile(`${dataDir}/us-east/logs/arbiter.log`, 'utf8').catch(() => '')).includes('"event":"listening"') ? true : undefined), 20);
    dev.child.kill('SIGTERM');
    expect(await dev.exited).toBe(0);
    // The whole process group is gone: nothing outlived the supervisor (children die within its stop bound).
    await waitFor('every child to be gone', 20_000, async () => (groupAlive(dev.child.pid!) ? undefined : true), 100);
    expect(readyFirst).toBe(false);
  }, 120_000);
});
