// Proves `edgeq drill` refuses bad input with exit 2 and a clear message before anything is injected: an unknown scenario, an unknown region, a scenario between regions on a 1-region deployment, a failover on a 1-broker cell, negative, zero and non-numeric durations, a bad rate or seed, a bad id, and no deployment at --control. The deployment is a real control API over a link emulator whose links, holds and process list are watched: nothing changes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LinkEmulator } from '../../wan/index.ts';
import { startControlApi, type ControlApi, type DevDeployment, type DevProcess } from '../dev/control-api.ts';
import { runCliCaptured } from '../test-support.ts';
import { freePort } from '../../../test/helpers/ports.ts';

const deployment: DevDeployment = {
  dataDir: '/nonexistent/edgeq-drill-test',
  faultStorage: 'none',
  regions: [
    {
      region: 'us-east',
      gateway: 'http://127.0.0.1:1',
      gatewayName: 'us-east/gateway',
      arbiter: { name: 'us-east/arbiter', address: '127.0.0.1:1', dataDir: '/nonexistent/a' },
      brokers: [{ name: 'us-east/broker-1', id: 1, address: '127.0.0.1:1', admin: 'http://127.0.0.1:1', dataDir: '/nonexistent/b1' }],
    },
  ],
};
// No pids: a drill that got as far as a signal would fail loudly rather than hit a real process.
const processes: DevProcess[] = [
  { region: 'us-east', role: 'arbiter', name: 'us-east/arbiter', pid: null, held: false },
  { region: 'us-east', role: 'broker', name: 'us-east/broker-1', pid: null, held: false },
  { region: 'us-east', role: 'gateway', name: 'us-east/gateway', pid: null, held: false },
];

let api: ControlApi;
const emulator = new LinkEmulator();
const holds: string[] = [];

beforeAll(async () => {
  api = await startControlApi({
    port: 0,
    emulator,
    processes: () => processes,
    deployment: () => deployment,
    hold: async (name) => void holds.push(name),
    release: async (name) => void holds.push(`release ${name}`),
  });
});
afterAll(() => api.close());

describe('edgeq drill bad input', () => {
  it('exits 2 with a clear message and injects nothing', async () => {
    const cases: [string[], RegExp][] = [
      [['disk-melt'], /unknown scenario "disk-melt"; the scenarios are broker-kill, leader-kill, region-isolate, region-kill, arbiter-loss, link-degrade, gateway-kill/],
      [['leader-kill', '--region', 'mars'], /unknown region "mars"; the deployment's regions are us-east/],
      [['region-isolate', '--region', 'us-east'], /region-isolate acts between regions, and this deployment has one region \(us-east\)/],
      [['link-degrade'], /acts between regions/],
      [['leader-kill', '--region', 'us-east'], /that cell has 1 broker/],
      [['leader-kill', '--duration-s', '-5'], /duration must be a whole number of seconds in \[3, 3600\], got -5/],
      [['leader-kill', '--duration-s', '0'], /duration must be a whole number/],
      [['leader-kill', '--duration-s', 'abc'], /--duration-s must be a whole number, got "abc"/],
      [['leader-kill', '--duration-s', '2.5'], /--duration-s must be a whole number/],
      [['leader-kill', '--rate', '-3'], /rate must be a number of records\/s in \(0, 5000\]/],
      [['leader-kill', '--rate', 'fast'], /--rate must be a number/],
      [['leader-kill', '--seed', '-1'], /seed must be an integer/],
      [['gateway-kill', '--id', '../../etc/passwd'], /--id: /],
    ];
    for (const [args, message] of cases) {
      const run = await runCliCaptured(['drill', ...args, '--control', api.url]);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(2);
      expect(run.stderr).toMatch(/^edgeq: INVALID_ARGUMENT: /m);
      expect(run.stderr, args.join(' ')).toMatch(message);
      expect(run.stdout).toBe('');
    }
    expect(holds).toEqual([]);
    expect(emulator.links()).toEqual([]);
  });

  it('exits 2 when no deployment answers at --control, naming it', async () => {
    const port = await freePort();
    const run = await runCliCaptured(['drill', 'gateway-kill', '--control', `http://127.0.0.1:${port}`]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`no deployment control API answers at http://127.0.0.1:${port}`);
    expect(run.stdout).toBe('');
  });
});
