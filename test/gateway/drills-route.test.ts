// Proves /v1/drills through `app.request()` with a fake spawner: the list and a report or a running drill's progress (200), a drill started as `edgeq drill … --control --id --json` with its log beside the report (202 + Location), one at a time until the child exits (409 DRILL_RUNNING), every bad body refused whole with nothing spawned (400), auth (401, 403 without admin on *), and a gateway without --drills-dir or --drill-control (404 naming the flag); then, against a real 1-region `edgeq dev`, that the gateway lists a report written into the data folder and that POST starts a real `edgeq drill` (skipped until that command exists).
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile, mkdir, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient, type EdgeqClient } from '../../src/client/index.ts';
import { Authenticator, createGatewayApp, hashApiKey, type GatewayApp } from '../../src/gateway/index.ts';
import type { DrillChild, DrillsDeps } from '../../src/gateway/drills-route.ts';
import { DrillStore, newDrillId } from '../../drill/store/index.ts';
import type { DrillReport } from '../../drill/report/index.ts';
import { waitFor } from '../../src/testing/index.ts';
import { gatewayRefusal } from '../../src/cli/test-support.ts';
import { DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, stopAllDevs } from '../helpers/dev-process.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

const T0 = Date.UTC(2026, 2, 4, 5, 6, 7);
const KEYS = { admin: 'drills-admin-0123456789', reader: 'drills-reader-0123456789' };

function report(over: Partial<DrillReport> = {}): DrillReport {
  return {
    scenario: 'broker-kill', region: 'us-east', seed: 7, startedAt: new Date(T0).toISOString(), faultAt: null, healAt: null,
    detectMs: 120, recoverMs: 340, convergeMs: 900, unavailableMs: { 'us-east': 340 }, acked: 1000, lost: 0, duplicates: 0, reordered: 0,
    indeterminate: { total: 0, found: 0 }, divergentOffsets: 0, timeline: [], verdict: 'pass', reasons: [], ...over,
  };
}

/** A spawner that starts nothing: it records each start, and the test ends the "child" when it likes. */
class FakeSpawner {
  readonly starts: { argv: readonly string[]; logFile: string; exit: (code: number | null) => void }[] = [];
  readonly spawn = (argv: readonly string[], logFile: string): DrillChild => {
    let exit!: (code: number | null) => void;
    const exited = new Promise<number | null>((r) => (exit = r));
    this.starts.push({ argv, logFile, exit });
    return { exited };
  };
}

let dir: string;
let store: DrillStore;
let spawner: FakeSpawner;
let client: EdgeqClient;
const apps: GatewayApp[] = [];

function app(o: { drills?: Partial<DrillsDeps> | null; auth?: boolean } = {}): GatewayApp {
  const drills: DrillsDeps | null =
    o.drills === null ? null : { store, control: 'http://127.0.0.1:1', spawn: spawner.spawn, regions: async () => ['us-east', 'eu-west'], nowMs: () => T0, random: () => 0.5, ...o.drills };
  const auth = o.auth
    ? Authenticator.fromJson({
        keys: [
          { sha256: hashApiKey(KEYS.admin).toString('hex'), tenant: 'ops', grants: [{ topic: '*', actions: ['admin'] }] },
          { sha256: hashApiKey(KEYS.reader).toString('hex'), tenant: 'analytics', grants: [{ topic: '*', actions: ['read', 'write'] }] },
        ],
      })
    : null;
  const a = createGatewayApp({ client, processMetrics: false, drills, auth });
  apps.push(a);
  return a;
}

const post = (a: GatewayApp, body: unknown, headers: Record<string, string> = {}) =>
  a.request('/v1/drills', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });

async function problem(res: Response, status: number, code: string): Promise<Record<string, unknown>> {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  const p = (await res.json()) as Record<string, unknown>;
  expect(p['code']).toBe(code);
  return p;
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edgeq-drills-route-'));
  store = new DrillStore(join(dir, 'drills'));
  spawner = new FakeSpawner();
  // Never connected: the drills routes do not touch the cell.
  client = createClient({ brokers: ['127.0.0.1:1'], connectTimeoutMs: 200, retry: { retriesMax: 0, retryTimeMsMax: 200 } });
});
afterEach(async () => {
  for (const a of apps.splice(0)) await a.close();
  await client.close();
  await rm(dir, { recursive: true, force: true });
});

describe('/v1/drills in-process', () => {
  it('GET lists summaries newest first and fetches a report (200)', async () => {
    const a = app();
    expect(await (await a.request('/v1/drills')).json()).toEqual({ drills: [] });
    const old = newDrillId('broker-kill', T0, () => 0);
    const fresh = newDrillId('region-kill', T0 + 5_000, () => 0);
    await store.save(old, report());
    await store.save(fresh, report({ scenario: 'region-kill', verdict: 'fail', lost: 2, reasons: ['2 acknowledged records lost'] }));
    const list = await a.request('/v1/drills');
    expect(list.status).toBe(200);
    expect(((await list.json()) as { drills: { id: string; verdict: string; lost: number }[] }).drills.map((d) => [d.id, d.verdict, d.lost])).toEqual([[fresh, 'fail', 2], [old, 'pass', 0]]);
    const one = await a.request(`/v1/drills/${old}`);
    expect(one.status).toBe(200);
    expect(await one.json()).toEqual({ id: old, state: 'done', report: report() });
  });

  it('POST starts `edgeq drill` with the request as flags (202, Location), the drill is running, and its log goes beside the report', async () => {
    const a = app();
    const res = await post(a, { scenario: 'leader-kill', region: 'eu-west', durationS: 20, rate: 50, seed: 42 });
    expect(res.status).toBe(202);
    const id = '20260304T050607-leader-kill-8000';
    expect(await res.json()).toEqual({ id, state: 'running' });
    expect(res.headers.get('location')).toBe(`/v1/drills/${id}`);
    expect(spawner.starts).toHaveLength(1);
    expect(spawner.starts[0]!.argv).toEqual(['drill', 'leader-kill', '--control', 'http://127.0.0.1:1', '--id', id, '--json', '--region', 'eu-west', '--duration-s', '20', '--rate', '50', '--seed', '42']);
    expect(spawner.starts[0]!.logFile).toBe(join(store.dir, `${id}.log`));
    const got = (await (await a.request(`/v1/drills/${id}`)).json()) as { state: string; progress: { phase: string } };
    expect(got).toMatchObject({ id, state: 'running', progress: { phase: 'connect' } });
    expect(((await (await a.request('/v1/drills')).json()) as { drills: unknown[] }).drills).toEqual([expect.objectContaining({ id, state: 'running', verdict: null })]);
  });

  it('one drill at a time (409 DRILL_RUNNING, Retry-After, nothing spawned); the child\'s exit frees the slot, and an exit without a report is shown as done', async () => {
    const a = app();
    expect((await post(a, { scenario: 'broker-kill' })).status).toBe(202);
    const busy = await post(a, { scenario: 'gateway-kill' });
    const p = await problem(busy, 409, 'DRILL_RUNNING');
    expect(p['retriable']).toBe(true);
    expect(busy.headers.get('retry-after')).toBe('5');
    expect(spawner.starts).toHaveLength(1);
    const first = '20260304T050607-broker-kill-8000';
    spawner.starts[0]!.exit(2);
    await waitFor('the exit to be recorded', 5_000, async () => ((await store.get(first)).state === 'done' ? true : undefined), 20);
    expect(await store.get(first)).toMatchObject({ state: 'done', progress: { phase: 'done', detail: expect.stringContaining('exited (code 2) without a report') } });
    const again = await post(a, { scenario: 'gateway-kill' });
    expect(again.status).toBe(202);
    expect(spawner.starts).toHaveLength(2);
  });

  it('two requests at once: exactly one starts', async () => {
    const a = app();
    const statuses = (await Promise.all([post(a, { scenario: 'broker-kill', region: 'us-east' }), post(a, { scenario: 'broker-kill', region: 'us-east' })])).map((r) => r.status).sort();
    expect(statuses).toEqual([202, 409]);
    expect(spawner.starts).toHaveLength(1);
  });

  it('a bad body is refused whole (400 problem+json naming the field) and nothing is spawned or written', async () => {
    const a = app();
    const bad: [unknown, string | undefined][] = [
      [{}, 'scenario'],
      [{ scenario: 'meteor-strike' }, 'scenario'],
      [{ scenario: 7 }, 'scenario'],
      [{ scenario: 'broker-kill', region: 'mars' }, 'region'],
      [{ scenario: 'broker-kill', region: '../etc' }, 'region'],
      [{ scenario: 'broker-kill', durationS: -1 }, 'durationS'],
      [{ scenario: 'broker-kill', durationS: 0 }, 'durationS'],
      [{ scenario: 'broker-kill', durationS: 1.5 }, 'durationS'],
      [{ scenario: 'broker-kill', durationS: '20' }, 'durationS'],
      [{ scenario: 'broker-kill', durationS: 3_601 }, 'durationS'],
      [{ scenario: 'broker-kill', rate: 0 }, 'rate'],
      [{ scenario: 'broker-kill', rate: 10_001 }, 'rate'],
      [{ scenario: 'broker-kill', seed: -1 }, 'seed'],
      [{ scenario: 'broker-kill', seed: 2 ** 32 }, 'seed'],
      [{ scenario: 'broker-kill', force: true }, 'force'],
      ['{"scenario":', undefined],
      ['[]', undefined],
    ];
    for (const [body, field] of bad) {
      const p = await problem(await post(a, body), 400, 'INVALID_ARGUMENT');
      expect(p['field'], JSON.stringify(body)).toBe(field);
    }
    await problem(await post(a, 'scenario=broker-kill', { 'content-type': 'text/plain' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    expect(spawner.starts).toEqual([]);
    expect(existsSync(store.dir)).toBe(false);
    // An id that is not one (a traversal) is a 400 too, not a read outside the folder.
    await problem(await a.request('/v1/drills/..%2F..%2Fetc%2Fpasswd'), 400, 'INVALID_ARGUMENT');
    await problem(await a.request('/v1/drills/20260304T050607-broker-kill-0000'), 404, 'NOT_FOUND');
  });

  it('auth: 401 without a key, 403 without admin on * (reads too: a report shows the cell and the mesh)', async () => {
    const a = app({ auth: true });
    for (const [method, path] of [['GET', '/v1/drills'], ['GET', '/v1/drills/20260304T050607-broker-kill-0000'], ['POST', '/v1/drills']] as const) {
      const init = { method, ...(method === 'POST' ? { headers: { 'content-type': 'application/json' }, body: '{"scenario":"broker-kill"}' } : {}) };
      const anon = await a.request(path, init);
      await problem(anon, 401, 'UNAUTHENTICATED');
      expect(anon.headers.get('www-authenticate')).toMatch(/^Bearer realm="edgeq"/);
      await problem(await a.request(path, { ...init, headers: { ...(init.headers ?? {}), authorization: `Bearer ${KEYS.reader}` } }), 403, 'FORBIDDEN');
    }
    expect(spawner.starts).toEqual([]);
    const ok = await a.request('/v1/drills', { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${KEYS.admin}` }, body: '{"scenario":"broker-kill"}' });
    expect(ok.status).toBe(202);
  });

  it('without --drills-dir every route is 404 naming it; without --drill-control POST is 404 naming that, nothing spawned', async () => {
    const none = app({ drills: null });
    for (const res of [await none.request('/v1/drills'), await none.request('/v1/drills/20260304T050607-broker-kill-0000'), await post(none, { scenario: 'broker-kill' })]) {
      expect((await problem(res, 404, 'NOT_FOUND'))['detail']).toBe('this gateway keeps no drill reports (start it with --drills-dir)');
    }
    const readOnly = app({ drills: { control: null } });
    expect((await problem(await post(readOnly, { scenario: 'broker-kill' }), 404, 'NOT_FOUND'))['detail']).toContain('--drill-control');
    expect((await readOnly.request('/v1/drills')).status).toBe(200);
    expect(spawner.starts).toEqual([]);
  });

  it('a control API that does not answer refuses a POST naming a region (503), and frees the slot', async () => {
    const a = app({ drills: { regions: async () => Promise.reject(new (await import('../../src/core/index.ts')).EdgeqError('BROKER_NOT_AVAILABLE', 'no deployment control API answers')) } });
    await problem(await post(a, { scenario: 'broker-kill', region: 'us-east' }), 503, 'BROKER_NOT_AVAILABLE');
    expect(spawner.starts).toEqual([]);
    // Without a region nothing needs the control API here (the drill itself checks it): it starts.
    expect((await post(a, { scenario: 'broker-kill' })).status).toBe(202);
  });
});

describe('edgeq gateway --drills-dir / --drill-control', () => {
  it('refuses bad settings before anything listens (exit 2, the flag named)', async () => {
    expect(await gatewayRefusal(['--drill-control', 'ftp://127.0.0.1:8090', '--drills-dir', dir])).toMatch(/INVALID_CONFIG: --drill-control must be an http\(s\) URL/);
    expect(await gatewayRefusal(['--drill-control', 'not a url', '--drills-dir', dir])).toMatch(/--drill-control must be an http\(s\) URL/);
    expect(await gatewayRefusal(['--drill-control', 'http://127.0.0.1:8090'])).toMatch(/--drill-control needs --drills-dir/);
    // A folder that cannot be created: under a regular file.
    await writeFile(join(dir, 'file'), 'x');
    expect(await gatewayRefusal(['--drills-dir', join(dir, 'file', 'drills')])).toMatch(/INVALID_CONFIG: --drills-dir .* cannot be written/);
  });
});

const DRILL_CLI = existsSync(fileURLToPath(new URL('../../src/cli/commands/drill.ts', import.meta.url)));
/** Bound on a report written into the data folder showing in the list: one request, read from disk. */
const LIST_MS = 10_000;

describe('/v1/drills on a real 1-region edgeq dev', () => {
  afterAll(async () => {
    await stopAllDevs();
    await cleanupTempDirs();
  });

  let gateway = '';
  let dataDir = '';
  it('the gateway lists a report written into <dataDir>/drills and serves it', async () => {
    const base = await freeRange(DEV_REGIONS_PORT_SPAN);
    dataDir = await tempDir('edgeq-drills-dev-');
    const ready = await startDevRegions(dataDir, base, { regions: '1', brokersPerRegion: 1 }).ready;
    gateway = ready.gateway;
    const id = newDrillId('broker-kill', Date.now(), Math.random);
    await mkdir(join(dataDir, 'drills'), { recursive: true });
    await writeFile(join(dataDir, 'drills', `${id}.json`), JSON.stringify(report()));
    await waitFor('the report in the list', LIST_MS, async () => {
      const body = (await (await fetch(`${gateway}/v1/drills`)).json()) as { drills: { id: string }[] };
      return body.drills.some((d) => d.id === id) ? true : undefined;
    });
    const one = await fetch(`${gateway}/v1/drills/${id}`);
    expect(one.status).toBe(200);
    expect(await one.json()).toEqual({ id, state: 'done', report: report() });
  }, 180_000);

  it.skipIf(!DRILL_CLI)('POST starts a real `edgeq drill`, which ends with its report in the folder', async () => {
    expect(gateway).not.toBe('');
    const post = (body: unknown) => fetch(`${gateway}/v1/drills`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    // What the drill itself would refuse is a 400 here, and nothing is started: a failover on this 1-broker cell.
    const before = await readdir(join(dataDir, 'drills'));
    const refused = await post({ scenario: 'broker-kill', durationS: 5, rate: 20, seed: 1 });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { detail: string }).detail).toMatch(/that cell has 1 broker/);
    expect(await readdir(join(dataDir, 'drills'))).toEqual(before);
    // gateway-kill kills this very gateway: the drill runs on as its own process and saves its report.
    const res = await post({ scenario: 'gateway-kill', durationS: 4, rate: 20, seed: 1 });
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as { id: string };
    // 4 s of workload, the gateway's restart, converge and check on 2 loaded cores: 120 s.
    const done = await waitFor('the drill to end', 120_000, async () => {
      const d = (await fetch(`${gateway}/v1/drills/${id}`).then((r) => r.json(), () => null)) as { state: string; report?: DrillReport } | null;
      return d?.state === 'done' ? d : undefined;
    }, 500);
    expect(done.report).toMatchObject({ scenario: 'gateway-kill', verdict: 'pass', lost: 0 });
    expect(await readdir(join(dataDir, 'drills'))).toContain(`${id}.log`);
  }, 180_000);
});
