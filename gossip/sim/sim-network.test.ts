// Proves the simulated network: delivery after the link's delay, loss at the link's rate and
// deterministic from the seed, partitions both ways until healed, a slow member's handling delay
// in arrival order, and push-pull exchanges that time out across a partition and are refused by
// a stopped endpoint.
import { describe, expect, it } from 'vitest';
import type { EdgeqError } from '../../src/core/index.ts';
import type { MeshTransport } from '../transport/transport.ts';
import { SimClock } from './sim-clock.ts';
import { SimNetwork } from './sim-network.ts';

const A = '10.0.0.1:1';
const B = '10.0.0.2:1';

async function pair(seed: number, lossRate = 0) {
  const clock = new SimClock();
  const net = new SimNetwork({ clock, seed, defaults: { delayMs: 25, lossRate } });
  const got: { at: number; bytes: string; from: string }[] = [];
  const a = net.endpoint(A);
  const b = net.endpoint(B);
  await a.start({ onPacket: () => {}, onStream: (req, _f, reply) => reply(Buffer.from(`re:${req}`)) }, { frameBytesMax: 1000 });
  await b.start({ onPacket: (bytes, from) => got.push({ at: clock.monotonicMs(), bytes: String(bytes), from }), onStream: (req, _f, reply) => reply(Buffer.from(`re:${req}`)) }, { frameBytesMax: 1000 });
  return { clock, net, a, b, got };
}

function exchange(t: MeshTransport, to: string, req: string, timeoutMs: number): { result?: { err: EdgeqError | null; res: string | null; at: number } } {
  const box: { result?: { err: EdgeqError | null; res: string | null; at: number } } = {};
  t.exchange(to, Buffer.from(req), timeoutMs, (err, res) => (box.result = { err, res: res ? String(res) : null, at: -1 }));
  return box;
}

describe('SimNetwork', () => {
  it('delivers after the link delay, from the sender address', async () => {
    const { clock, a, got } = await pair(1);
    a.sendPacket(B, Buffer.from('hi'));
    clock.advance(24);
    expect(got).toEqual([]);
    clock.advance(1);
    expect(got).toEqual([{ at: 25, bytes: 'hi', from: A }]);
  });

  it('loses packets at the link rate, the same ones for the same seed', async () => {
    const run = async (seed: number) => {
      const { clock, a, got } = await pair(seed, 0.2);
      for (let i = 0; i < 2000; i++) a.sendPacket(B, Buffer.from(String(i)));
      clock.advance(100);
      return got.map((g) => g.bytes);
    };
    const first = await run(7);
    expect(first.length).toBeGreaterThan(1500);
    expect(first.length).toBeLessThan(1700);
    expect(await run(7)).toEqual(first);
    expect(await run(8)).not.toEqual(first);
  });

  it('blocks both ways across a partition until healed', async () => {
    const { clock, net, a, got } = await pair(1);
    net.partition([A], [B]);
    a.sendPacket(B, Buffer.from('x'));
    clock.advance(100);
    expect(got).toEqual([]);
    expect(net.link(B, A).blocked).toBe(true);
    net.heal();
    a.sendPacket(B, Buffer.from('y'));
    clock.advance(100);
    expect(got.map((g) => g.bytes)).toEqual(['y']);
  });

  it('delays a slow member in arrival order', async () => {
    const { clock, net, a, got } = await pair(1);
    net.setHandlingDelay(B, { minMs: 0, maxMs: 500 });
    for (let i = 0; i < 50; i++) a.sendPacket(B, Buffer.from(String(i)));
    clock.advance(1000);
    expect(got.map((g) => g.bytes)).toEqual(Array.from({ length: 50 }, (_, i) => String(i)));
    expect(got.at(-1)!.at).toBeGreaterThan(25 + 400);
    expect(got.at(-1)!.at).toBeLessThanOrEqual(25 + 500);
  });

  it('answers exchanges, times them out across a partition, refuses them at a stopped endpoint', async () => {
    const { clock, net, a, b } = await pair(1);
    const ok = exchange(a, B, 'q', 1000);
    clock.advance(100);
    expect(ok.result).toMatchObject({ err: null, res: 're:q' });
    net.partition([A], [B]);
    const cut = exchange(a, B, 'q', 1000);
    clock.advance(999);
    expect(cut.result).toBeUndefined();
    clock.advance(1);
    expect(cut.result?.err?.code).toBe('TIMEOUT');
    net.heal();
    await b.stop();
    const refused = exchange(a, B, 'q', 1000);
    clock.advance(100);
    expect(refused.result?.err?.code).toBe('CONNECTION_CLOSED');
  });
});
