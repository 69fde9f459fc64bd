// Proves UDP routes over real loopback sockets take the link's latency (never less), its jitter spread, its seeded loss rate, its bandwidth within ±10%, its live changes and blackhole, and tail-drop beyond their queue bound.
import { createSocket, type Socket } from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { LinkEmulator, type LinkEmulatorOptions } from './index.ts';

interface Arrival {
  atMs: number;
  data: Buffer;
}

/** A UDP socket on 127.0.0.1 that records what it receives, and can wait for a count of datagrams. */
async function udpSink(): Promise<{ port: number; got: Arrival[]; waitCount(n: number, timeoutMs: number): Promise<void>; close(): Promise<void> }> {
  const socket = createSocket('udp4');
  const got: Arrival[] = [];
  const waiters: (() => void)[] = [];
  socket.on('message', (data) => {
    got.push({ atMs: performance.now(), data });
    for (const w of waiters.splice(0)) w();
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const waitCount = (n: number, timeoutMs: number): Promise<void> =>
    new Promise((resolve, reject) => {
      const deadline = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms with ${got.length} of ${n} datagrams`)), timeoutMs);
      const check = (): void => {
        if (got.length >= n) {
          clearTimeout(deadline);
          resolve();
        } else waiters.push(check);
      };
      check();
    });
  return { port: socket.address().port, got, waitCount, close: () => new Promise((r) => socket.close(() => r())) };
}

/** Sends `datagrams` to 127.0.0.1:`port` in small batches, so the kernel's receive buffer never overflows on loopback. */
async function sendAll(socket: Socket, port: number, datagrams: Buffer[], batch = 25): Promise<number[]> {
  const sentAt: number[] = [];
  for (let i = 0; i < datagrams.length; i += batch) {
    await Promise.all(
      datagrams.slice(i, i + batch).map(
        (d) =>
          new Promise<void>((resolve, reject) => {
            sentAt.push(performance.now());
            socket.send(d, port, '127.0.0.1', (err) => (err ? reject(err) : resolve()));
          }),
      ),
    );
    await new Promise((r) => setImmediate(r));
  }
  return sentAt;
}

const seq = (i: number, size = 8): Buffer => {
  const b = Buffer.alloc(Math.max(8, size));
  b.writeUInt32BE(i, 0);
  return b;
};
const seqOf = (b: Buffer): number => b.readUInt32BE(0);

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

async function rig(options: LinkEmulatorOptions) {
  const emulator = new LinkEmulator(options);
  const sink = await udpSink();
  const sender = createSocket('udp4');
  await new Promise<void>((r) => sender.bind(0, '127.0.0.1', r));
  open.push(emulator, sink, { close: () => new Promise((r) => sender.close(() => r())) });
  const route = await emulator.addRoute('a', 'b', { kind: 'udp', target: `127.0.0.1:${sink.port}` });
  return { emulator, sink, sender, route };
}

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

describe('UDP routes', () => {
  it('delay every datagram by at least the latency, and by little more', async () => {
    const { sink, sender, route } = await rig({ defaults: { latencyMs: 40 } });
    const n = 50;
    const sentAt: number[] = [];
    for (let i = 0; i < n; i++) {
      sentAt.push(...(await sendAll(sender, route.port, [seq(i)])));
      await new Promise((r) => setTimeout(r, 5));
    }
    await sink.waitCount(n, 10_000);
    const delays = sink.got.map((a) => a.atMs - sentAt[seqOf(a.data)]!);
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(40);
    // A loaded 2-core machine adds scheduling delay; the median stays close to the setting.
    expect(quantile(delays, 0.5)).toBeLessThan(40 + 15);
    expect(Math.max(...delays)).toBeLessThan(40 + 250);
  });

  it('spread delays over latency ± jitter', async () => {
    const { sink, sender, route } = await rig({ defaults: { latencyMs: 50, jitterMs: 30 } });
    const n = 200;
    const sentAt: number[] = [];
    for (let i = 0; i < n; i += 10) {
      sentAt.push(...(await sendAll(sender, route.port, Array.from({ length: 10 }, (_, k) => seq(i + k)))));
      await new Promise((r) => setTimeout(r, 2));
    }
    await sink.waitCount(n, 10_000);
    const delays = sink.got.map((a) => a.atMs - sentAt[seqOf(a.data)]!);
    // Uniform on [20, 80]: the 10th percentile is 26 ms and the 90th 74 ms.
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(20);
    expect(quantile(delays, 0.1)).toBeLessThan(38);
    expect(quantile(delays, 0.9)).toBeGreaterThan(62);
    expect(Math.max(...delays)).toBeLessThan(80 + 250);
    // Jitter reorders datagrams, as it does on a real path.
    expect(sink.got.some((a, i) => i > 0 && seqOf(a.data) < seqOf(sink.got[i - 1]!.data))).toBe(true);
  });

  it('drop lossRate of the datagrams, the same ones for the same seed', async () => {
    const n = 2000;
    const lossRate = 0.2;
    const run = async (seed: number): Promise<number[]> => {
      const { emulator, sink, sender, route } = await rig({ seed, defaults: { latencyMs: 0, lossRate } });
      await sendAll(sender, route.port, Array.from({ length: n }, (_, i) => seq(i)));
      await expect.poll(() => {
        const l = emulator.get('a', 'b')!;
        return l.datagramsForwarded + l.datagramsDroppedLoss;
      }, { timeout: 10_000 }).toBe(n);
      const after = emulator.get('a', 'b')!;
      await sink.waitCount(after.datagramsForwarded, 10_000);
      expect(sink.got).toHaveLength(after.datagramsForwarded);
      // Binomial(2000, 0.2): mean 400, sd 17.9; 4 sd either side.
      expect(after.datagramsDroppedLoss).toBeGreaterThan(400 - 72);
      expect(after.datagramsDroppedLoss).toBeLessThan(400 + 72);
      const received = new Set(sink.got.map((a) => seqOf(a.data)));
      return Array.from({ length: n }, (_, i) => i).filter((i) => !received.has(i));
    };
    const first = await run(42);
    const again = await run(42);
    expect(again).toEqual(first);
    expect(await run(43)).not.toEqual(first);
  });

  it('pace a link to its bandwidth within ±10%', async () => {
    const { sink, sender, route } = await rig({ defaults: { latencyMs: 0, bandwidthBytesPerSec: 100_000 } });
    const n = 300;
    const size = 1000;
    // 300 kB at 100 kB/s: about 3 s.
    await sendAll(sender, route.port, Array.from({ length: n }, (_, i) => seq(i, size)));
    await sink.waitCount(n, 10_000);
    const spanMs = sink.got.at(-1)!.atMs - sink.got[0]!.atMs;
    const rate = ((n - 1) * size * 1000) / spanMs;
    expect(rate).toBeGreaterThan(90_000);
    expect(rate).toBeLessThan(110_000);
  });

  it('take a live change for the next datagrams, and a blackhole drops until lifted', async () => {
    const { emulator, sink, sender, route } = await rig({ defaults: { latencyMs: 10 } });
    let sentAt = await sendAll(sender, route.port, [seq(0)]);
    await sink.waitCount(1, 5_000);
    expect(sink.got[0]!.atMs - sentAt[0]!).toBeLessThan(150);

    emulator.set('a', 'b', { latencyMs: 150 });
    sentAt = await sendAll(sender, route.port, [seq(1)]);
    await sink.waitCount(2, 5_000);
    expect(sink.got[1]!.atMs - sentAt[0]!).toBeGreaterThanOrEqual(150);

    emulator.set('a', 'b', { latencyMs: 5, blackhole: true });
    await sendAll(sender, route.port, [seq(2), seq(3)]);
    // Dropped on arrival: the counter is the event that shows they came and went nowhere.
    await expect.poll(() => emulator.get('a', 'b')!.datagramsDroppedBlackhole, { timeout: 5_000 }).toBe(2);
    emulator.set('a', 'b', { blackhole: false });
    await sendAll(sender, route.port, [seq(4)]);
    await sink.waitCount(3, 5_000);
    expect(sink.got.map((a) => seqOf(a.data))).toEqual([0, 1, 4]);
  });

  it('drop datagrams in flight when a blackhole starts', async () => {
    const { emulator, sink, sender, route } = await rig({ defaults: { latencyMs: 300 } });
    await sendAll(sender, route.port, [seq(0), seq(1)]);
    await expect.poll(() => emulator.get('a', 'b')!.datagramsQueued, { timeout: 5_000 }).toBe(2);
    emulator.set('a', 'b', { blackhole: true });
    await expect.poll(() => emulator.get('a', 'b')!.datagramsDroppedBlackhole, { timeout: 5_000 }).toBe(2);
    expect(sink.got).toHaveLength(0);
    expect(emulator.get('a', 'b')!.datagramsQueued).toBe(0);
  });

  it('tail-drop beyond the queue bound when a fast sender meets a slow link', async () => {
    const { emulator, sender, route } = await rig({ defaults: { latencyMs: 0, bandwidthBytesPerSec: 10_000 }, limits: { udpDatagramsQueuedPerRouteMax: 50 } });
    const n = 200;
    await sendAll(sender, route.port, Array.from({ length: n }, (_, i) => seq(i, 1000)));
    await expect.poll(() => {
      const l = emulator.get('a', 'b')!;
      return l.datagramsQueued + l.datagramsDroppedQueue + l.datagramsForwarded;
    }, { timeout: 5_000 }).toBe(n);
    const l = emulator.get('a', 'b')!;
    // 1000 B every 100 ms leave while the 200 arrive in a few ms: the queue holds 50, the rest are dropped.
    expect(l.datagramsQueued).toBeLessThanOrEqual(50);
    expect(l.datagramsDroppedQueue).toBeGreaterThanOrEqual(n - 50 - 5);
    expect(l.bytesQueued).toBe(l.datagramsQueued * 1000);
  });
});
