// Proves the overload bench's load generator: latency counts from each request's due time (a client that falls behind, or a server that queues, shows in it), the open loop sends what is due and drops beyond its in-flight bound, admitted requests land in their send-time windows; the sender sorts answers (2xx, 429, 503 by code, timeouts, resets) and never opens more sockets than its bound; and a gateway without GET /v1/limiter or the quota API fails the controller check clearly.
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EdgeqError } from '../../src/core/index.ts';
import { checkLimiter, putQuota } from './overload-deployment.ts';
import { admittedSentPerSec, destroyStats, goodputPerSec, mergeStats, percentileMs, runOpenLoop } from './overload-load.ts';
import { GatewaySender, type Answer, type Sender } from './overload-sender.ts';

const OK: Answer = { outcome: 'ok', status: 200, code: null };

/** A sender answering after `delayMs`, as many at once as asked. */
function delayed(delayMs: number): Sender {
  return { send: () => new Promise((r) => setTimeout(() => r(OK), delayMs)), close: () => {} };
}

/** A server that serves one request at a time, each taking `serviceMs`. */
function serial(serviceMs: number): Sender {
  let freeAt = 0;
  return {
    send: () => {
      const start = Math.max(performance.now(), freeAt);
      freeAt = start + serviceMs;
      return new Promise((r) => setTimeout(() => r(OK), freeAt - performance.now()));
    },
    close: () => {},
  };
}

describe('runOpenLoop', () => {
  it('sends every request due, and measures from the due time', async () => {
    const [s] = await runOpenLoop([{ name: 'x', sender: delayed(20), ratePerSec: 500 }], { durationMs: 400 });
    expect(s!.due).toBe(200);
    expect(s!.sent).toBe(200);
    expect(s!.ok).toBe(200);
    // 20 ms of service, plus timer granularity on a busy machine.
    expect(percentileMs(s!.latency, 50)!).toBeGreaterThanOrEqual(19);
    expect(percentileMs(s!.latency, 50)!).toBeLessThan(100);
    destroyStats([s!]);
  });

  it('shows a server that falls behind in the latency (no coordinated omission)', async () => {
    // 200/s offered to a server of 100/s for 0.5 s: request k is due at 5k ms and done near 10(k+1) ms,
    // so the last of the 100 waits ~500 ms; a closed loop would have reported ~10 ms.
    const [s] = await runOpenLoop([{ name: 'x', sender: serial(10), ratePerSec: 200 }], { durationMs: 500 });
    expect(s!.ok).toBe(100);
    expect(percentileMs(s!.latency, 99)!).toBeGreaterThan(400);
    expect(percentileMs(s!.latency, 50)!).toBeGreaterThan(200);
    // The server answers 100/s: about 50 answers fall within the 0.5 s run, so goodput is its
    // 100/s, not the 200/s a count of every admission over the run's length would claim; by send
    // time every request of the run was admitted (200/s).
    expect(goodputPerSec(s!)).toBeGreaterThan(80);
    expect(goodputPerSec(s!)).toBeLessThanOrEqual(110);
    expect(admittedSentPerSec(s!)).toBe(200);
    destroyStats([s!]);
  });

  it('counts the client\'s own lateness: requests sent late are late from their due time', async () => {
    // The event loop is blocked for 150 ms early in the run: the requests due then go out late.
    setTimeout(() => {
      const until = performance.now() + 150;
      while (performance.now() < until);
    }, 30);
    const [s] = await runOpenLoop([{ name: 'x', sender: delayed(1), ratePerSec: 200 }], { durationMs: 500 });
    expect(s!.ok).toBe(100);
    expect(percentileMs(s!.latency, 99)!).toBeGreaterThan(100);
    destroyStats([s!]);
  });

  it('drops what is due beyond its in-flight bound, and waits for every answer', async () => {
    const held: (() => void)[] = [];
    const stuck: Sender = { send: () => new Promise((r) => held.push(() => r(OK))), close: () => {} };
    const run = runOpenLoop([{ name: 'x', sender: stuck, ratePerSec: 500 }], { durationMs: 100, inflightMax: 10 });
    // Release the held requests only once the schedule is over: the run must wait for them.
    setTimeout(() => held.forEach((f) => f()), 300);
    const [s] = await run;
    expect(s!.due).toBe(50);
    expect(s!.sent).toBe(10);
    expect(s!.dropped).toBe(40);
    expect(s!.ok).toBe(10);
    destroyStats([s!]);
  });

  it('counts admitted requests in the window they were sent in, and merges flows', async () => {
    const stats = await runOpenLoop(
      [
        { name: 'a', sender: delayed(1), ratePerSec: 100 },
        { name: 'b', sender: delayed(1), ratePerSec: 100 },
      ],
      { durationMs: 1000, windowMs: 250 },
    );
    const all = mergeStats('all', stats);
    expect(all.ok).toBe(200);
    expect(all.okByWindow.length).toBe(4);
    expect(all.okByWindow.reduce((a, b) => a + b, 0)).toBe(200);
    // 50 per window, give or take requests a stall of this loaded machine moves across a boundary.
    for (const n of all.okByWindow) expect(Math.abs(n - 50)).toBeLessThanOrEqual(12);
    expect(all.offeredPerSec).toBe(200);
    destroyStats([...stats, all]);
  });
});

/** A fake gateway whose answer to a produce is set by `mode`. */
let mode: 'ok' | '429' | '503-capacity' | '503-replicas' | 'hang' | 'reset' | 'slow' = 'ok';
let limiter: { status: number; body: string } = { status: 404, body: '{"code":"NOT_FOUND"}' };
let open = 0;
let openMax = 0;
let server: http.Server;
let gateway: string;
const sockets = new Set<Socket>();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url?.startsWith('/v1/limiter')) {
        res.writeHead(limiter.status, { 'content-type': 'application/json' }).end(limiter.body);
        return;
      }
      if (req.url?.startsWith('/v1/quotas/')) {
        res.writeHead(404, { 'content-type': 'application/problem+json' }).end('{"code":"NOT_FOUND","detail":"no route"}');
        return;
      }
      const problem = (status: number, code: string) => res.writeHead(status, { 'content-type': 'application/problem+json' }).end(JSON.stringify({ status, code }));
      if (mode === 'ok') res.writeHead(200, { 'content-type': 'application/json' }).end('{"offsets":[{"partition":0,"offset":1}]}');
      else if (mode === '429') problem(429, 'QUOTA_EXCEEDED');
      else if (mode === '503-capacity') problem(503, 'TEMPORARY_REDUCED_CAPACITY');
      else if (mode === '503-replicas') problem(503, 'NOT_ENOUGH_REPLICAS');
      else if (mode === 'reset') req.socket.destroy();
      else if (mode === 'slow') setTimeout(() => res.writeHead(200).end('{}'), 50);
      // 'hang': never answers
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    open++;
    openMax = Math.max(openMax, open);
    s.once('close', () => {
      open--;
      sockets.delete(s);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  gateway = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise<void>((r) => server.close(() => r()));
});

describe('GatewaySender', () => {
  it('sorts answers: 2xx, 429, 503 by its code, timeouts and resets', async () => {
    const sender = new GatewaySender({ gateway, topic: 't', apiKey: 'k', valueBytes: 10, timeoutMs: 300 });
    try {
      const cases: [typeof mode, Answer][] = [
        ['ok', { outcome: 'ok', status: 200, code: null }],
        ['429', { outcome: 'throttled', status: 429, code: 'QUOTA_EXCEEDED' }],
        ['503-capacity', { outcome: 'throttled', status: 503, code: 'TEMPORARY_REDUCED_CAPACITY' }],
        ['503-replicas', { outcome: 'other', status: 503, code: 'NOT_ENOUGH_REPLICAS' }],
        ['hang', { outcome: 'other', status: 0, code: 'TIMEOUT' }],
        ['reset', { outcome: 'other', status: 0, code: 'SOCKET_ERROR' }],
      ];
      for (const [m, expected] of cases) {
        mode = m;
        expect(await sender.send(), m).toEqual(expected);
      }
    } finally {
      sender.close();
      mode = 'ok';
    }
  });

  it('never opens more sockets than its bound; the rest wait their turn', async () => {
    mode = 'slow';
    openMax = 0;
    const sender = new GatewaySender({ gateway, topic: 't', apiKey: null, valueBytes: 10, sockets: 4 });
    try {
      const t0 = performance.now();
      const answers = await Promise.all(Array.from({ length: 20 }, () => sender.send()));
      expect(answers.every((a) => a.outcome === 'ok')).toBe(true);
      expect(openMax).toBeLessThanOrEqual(4);
      // 20 requests of 50 ms over 4 sockets: at least 5 rounds.
      expect(performance.now() - t0).toBeGreaterThanOrEqual(5 * 50 - 5);
    } finally {
      sender.close();
      mode = 'ok';
    }
  });
});

describe('the controller check', () => {
  it('fails clearly when the gateway has no limiter, and passes `none` without one', async () => {
    limiter = { status: 404, body: '{"code":"NOT_FOUND"}' };
    await expect(checkLimiter(gateway, 'edgeq', null)).rejects.toThrow(/does not run a limiter: GET \/v1\/limiter answered 404/);
    await expect(checkLimiter(gateway, 'seeds', null)).rejects.toBeInstanceOf(EdgeqError);
    await expect(checkLimiter(gateway, 'none', null)).resolves.toBeUndefined();
  });

  it('refuses a limiter that names another controller than the one asked for', async () => {
    limiter = { status: 200, body: JSON.stringify({ controller: 'seeds', capacityPerSec: 1000, binding: 'latency', tenants: [] }) };
    await expect(checkLimiter(gateway, 'seeds', null)).resolves.toBeUndefined();
    await expect(checkLimiter(gateway, 'edgeq', null)).rejects.toThrow(/EDGEQ_LIMITER=edgeq was asked for, but GET \/v1\/limiter names "seeds"/);
    await expect(checkLimiter(gateway, 'none', null)).rejects.toThrow(/EDGEQ_LIMITER=none/);
    limiter = { status: 200, body: JSON.stringify({ capacityPerSec: 'lots' }) };
    await expect(checkLimiter(gateway, 'edgeq', null)).rejects.toThrow(/numeric capacityPerSec/);
  });

  it('fails clearly when the gateway has no quota API', async () => {
    await expect(putQuota(gateway, null, 'a', 't', 100, 1_000_000)).rejects.toThrow(/PUT \/v1\/quotas\/a\/t answered 404/);
  });
});
