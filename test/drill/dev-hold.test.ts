// Proves the dev supervisor's hold and release through the control API with real processes (a
// 1-region deployment of 2 brokers): GET /v1/dev/deployment names every broker's address and data
// folder; a held broker is killed and stays down while held (its restart delay passes many times
// over and no new process appears); release starts it again and it rejoins its cell; the drill's
// fault driver releases what it held when it heals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { sleep, waitFor } from '../../src/testing/index.ts';
import { DevControlDriver, type Deployment, type DeploymentProcess } from '../../drill/faults/index.ts';
import { DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, stopAllDevs, type Ready } from '../helpers/dev-process.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

/** The supervisor's restart delay in this deployment: a held broker must stay down far longer. */
const RESTART_DELAY_MS = 50;
/** How long the test watches a held broker stay down: 20 restart delays. */
const STAYS_DOWN_MS = 20 * RESTART_DELAY_MS;

let ready: Ready;
let dataDir: string;

beforeAll(async () => {
  dataDir = await tempDir('edgeq-dev-hold-');
  const dev = startDevRegions(dataDir, await freeRange(DEV_REGIONS_PORT_SPAN), { regions: '1', brokersPerRegion: 2, env: { EDGEQ_DEV_RESTART_DELAY_MS: String(RESTART_DELAY_MS) } });
  ready = await dev.ready;
}, 120_000);

afterAll(async () => {
  await stopAllDevs();
  await cleanupTempDirs();
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function brokerAlive(gateway: string, id: number): Promise<boolean> {
  const res = await fetch(`${gateway}/v1/cell`).catch(() => null);
  if (!res?.ok) return false;
  const cell = (await res.json()) as { brokers: { id: number; alive: boolean }[] };
  return cell.brokers.some((b) => b.id === id && b.alive);
}

describe('dev supervisor hold and release', () => {
  it('describes the deployment, keeps a held broker down, and starts it again on release', async () => {
    const driver = await DevControlDriver.connect(ready.control);
    const d: Deployment = await driver.deployment();
    const region = d.regions[0]!;
    expect(d.faultStorage).toBe('none');
    expect(region.gateway).toBe(ready.regions[0]!.gateway);
    expect(region.brokers.map((b) => b.address).join(',')).toBe(ready.regions[0]!.brokers);
    for (const b of region.brokers) expect(existsSync(join(b.dataDir)), b.dataDir).toBe(true);

    const find = async (name: string): Promise<DeploymentProcess> => (await driver.processes()).find((p) => p.name === name)!;
    const victim = await find(region.brokers[1]!.name);
    const oldPid = victim.pid!;
    expect(alive(oldPid)).toBe(true);
    await driver.hold(victim);
    expect(alive(oldPid)).toBe(false);
    expect(await find(victim.name)).toMatchObject({ pid: null, held: true });
    // An absence is watched for a bounded time: 20 restart delays, and still no process.
    await sleep(STAYS_DOWN_MS);
    expect(await find(victim.name)).toMatchObject({ pid: null, held: true });
    await waitFor('the cell to see broker 2 dead', 30_000, async () => ((await brokerAlive(region.gateway, 2)) ? undefined : true), 200);

    await driver.release(await find(victim.name));
    const back = await find(victim.name);
    expect(back.held).toBe(false);
    expect(back.pid).not.toBeNull();
    expect(back.pid).not.toBe(oldPid);
    await waitFor('broker 2 back in its cell', 60_000, async () => ((await brokerAlive(region.gateway, 2)) ? true : undefined), 200);

    // healAll releases what the driver still holds.
    await driver.hold(await find(victim.name));
    expect(await find(victim.name)).toMatchObject({ pid: null, held: true });
    await driver.healAll();
    expect((await find(victim.name)).held).toBe(false);
    expect((await find(victim.name)).pid).not.toBeNull();
  }, 180_000);
});
