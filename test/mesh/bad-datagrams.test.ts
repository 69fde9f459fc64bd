// Proves, against real gateway processes, that a mesh agent drops what it must not apply and
// counts it by reason: 100k seeded datagrams of garbage, oversized ones, a bad version, another
// cluster's, another key's (its GCM tag fails) and bit-flipped copies of a valid message that would write a state entry.
// Nothing is applied (the state never holds the forged entry), and the agent stays alive and in
// the mesh (its peer sees it alive throughout).
import { createSocket } from 'node:dgram';
import { readFile } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { seededRandom } from '../../src/core/index.ts';
import { freePort, sleep, testSeed, waitFor } from '../../src/testing/index.ts';
import { MeshCodec } from '../../gossip/wire/codec.ts';
import { Keyring } from '../../gossip/wire/keyring.ts';
import { DEFAULT_MESH_LIMITS } from '../../gossip/index.ts';
import { spawnBroker, type BrokerProcess } from '../helpers/broker-process.ts';
import { spawnListening, type EdgeqProcess } from '../helpers/spawn-listening.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

const DATAGRAMS = 100_000;
/** Sent in bursts this size, each followed by a pause, so the kernel's socket buffer rarely overflows. */
const BURST = 200;
/**
 * After this many, the sender waits for the agent to have counted (or the kernel to have dropped)
 * every datagram sent so far: a gateway starved of CPU by the tests beside it cannot fall more
 * than a window behind, so the 1 MiB receive buffer (~450 of these datagrams) overflows rarely.
 */
const WINDOW = 2_000;
/** Bound on the agent catching up with one window (2,000 datagrams at ≥ 10 µs each is 20 ms unloaded). */
const WINDOW_CATCH_UP_MS = 30_000;
const KEY = Buffer.alloc(32, 7);
const OTHER_KEY = Buffer.alloc(32, 9);

const procs: (EdgeqProcess | BrokerProcess)[] = [];
afterAll(async () => {
  await Promise.all(procs.map((p) => p.kill('SIGTERM')));
  await cleanupTempDirs();
});

interface Mesh {
  members: { member: string; state: string }[];
}

async function drops(gatewayPort: number): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${gatewayPort}/metrics`)).text();
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^edgeq_mesh_drops_total\{[^}]*reason="([^"]+)"[^}]*\} (\d+)/gm)) out.set(m[1]!, (out.get(m[1]!) ?? 0) + Number(m[2]));
  return out;
}

/**
 * Datagrams the kernel dropped at the socket bound to 127.0.0.1:`port` (the `drops` column of
 * /proc/net/udp: a full receive buffer). They never reach the agent, so they cannot be counted by
 * it; the test accounts for them exactly rather than hoping there are none on a loaded machine.
 */
async function kernelDrops(port: number): Promise<number> {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  let drops: number | null = null;
  for (const line of (await readFile('/proc/net/udp', 'utf8')).split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[1]?.endsWith(hex)) drops = (drops ?? 0) + Number(f.at(-1));
  }
  // No such socket would read as "no drops" and hide them: the agent's socket must be there.
  if (drops === null || !Number.isFinite(drops)) throw new Error(`no UDP socket on port ${port} in /proc/net/udp`);
  return drops;
}

const limits = { stateValueBytesMax: DEFAULT_MESH_LIMITS.stateValueBytesMax, membersMax: DEFAULT_MESH_LIMITS.membersMax, stateEntriesMax: DEFAULT_MESH_LIMITS.stateEntriesMax };

describe('bad datagrams into a real mesh agent', () => {
  it(`drops and counts ${DATAGRAMS} seeded bad datagrams by reason, applies none of them, and stays in the mesh`, async () => {
    const seed = testSeed('mesh-bad-datagrams');
    const rand = seededRandom(seed);
    const broker = await spawnBroker({ dataDir: await tempDir('edgeq-fuzz-') });
    procs.push(broker);
    const [meshA, meshB] = [await freePort(), await freePort()];
    const gateway = (member: string, meshPort: number, seeds: string) =>
      spawnListening('gateway', ['gateway', '--brokers', `127.0.0.1:${broker.port}`, '--port', '0', '--no-auth', '--region', member, '--member', member, '--mesh-port', String(meshPort), '--mesh-seeds', seeds], {
        env: { EDGEQ_MESH_KEY: KEY.toString('base64') },
      });
    const a = await gateway('region-a', meshA, `127.0.0.1:${meshB}`);
    const b = await gateway('region-b', meshB, `127.0.0.1:${meshA}`);
    procs.push(a, b);
    const seesAlive = async (viewer: EdgeqProcess, member: string) => {
      const v = (await (await fetch(`http://127.0.0.1:${viewer.port}/v1/mesh`)).json()) as Mesh;
      return v.members.find((m) => m.member === member)?.state === 'alive';
    };
    await waitFor('the two agents to see each other', 20_000, async () => ((await seesAlive(a, 'region-b')) && (await seesAlive(b, 'region-a')) ? true : undefined), 200);

    // The kinds of bad datagrams, each built from the seed.
    const ours = new MeshCodec({ clusterName: 'edgeq', keyring: new Keyring([KEY]), datagramBytesMax: 64 * 1024, frameBytesMax: 1 << 20, limits });
    const otherCluster = new MeshCodec({ clusterName: 'elsewhere', keyring: new Keyring([KEY]), datagramBytesMax: 64 * 1024, frameBytesMax: 1 << 20, limits });
    const otherKey = new MeshCodec({ clusterName: 'edgeq', keyring: new Keyring([OTHER_KEY]), datagramBytesMax: 64 * 1024, frameBytesMax: 1 << 20, limits });
    const ping = { type: 'ping' as const, seq: 1, target: 'region-a', sourceAddr: '127.0.0.1:9' };
    const valid = ours.encodePacket('intruder', ping);
    const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(rand() * 256)));
    const kinds: Record<string, () => Buffer> = {
      garbage: () => bytes(1 + Math.floor(rand() * 1399)),
      oversized: () => bytes(1401 + Math.floor(rand() * 2000)),
      badVersion: () => {
        const d = Buffer.from(valid);
        d[0] = 3 + Math.floor(rand() * 250); // 1 is the MAC-only wire, 2 the encrypted one
        return d;
      },
      wrongCluster: () => otherCluster.encodePacket('intruder', ping),
      badMac: () => otherKey.encodePacket('intruder', ping),
      // A valid message with one bit flipped anywhere: the MAC no longer matches (or the envelope breaks).
      flipped: () => {
        const d = Buffer.from(valid);
        const i = Math.floor(rand() * d.length);
        d[i]! ^= 1 << Math.floor(rand() * 8);
        return d;
      },
    };
    const names = Object.keys(kinds);
    const total = (m: Map<string, number>) => [...m.values()].reduce((x, y) => x + y, 0);
    const before = await drops(a.port);
    const kernelBefore = await kernelDrops(meshA);
    // Everything sent so far is counted by the agent or was dropped by the kernel: the counts then.
    const settled = (n: number) =>
      waitFor(`the agent to account for ${n} datagrams`, WINDOW_CATCH_UP_MS, async () => {
        const [after, kernel] = [await drops(a.port), (await kernelDrops(meshA)) - kernelBefore];
        return total(after) - total(before) + kernel >= n ? { after, kernel } : undefined;
      }, 50);
    const socket = createSocket('udp4');
    const sent = new Map<string, number>();
    try {
      for (let i = 0; i < DATAGRAMS; i++) {
        const kind = names[i % names.length]!;
        sent.set(kind, (sent.get(kind) ?? 0) + 1);
        socket.send(kinds[kind]!(), meshA, '127.0.0.1');
        if (i % BURST === BURST - 1) await sleep(2);
        if (i % WINDOW === WINDOW - 1) await settled(i + 1);
      }
    } finally {
      await sleep(100);
      socket.close();
    }
    const { after: counted, kernel } = await settled(DATAGRAMS);
    const delta = Object.fromEntries([...counted].map(([r, n]) => [r, n - (before.get(r) ?? 0)]).filter(([, n]) => (n as number) > 0));
    // eslint-disable-next-line no-console
    console.log(`[mesh-bad-datagrams] sent ${JSON.stringify(Object.fromEntries(sent))}; dropped by reason ${JSON.stringify(delta)}; dropped by the kernel (receive buffer full) ${kernel}`);
    // Every datagram is accounted for exactly once: counted by reason, or never delivered.
    expect(total(counted) - total(before) + kernel).toBe(DATAGRAMS);
    // The kernel's drops are what a starved process loses; the windows keep them a small part, so
    // the agent itself judged nearly every datagram (no more than a window's worth lost per window).
    expect(kernel).toBeLessThan(DATAGRAMS / 10);
    // Per reason: what was sent of each kind, less what the kernel may have dropped of it.
    expect(delta['oversized']).toBeLessThanOrEqual(sent.get('oversized')!);
    expect(delta['oversized']).toBeGreaterThanOrEqual(sent.get('oversized')! - kernel);
    expect(delta['wrong-cluster']).toBeGreaterThanOrEqual(sent.get('wrongCluster')! - kernel); // flipped bits in a cluster name land here too
    expect(delta['bad-version']).toBeGreaterThanOrEqual(sent.get('badVersion')! - kernel);
    expect(delta['bad-mac']).toBeGreaterThanOrEqual(sent.get('badMac')! - kernel);
    // Nothing applied: no intruder in either member's table, both still see each other alive.
    for (const [viewer, peer] of [[a, 'region-b'], [b, 'region-a']] as const) {
      const v = (await (await fetch(`http://127.0.0.1:${viewer.port}/v1/mesh`)).json()) as Mesh;
      expect(v.members.map((m) => m.member).sort()).toEqual(['region-a', 'region-b']);
      expect(await seesAlive(viewer, peer)).toBe(true);
    }
    expect(a.child.exitCode).toBeNull();
  }, 120_000);
});
