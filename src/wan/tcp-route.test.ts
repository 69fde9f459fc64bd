// Proves TCP routes over real loopback sockets: each direction takes its own link's latency and bandwidth (±10%), byte order survives jitter both ways, a blackhole holds one direction (new connections too) until lifted, reset and refused connections reach the client as resets, the connection bound holds, and a fast sender into a slow link is held back without growing the emulator's queue past its bound.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { LinkEmulator, type LinkEmulatorOptions } from './index.ts';

/** A TCP server on 127.0.0.1 that records each connection's bytes (and echoes them when asked). */
async function tcpTarget(options: { echo?: boolean } = {}) {
  const sockets: Socket[] = [];
  const received: Buffer[][] = [];
  const firstByteAtMs: number[] = [];
  const server: Server = createServer({ allowHalfOpen: true }, (s) => {
    const i = sockets.push(s) - 1;
    received[i] = [];
    s.on('data', (d: Buffer) => {
      firstByteAtMs[i] ??= performance.now();
      received[i]!.push(d);
      if (options.echo) s.write(d);
    });
    s.on('end', () => s.end());
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    sockets,
    firstByteAtMs,
    bytesOf: (i: number): Buffer => Buffer.concat(received[i] ?? []),
    total: (): number => received.flat().reduce((n, b) => n + b.length, 0),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** A client connection that records what comes back and how it ended. */
async function client(port: number) {
  const socket = connect({ host: '127.0.0.1', port, allowHalfOpen: true });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const chunks: Buffer[] = [];
  let error: NodeJS.ErrnoException | null = null;
  socket.on('data', (d: Buffer) => chunks.push(d));
  socket.on('error', (err) => (error = err));
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  return { socket, closed, bytes: () => Buffer.concat(chunks), error: () => error };
}

/** Resolves once `cond()` holds (checked every `everyMs`: sockets and counters have no event for "this much arrived"); rejects after `timeoutMs`. */
function until(cond: () => boolean, what: string, timeoutMs: number, everyMs = 10): Promise<void> {
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + timeoutMs;
    const tick = (): void => {
      if (cond()) return resolve();
      if (Date.now() > deadline) return reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      setTimeout(tick, everyMs);
    };
    tick();
  });
}

const open: { close(): Promise<void> }[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await Promise.all(open.splice(0).map((o) => o.close()));
});

async function rig(options: LinkEmulatorOptions, target: { echo?: boolean } = {}) {
  const emulator = new LinkEmulator(options);
  const sink = await tcpTarget(target);
  open.push(emulator, sink);
  const route = await emulator.addRoute('a', 'b', { kind: 'tcp', target: `127.0.0.1:${sink.port}` });
  const dial = async () => {
    const c = await client(route.port);
    sockets.push(c.socket);
    return c;
  };
  return { emulator, sink, route, dial };
}

const record = (i: number): string => `${String(i).padStart(7, '0')}\n`;

describe('TCP routes', () => {
  it('give each direction its own link latency', async () => {
    const { emulator, sink, dial } = await rig({ defaults: { latencyMs: 10 } });
    emulator.set('a', 'b', { latencyMs: 100 });
    const c = await dial();
    const t0 = performance.now();
    c.socket.write('ping');
    await until(() => sink.sockets.length === 1 && sink.bytesOf(0).length === 4, 'the ping', 5_000);
    expect(sink.firstByteAtMs[0]! - t0).toBeGreaterThanOrEqual(100);
    const t1 = performance.now();
    sink.sockets[0]!.write('pong');
    await until(() => c.bytes().toString() === 'pong', 'the pong', 5_000);
    const backMs = performance.now() - t1;
    expect(backMs).toBeGreaterThanOrEqual(10);
    expect(backMs).toBeLessThan(100);
  });

  it('keep byte order under jitter in both directions', async () => {
    const { sink, dial } = await rig({ defaults: { latencyMs: 15, jitterMs: 15 } }, { echo: true });
    const c = await dial();
    let sent = '';
    // 200 writes of 10 records, each in its own turn of the loop, so they reach the emulator as separate reads.
    for (let w = 0; w < 200; w++) {
      const chunk = Array.from({ length: 10 }, (_, k) => record(w * 10 + k)).join('');
      sent += chunk;
      c.socket.write(chunk);
      await new Promise((r) => setImmediate(r));
    }
    await until(() => c.bytes().length === sent.length, 'the echo of every record', 15_000);
    expect(sink.bytesOf(0).toString()).toBe(sent);
    expect(c.bytes().toString()).toBe(sent);
  });

  it('pace a direction to its link bandwidth within ±10%', async () => {
    const { sink, dial } = await rig({ defaults: { latencyMs: 0, bandwidthBytesPerSec: 100_000 } });
    const c = await dial();
    const total = 300_000;
    const arrivals: { atMs: number; bytes: number }[] = [];
    // Watch the target's arrivals from the first one on.
    const watch = new Promise<void>((resolve) => {
      const attach = (): void => {
        const s = sink.sockets[0];
        if (s === undefined) return void setTimeout(attach, 5);
        let got = 0;
        s.on('data', (d: Buffer) => {
          arrivals.push({ atMs: performance.now(), bytes: d.length });
          got += d.length;
          if (got >= total) resolve();
        });
      };
      attach();
    });
    c.socket.write(Buffer.alloc(total, 7));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([watch, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timed out waiting for the 300 kB')), 10_000)))]);
    clearTimeout(timer);
    const spanMs = arrivals.at(-1)!.atMs - arrivals[0]!.atMs;
    const rate = ((total - arrivals[0]!.bytes) * 1000) / spanMs;
    expect(rate).toBeGreaterThan(90_000);
    expect(rate).toBeLessThan(110_000);
  });

  it('hold one direction during a blackhole while the other flows, then deliver what was held', async () => {
    const { emulator, sink, dial } = await rig({ defaults: { latencyMs: 10 } });
    const c = await dial();
    c.socket.write('before;');
    await until(() => sink.bytesOf(0).toString() === 'before;', 'the first bytes', 5_000);
    emulator.set('a', 'b', { blackhole: true });
    c.socket.write('held;');
    // The reverse direction (b → a) is a different link and keeps working.
    sink.sockets[0]!.write('answer');
    await until(() => c.bytes().toString() === 'answer', 'the answer on the reverse link', 5_000);
    await until(() => emulator.get('a', 'b')!.bytesQueued === 5, 'the held bytes on the link', 5_000);
    // Absence cannot be awaited: give the held bytes twenty latencies to (wrongly) arrive.
    await new Promise((r) => setTimeout(r, 200));
    expect(sink.bytesOf(0).toString()).toBe('before;');
    emulator.set('a', 'b', { blackhole: false });
    await until(() => sink.bytesOf(0).toString() === 'before;held;', 'the held bytes after the lift', 5_000);
    expect(emulator.get('a', 'b')!.bytesQueued).toBe(0);
  });

  it('accept connections during a blackhole but connect them to the target only when it lifts', async () => {
    const { emulator, sink, dial } = await rig({ defaults: { latencyMs: 5 } });
    emulator.set('b', 'a', { blackhole: true });
    const c = await dial();
    c.socket.write('hello');
    await until(() => emulator.get('a', 'b')!.connectionsOpen === 1, 'the accepted connection', 5_000);
    await new Promise((r) => setTimeout(r, 150));
    expect(sink.sockets).toHaveLength(0);
    emulator.set('b', 'a', { blackhole: false });
    await until(() => sink.bytesOf(0).toString() === 'hello', 'the bytes after the lift', 5_000);
  });

  it('reset the connections crossing a link when asked, and count them', async () => {
    const { emulator, sink, dial } = await rig({ defaults: { latencyMs: 5 } });
    const c = await dial();
    c.socket.write('x');
    await until(() => sink.bytesOf(0).length === 1, 'the byte', 5_000);
    // Reset asked on the reverse link: the connection crosses it too.
    emulator.set('b', 'a', { blackhole: true, reset: true });
    await c.closed;
    expect(c.error()?.code).toBe('ECONNRESET');
    expect(emulator.get('b', 'a')!.connectionsReset).toBe(1);
    await until(() => emulator.get('a', 'b')!.connectionsOpen === 0, 'the connection gone', 5_000);
    await until(() => sink.sockets[0]!.destroyed, 'the target side closed', 5_000);
  });

  it('pass FIN after the bytes before it, both ways', async () => {
    const { sink, dial } = await rig({ defaults: { latencyMs: 20 } }, { echo: true });
    const c = await dial();
    c.socket.end('last words');
    await c.closed;
    expect(c.bytes().toString()).toBe('last words');
    expect(sink.bytesOf(0).toString()).toBe('last words');
  });

  it('reset clients when the target refuses, and beyond the connection bound', async () => {
    const emulator = new LinkEmulator({ defaults: { latencyMs: 1 }, limits: { connectionsPerRouteMax: 2 } });
    open.push(emulator);
    const sink = await tcpTarget();
    open.push(sink);
    const dead = await emulator.addRoute('a', 'b', { kind: 'tcp', target: '127.0.0.1:1' });
    const refused = await client(dead.port);
    await refused.closed;
    expect(refused.error()?.code).toBe('ECONNRESET');
    expect(emulator.get('a', 'b')!.connectionsFailed).toBe(1);

    const live = await emulator.addRoute('a', 'b', { kind: 'tcp', target: `127.0.0.1:${sink.port}` });
    const kept = [await client(live.port), await client(live.port)];
    sockets.push(...kept.map((k) => k.socket));
    await until(() => sink.sockets.length === 2, 'two connections at the target', 5_000);
    // Reset on accept: the client may see the reset before or after its connect completes.
    const third = await client(live.port).catch((err: NodeJS.ErrnoException) => err);
    if (!(third instanceof Error)) await third.closed;
    else expect(third.code).toBe('ECONNRESET');
    expect(emulator.get('a', 'b')!.connectionsRejected).toBe(1);
    expect(sink.sockets).toHaveLength(2);
  });

  it('hold a fast sender back without growing the queue past its bound', async () => {
    const boundBytes = 256 * 1024;
    const { emulator, sink, dial } = await rig({
      defaults: { latencyMs: 0, bandwidthBytesPerSec: 100_000 },
      limits: { tcpQueuedBytesPerDirectionMax: boundBytes, tcpResumeBytes: boundBytes / 2 },
    });
    const c = await dial();
    const attemptBytesMax = 64 * 1024 * 1024;
    const chunk = Buffer.alloc(64 * 1024, 1);
    let written = 0;
    let queuedMax = 0;
    const sample = setInterval(() => (queuedMax = Math.max(queuedMax, emulator.get('a', 'b')!.bytesQueued)), 5);
    const stopAt = Date.now() + 2_000;
    try {
      while (written < attemptBytesMax && Date.now() < stopAt) {
        const ok = c.socket.write(chunk);
        written += chunk.length;
        queuedMax = Math.max(queuedMax, emulator.get('a', 'b')!.bytesQueued);
        if (!ok) {
          const left = stopAt - Date.now();
          await Promise.race([new Promise((r) => c.socket.once('drain', r)), new Promise((r) => setTimeout(r, Math.max(0, left)))]);
        }
      }
    } finally {
      clearInterval(sample);
    }
    // 2 s at 100 kB/s carries ~200 kB: the sender is stopped by its kernel buffers long before 64 MiB,
    // and the emulator never holds more than its bound plus one socket read (64 KiB).
    expect(written).toBeLessThan(attemptBytesMax);
    expect(queuedMax).toBeGreaterThan(boundBytes / 2);
    expect(queuedMax).toBeLessThanOrEqual(boundBytes + 64 * 1024);
    // Lift the limit: everything written arrives (nothing was dropped, the paused source resumed).
    emulator.set('a', 'b', { bandwidthBytesPerSec: 0 });
    await until(() => c.socket.writableLength === 0 && sink.total() === written, `all ${written} bytes at the target`, 20_000);
  });
});
