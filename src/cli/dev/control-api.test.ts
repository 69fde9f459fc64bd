// Proves the dev control API lists and changes links and lists processes, refuses bad bodies (bad JSON, unknown fields, wrong types, out-of-range values, oversized) with 400/413 problem+json naming the field and changes nothing, answers 404 for unknown links and routes, and that its server binds loopback only and reports a taken port as a typed error.
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { EdgeqError } from '../../core/index.ts';
import { LinkEmulator } from '../../wan/index.ts';
import { CONTROL_BODY_BYTES_MAX, CONTROL_PORT_DEFAULT, controlPortFrom, createControlApp, startControlApi, type DevProcess } from './control-api.ts';

const PROCESSES: DevProcess[] = [
  { region: 'us-east', role: 'arbiter', name: 'us-east/arbiter', pid: 101, held: false },
  { region: 'us-east', role: 'broker', name: 'us-east/broker-1', pid: 102, held: false },
  { region: 'eu-west', role: 'gateway', name: 'eu-west/gateway', pid: null, held: true },
];

function rig() {
  const emulator = new LinkEmulator({ defaults: { latencyMs: 25 } });
  emulator.link('us-east', 'eu-west');
  emulator.link('eu-west', 'us-east');
  const app = createControlApp({ emulator, processes: () => PROCESSES });
  const put = (path: string, body: string, headers: Record<string, string> = { 'content-type': 'application/json' }) => app.request(path, { method: 'PUT', body, headers });
  return { emulator, app, put };
}

async function problemOf(res: Response): Promise<Record<string, unknown>> {
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  return (await res.json()) as Record<string, unknown>;
}

describe('control API routes', () => {
  it('lists the directed links with settings and counters', async () => {
    const { app } = rig();
    const res = await app.request('/v1/dev/links');
    expect(res.status).toBe(200);
    const { links } = (await res.json()) as { links: Record<string, unknown>[] };
    expect(links.map((l) => `${l['from']}>${l['to']}`)).toEqual(['eu-west>us-east', 'us-east>eu-west']);
    expect(links[0]).toMatchObject({ latencyMs: 25, jitterMs: 0, lossRate: 0, bandwidthBytesPerSec: 0, blackhole: false, bytesForwarded: 0, datagramsForwarded: 0, routes: [] });
  });

  it('changes any subset of a link and answers with the link as it is now', async () => {
    const { app, put, emulator } = rig();
    const res = await put('/v1/dev/links/us-east/eu-west', JSON.stringify({ latencyMs: 80, blackhole: true }));
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ from: 'us-east', to: 'eu-west', latencyMs: 80, jitterMs: 0, blackhole: true });
    expect(emulator.get('us-east', 'eu-west')).toMatchObject({ latencyMs: 80, blackhole: true });
    // The reverse direction is another link, untouched.
    expect(emulator.get('eu-west', 'us-east')).toMatchObject({ latencyMs: 25, blackhole: false });
    const again = await put('/v1/dev/links/us-east/eu-west', JSON.stringify({ jitterMs: 5, lossRate: 0.25, bandwidthBytesPerSec: 1_000_000, blackhole: false, reset: true }));
    expect(await again.json()).toMatchObject({ latencyMs: 80, jitterMs: 5, lossRate: 0.25, bandwidthBytesPerSec: 1_000_000, blackhole: false, connectionsReset: 0 });
    // curl -d sends form-urlencoded by default: the body is read as JSON whatever the header.
    const plain = await put('/v1/dev/links/us-east/eu-west', '{"latencyMs": 10}', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(plain.status).toBe(200);
    const one = await app.request('/v1/dev/links/us-east/eu-west');
    expect(await one.json()).toMatchObject({ latencyMs: 10 });
  });

  const bad: [string, string, string | null][] = [
    ['bad JSON', '{"latencyMs": ', null],
    ['an array', '[1]', null],
    ['null', 'null', null],
    ['an unknown field', '{"latencyMs": 10, "latency": 10}', 'latency'],
    ['a string latency', '{"latencyMs": "10"}', 'latencyMs'],
    ['a negative latency', '{"latencyMs": -1}', 'latencyMs'],
    ['a huge latency', '{"latencyMs": 1e309}', 'latencyMs'],
    ['a negative jitter', '{"jitterMs": -3}', 'jitterMs'],
    ['loss above 1', '{"lossRate": 1.5}', 'lossRate'],
    ['loss below 0', '{"lossRate": -0.1}', 'lossRate'],
    ['a non-integer bandwidth', '{"bandwidthBytesPerSec": 10.5}', 'bandwidthBytesPerSec'],
    ['a negative bandwidth', '{"bandwidthBytesPerSec": -10}', 'bandwidthBytesPerSec'],
    ['a string blackhole', '{"blackhole": "true"}', 'blackhole'],
    ['a numeric reset', '{"reset": 1}', 'reset'],
    ['a good field before a bad one', '{"blackhole": true, "lossRate": 7}', 'lossRate'],
  ];
  it.each(bad)('refuses %s with 400 problem+json naming the field, changing nothing', async (_what, body, field) => {
    const { put, emulator } = rig();
    const before = emulator.links();
    const res = await put('/v1/dev/links/us-east/eu-west', body);
    expect(res.status).toBe(400);
    const p = await problemOf(res);
    expect(p).toMatchObject({ status: 400, code: 'INVALID_ARGUMENT', type: 'urn:edgeq:error:INVALID_ARGUMENT', retriable: false });
    if (field !== null) {
      expect(p['field']).toBe(field);
      expect(p['detail']).toContain(field);
    }
    expect(emulator.links()).toEqual(before);
  });

  it('refuses an oversized body with 413, changing nothing', async () => {
    const { put, emulator } = rig();
    const before = emulator.links();
    const res = await put('/v1/dev/links/us-east/eu-west', JSON.stringify({ latencyMs: 1, pad: 'x'.repeat(CONTROL_BODY_BYTES_MAX) }));
    expect(res.status).toBe(413);
    expect(await problemOf(res)).toMatchObject({ code: 'MESSAGE_TOO_LARGE' });
    expect(emulator.links()).toEqual(before);
  });

  it('answers 404 for an unknown link or route, and 400 for a path that is not a region', async () => {
    const { app, put } = rig();
    const unknown = await put('/v1/dev/links/us-east/ap-south', '{"latencyMs": 1}');
    expect(unknown.status).toBe(404);
    expect(await problemOf(unknown)).toMatchObject({ code: 'NOT_FOUND' });
    expect((await app.request('/v1/dev/links/us-east/ap-south')).status).toBe(404);
    expect((await app.request('/v1/dev/nothing')).status).toBe(404);
    const notRegion = await put('/v1/dev/links/US_EAST/eu-west', '{"latencyMs": 1}');
    expect(notRegion.status).toBe(400);
    expect(await problemOf(notRegion)).toMatchObject({ field: 'from' });
  });

  it('lists every process with region, role, name and pid', async () => {
    const { app } = rig();
    const res = await app.request('/v1/dev/processes');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ processes: PROCESSES });
  });

  it('holds and releases a process by name, and refuses a bad signal, an unknown field or name, changing nothing', async () => {
    const emulator = new LinkEmulator();
    const calls: string[] = [];
    const procs: DevProcess[] = PROCESSES.map((p) => ({ ...p }));
    const app = createControlApp({
      emulator,
      processes: () => procs,
      hold: async (name, signal) => {
        calls.push(`hold ${name} ${signal}`);
        Object.assign(procs.find((p) => p.name === name)!, { pid: null, held: true });
      },
      release: async (name) => {
        calls.push(`release ${name}`);
        Object.assign(procs.find((p) => p.name === name)!, { pid: 999, held: false });
      },
    });
    const post = (path: string, body?: string) => app.request(path, { method: 'POST', ...(body === undefined ? {} : { body }) });
    const held = await post('/v1/dev/processes/us-east/broker-1/hold');
    expect(held.status).toBe(200);
    expect(await held.json()).toMatchObject({ name: 'us-east/broker-1', pid: null, held: true });
    expect((await post('/v1/dev/processes/us-east/arbiter/hold', '{"signal":"SIGTERM"}')).status).toBe(200);
    const released = await post('/v1/dev/processes/us-east/broker-1/release');
    expect(await released.json()).toMatchObject({ name: 'us-east/broker-1', pid: 999, held: false });
    expect(calls).toEqual(['hold us-east/broker-1 SIGKILL', 'hold us-east/arbiter SIGTERM', 'release us-east/broker-1']);
    for (const [path, body, status, field] of [
      ['/v1/dev/processes/us-east/broker-1/hold', '{"signal":"SIGSTOP"}', 400, 'signal'],
      ['/v1/dev/processes/us-east/broker-1/hold', '{"sig":"SIGKILL"}', 400, 'sig'],
      ['/v1/dev/processes/us-east/broker-1/hold', '[1]', 400, undefined],
      ['/v1/dev/processes/us-east/broker-1/hold', '{nope', 400, undefined],
      ['/v1/dev/processes/us-east/broker-9/hold', undefined, 404, undefined],
      ['/v1/dev/processes/mars/gateway/release', undefined, 404, undefined],
    ] as const) {
      const res = await post(path, body);
      expect(res.status, `${path} ${body}`).toBe(status);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      if (field !== undefined) expect((await problemOf(res))['field']).toBe(field);
    }
    expect(calls).toHaveLength(3);
  });

  it('describes the deployment, and says so when it cannot hold, release or describe', async () => {
    const deployment = { dataDir: '/d', faultStorage: 'none' as const, regions: [{ region: 'us-east', gateway: 'http://127.0.0.1:1', gatewayName: 'us-east/gateway', arbiter: { name: 'us-east/arbiter', address: '127.0.0.1:2', dataDir: '/d/us-east/arbiter' }, brokers: [] }] };
    const withIt = createControlApp({ emulator: new LinkEmulator(), processes: () => PROCESSES, deployment: () => deployment });
    expect(await (await withIt.request('/v1/dev/deployment')).json()).toEqual(deployment);
    const { app } = rig();
    for (const [method, path] of [['GET', '/v1/dev/deployment'], ['POST', '/v1/dev/processes/us-east/broker-1/hold'], ['POST', '/v1/dev/processes/us-east/broker-1/release']] as const) {
      const res = await app.request(path, { method });
      expect(res.status, path).toBe(404);
      expect((await problemOf(res))['detail']).toMatch(/cannot/);
    }
  });
});

describe('startControlApi', () => {
  const running: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((r) => r.close()));
  });

  it('serves on 127.0.0.1 and closes', async () => {
    const emulator = new LinkEmulator();
    emulator.link('a', 'b');
    const api = await startControlApi({ port: 0, emulator, processes: () => [] });
    running.push(api);
    expect(api.host).toBe('127.0.0.1');
    expect(api.url).toBe(`http://127.0.0.1:${api.port}`);
    const res = await fetch(`${api.url}/v1/dev/links/a/b`, { method: 'PUT', body: '{"lossRate": 0.5}' });
    expect(res.status).toBe(200);
    expect(emulator.get('a', 'b')!.lossRate).toBe(0.5);
    const bad = await fetch(`${api.url}/v1/dev/links/a/b`, { method: 'PUT', body: '{"lossRate": 5}' });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toBe('application/problem+json');
    await api.close();
    running.length = 0;
    await expect(fetch(`${api.url}/v1/dev/links`)).rejects.toThrow();
  });

  it('reports a taken port, a bad port and a non-loopback host as INVALID_CONFIG', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    running.push({ close: () => new Promise((r) => blocker.close(() => r())) });
    const port = (blocker.address() as { port: number }).port;
    const deps = { emulator: new LinkEmulator(), processes: () => [] };
    const taken = await startControlApi({ port, ...deps }).catch((e: unknown) => e);
    expect(taken).toBeInstanceOf(EdgeqError);
    expect(taken).toMatchObject({ code: 'INVALID_CONFIG', details: { key: 'controlPort', port } });
    expect((taken as Error).message).toMatch(/in use/);
    await expect(startControlApi({ port: 70_000, ...deps })).rejects.toMatchObject({ code: 'INVALID_CONFIG', details: { key: 'controlPort' } });
    await expect(startControlApi({ port: 0, host: '0.0.0.0', ...deps })).rejects.toMatchObject({ code: 'INVALID_CONFIG', details: { key: 'controlHost' } });
  });
});

describe('controlPortFrom', () => {
  it('takes the flag, else EDGEQ_CONTROL_PORT, else 8090, and names the bad source', () => {
    expect(controlPortFrom(undefined, {})).toBe(CONTROL_PORT_DEFAULT);
    expect(controlPortFrom(undefined, { EDGEQ_CONTROL_PORT: '9000' })).toBe(9000);
    expect(controlPortFrom('9001', { EDGEQ_CONTROL_PORT: '9000' })).toBe(9001);
    for (const [flag, env, key] of [
      ['0', {}, '--control-port'],
      ['70000', {}, '--control-port'],
      ['80x', {}, '--control-port'],
      [undefined, { EDGEQ_CONTROL_PORT: '' }, 'EDGEQ_CONTROL_PORT'],
      [undefined, { EDGEQ_CONTROL_PORT: '-1' }, 'EDGEQ_CONTROL_PORT'],
    ] as const) {
      expect(() => controlPortFrom(flag, env)).toThrow(EdgeqError);
      try {
        controlPortFrom(flag, env);
      } catch (err) {
        expect(err).toMatchObject({ code: 'INVALID_CONFIG', details: { key } });
      }
    }
  });
});
