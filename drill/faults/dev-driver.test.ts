// Proves the local deployment's fault driver against a real control API (the link emulator in
// process, processes with fake pids and a recorded signal): a blackhole and a degradation are put
// back exactly as they were by healAll, paused processes are continued, a kill of a process that
// died meanwhile is not an error, healAll twice is harmless, and no control API reachable is a
// typed error before anything is injected.
import { afterEach, describe, expect, it } from 'vitest';
import { EdgeqError } from '../../src/core/index.ts';
import { LinkEmulator } from '../../src/wan/index.ts';
import { startControlApi } from '../../src/cli/dev/control-api.ts';
import { freePort } from '../../test/helpers/ports.ts';
import { DevControlDriver } from './dev-driver.ts';

const PROCESSES = [
  { region: 'us-east', role: 'broker' as const, name: 'us-east/broker-1', pid: 4101, held: false },
  { region: 'eu-west', role: 'gateway' as const, name: 'eu-west/gateway', pid: 4102, held: false },
  { region: 'eu-west', role: 'broker' as const, name: 'eu-west/broker-1', pid: null, held: false },
];

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

async function rig() {
  const emulator = new LinkEmulator({ defaults: { latencyMs: 25 } });
  emulator.link('us-east', 'eu-west');
  emulator.link('eu-west', 'us-east');
  const api = await startControlApi({ port: 0, emulator, processes: () => PROCESSES });
  closers.push(() => api.close());
  const signals: [number, string][] = [];
  let gone = new Set<number>();
  const driver = new DevControlDriver(api.url, (pid, s) => {
    if (gone.has(pid)) throw Object.assign(new Error('no such process'), { code: 'ESRCH' });
    signals.push([pid, s]);
  });
  return { emulator, driver, signals, setGone: (pids: number[]) => (gone = new Set(pids)) };
}

describe('DevControlDriver', () => {
  it('lists processes and links; a blackhole and a degradation are healed back to the settings before', async () => {
    const { emulator, driver } = await rig();
    expect((await driver.processes()).map((p) => p.name)).toEqual(PROCESSES.map((p) => p.name));
    emulator.set('us-east', 'eu-west', { jitterMs: 3 });
    await driver.blackhole('us-east', 'eu-west', true);
    expect(emulator.get('us-east', 'eu-west')!.blackhole).toBe(true);
    expect(emulator.get('eu-west', 'us-east')!.blackhole).toBe(true);
    await driver.degrade('eu-west', 'us-east', { latencyMs: 250, lossRate: 0.05 });
    expect(emulator.get('eu-west', 'us-east')).toMatchObject({ latencyMs: 250, lossRate: 0.05 });
    await driver.healAll();
    expect(emulator.get('us-east', 'eu-west')).toMatchObject({ blackhole: false, latencyMs: 25, jitterMs: 3, lossRate: 0 });
    expect(emulator.get('eu-west', 'us-east')).toMatchObject({ blackhole: false, latencyMs: 25, jitterMs: 0, lossRate: 0 });
    await driver.healAll();
  });

  it('degrade(null) puts one link back; unknown links are NOT_FOUND and change nothing', async () => {
    const { emulator, driver } = await rig();
    await driver.degrade('us-east', 'eu-west', { latencyMs: 250 });
    await driver.degrade('us-east', 'eu-west', null);
    expect(emulator.get('us-east', 'eu-west')!.latencyMs).toBe(25);
    await expect(driver.degrade('us-east', 'mars', { latencyMs: 1 })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(driver.blackhole('mars', 'us-east', true)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(emulator.get('us-east', 'eu-west')!.blackhole).toBe(false);
  });

  it('pauses and continues processes; healAll continues what is still paused; a kill of a process gone meanwhile is fine', async () => {
    const { driver, signals, setGone } = await rig();
    const [broker, gateway, down] = PROCESSES;
    await driver.pause(broker!);
    await driver.pause(gateway!);
    await driver.resume(broker!);
    await driver.healAll();
    expect(signals).toEqual([[4101, 'SIGSTOP'], [4102, 'SIGSTOP'], [4101, 'SIGCONT'], [4102, 'SIGCONT']]);
    setGone([4101]);
    await driver.kill(broker!);
    await expect(driver.kill(down!)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(driver.pause(broker!)).rejects.toThrow(/no such process/);
  });

  it('no control API reachable: a typed error naming it', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const err = await DevControlDriver.connect(url).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EdgeqError);
    expect((err as EdgeqError).message).toContain(url);
  });
});
