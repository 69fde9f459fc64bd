/**
 * `npm run bench:mesh-crypto`: what sealing the mesh's messages costs per message, the encrypted
 * wire (version 2: AES-256-GCM, random nonce) against the MAC-only wire it replaces (version 1:
 * HMAC-SHA256) in the same run, through the real codec (wire/codec.ts), for the shapes the mesh
 * sends: a ping (the smallest datagram), a gossip datagram full of piggybacked updates (its
 * 1400-byte bound), and push-pull frames of 64 KiB and 1 MiB. Per shape and wire: encode
 * (build + seal), decode (open + parse), and the refusal of a forged message (a flipped byte,
 * under a two-key ring mid-rotation: both keys are tried).
 *
 * Each measure runs ROUNDS rounds, versions alternating so drift on the shared machine hits both
 * alike, each round at most ITERATIONS operations or ROUND_MS_MAX ms; the median round is kept.
 * Writes bench/results/mesh-crypto.json.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { MeshCodec, type MacOnlyMode } from '../gossip/wire/codec.ts';
import { Keyring } from '../gossip/wire/keyring.ts';
import { encodeUpdate, type PushPull, type Update } from '../gossip/wire/messages.ts';
import { progress } from './lib/harness.ts';

const RESULTS = fileURLToPath(new URL('./results/mesh-crypto.json', import.meta.url));
/** Rounds per measure (odd: a median is one round). */
const ROUNDS = Number(process.env.BENCH_MESH_CRYPTO_ROUNDS ?? 5);
/** Operations per round at most, and the time a round may take at most (the bound of every loop). */
const ITERATIONS = Number(process.env.BENCH_MESH_CRYPTO_ITERATIONS ?? 20_000);
const ROUND_MS_MAX = 1_000;
const tag = 'mesh-crypto';

const KEY = Buffer.alloc(32, 7);
const OLD_KEY = Buffer.alloc(32, 9);
const LIMITS = { stateValueBytesMax: 1024, membersMax: 512, stateEntriesMax: 4096 };

function codec(macOnly: MacOnlyMode, keys: Buffer[] = [KEY]): MeshCodec {
  return new MeshCodec({ clusterName: 'edgeq', keyring: new Keyring(keys), datagramBytesMax: 1400, frameBytesMax: 4 << 20, limits: LIMITS, macOnly });
}

interface Shape {
  name: string;
  kind: 'datagram' | 'frame';
  encode(c: MeshCodec): Buffer;
}

const SENDER = 'us-east-gw-1';
const ping = { type: 'ping' as const, seq: 1234, target: 'eu-west-gw-1', sourceAddr: '10.0.0.1:7946' };

/** Alive updates that fill a gossip datagram up to its bound in either wire. */
function fillGossip(c: MeshCodec): Buffer[] {
  let room = c.updateRoom(SENDER, { type: 'gossip' });
  const updates: Buffer[] = [];
  for (let i = 0; updates.length < 64; i++) {
    const u: Update = { kind: 'state', key: `region/r${i}`, version: 1_700_000_000_000_000 + i, member: SENDER, deleted: false, json: true, value: Buffer.from(JSON.stringify({ health: 'ok', load: i })) };
    const bytes = encodeUpdate(u);
    if (bytes.length > room) break;
    updates.push(bytes);
    room -= bytes.length;
  }
  return updates;
}

/** A push-pull of `entries` state entries of ~`valueBytes` each. */
function pushPull(entries: number, valueBytes: number): PushPull {
  return {
    join: false,
    response: false,
    members: Array.from({ length: 16 }, (_, i) => ({ member: `m${i}`, region: 'us-east', incarnation: i, address: `10.0.0.${i}:7946`, tags: {}, state: 'alive' as const })),
    entries: Array.from({ length: entries }, (_, i) => ({ kind: 'state' as const, key: `k/${i}`, version: 1_700_000_000_000_000 + i, member: 'm1', deleted: false, json: false, value: Buffer.alloc(valueBytes, i & 0xff) })),
  };
}

const pp64k = pushPull(64, 1000);
const pp1m = pushPull(1024, 1000);
const gossipFor = new Map<MeshCodec, Buffer[]>();
const SHAPES: Shape[] = [
  { name: 'ping datagram', kind: 'datagram', encode: (c) => c.encodePacket(SENDER, ping) },
  {
    name: 'full gossip datagram (1400 B bound)',
    kind: 'datagram',
    encode: (c) => {
      let u = gossipFor.get(c);
      if (!u) gossipFor.set(c, (u = fillGossip(c)));
      return c.encodePacket(SENDER, { type: 'gossip' }, u);
    },
  },
  { name: 'push-pull frame ~64 KiB', kind: 'frame', encode: (c) => c.encodePushPull(SENDER, pp64k) },
  { name: 'push-pull frame ~1 MiB', kind: 'frame', encode: (c) => c.encodePushPull(SENDER, pp1m) },
];

/** Nanoseconds per operation over one bounded round. */
function round(op: () => void, iterations: number): number {
  const started = process.hrtime.bigint();
  const deadline = started + BigInt(ROUND_MS_MAX) * 1_000_000n;
  let n = 0;
  let now = started;
  while (n < iterations) {
    op();
    n++;
    // Checking the clock every 64 operations keeps its cost out of the figure.
    if ((n & 63) === 0 && (now = process.hrtime.bigint()) > deadline) break;
  }
  now = process.hrtime.bigint();
  return Number(now - started) / n;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Measure {
  shape: string;
  bytes: { v1: number; v2: number };
  encodeNs: { v1: number; v2: number };
  decodeNs: { v1: number; v2: number };
  refuseForgedNs: { v1: number; v2: number };
}

async function main(): Promise<void> {
  // Receivers hold a two-key ring (mid-rotation): a good message opens under the first key, a forged one is tried under both.
  const wires = { v1: { send: codec('send'), open: codec('accept', [KEY, OLD_KEY]) }, v2: { send: codec('off'), open: codec('off', [KEY, OLD_KEY]) } };
  const rows: Measure[] = [];
  for (const shape of SHAPES) {
    const iterations = shape.kind === 'frame' ? Math.max(5, Math.floor(ITERATIONS / (shape.name.includes('1 MiB') ? 2000 : 100))) : ITERATIONS;
    const sample = { v1: shape.encode(wires.v1.send), v2: shape.encode(wires.v2.send) };
    const decode = (w: 'v1' | 'v2', bytes: Buffer, c: MeshCodec): void => {
      const d = shape.kind === 'datagram' ? c.decodePacket(bytes) : c.decodePushPull(bytes);
      if (!d.ok) throw new Error(`${shape.name} ${w}: ${d.reason} ${d.detail}`);
    };
    for (const w of ['v1', 'v2'] as const) decode(w, sample[w], wires[w].open);
    // The forged copy: a byte flipped in the middle (the payload), refused by every key of the ring.
    const forged = { v1: Buffer.from(sample.v1), v2: Buffer.from(sample.v2) };
    for (const w of ['v1', 'v2'] as const) forged[w][forged[w].length >> 1]! ^= 1;
    const results = { encode: { v1: [] as number[], v2: [] as number[] }, decode: { v1: [] as number[], v2: [] as number[] }, refuse: { v1: [] as number[], v2: [] as number[] } };
    for (let r = 0; r < ROUNDS; r++) {
      for (const w of (r % 2 === 0 ? ['v1', 'v2'] : ['v2', 'v1']) as ('v1' | 'v2')[]) {
        results.encode[w].push(round(() => void shape.encode(wires[w].send), iterations));
        results.decode[w].push(round(() => decode(w, sample[w], wires[w].open), iterations));
        results.refuse[w].push(
          round(() => {
            const c = wires[w].open;
            const d = shape.kind === 'datagram' ? c.decodePacket(forged[w]) : c.decodePushPull(forged[w]);
            if (d.ok) throw new Error('a forged message was accepted');
          }, iterations),
        );
      }
    }
    const m: Measure = {
      shape: shape.name,
      bytes: { v1: sample.v1.length, v2: sample.v2.length },
      encodeNs: { v1: Math.round(median(results.encode.v1)), v2: Math.round(median(results.encode.v2)) },
      decodeNs: { v1: Math.round(median(results.decode.v1)), v2: Math.round(median(results.decode.v2)) },
      refuseForgedNs: { v1: Math.round(median(results.refuse.v1)), v2: Math.round(median(results.refuse.v2)) },
    };
    rows.push(m);
    progress(`${m.shape}: ${m.bytes.v1} → ${m.bytes.v2} B; encode ${m.encodeNs.v1} → ${m.encodeNs.v2} ns; decode ${m.decodeNs.v1} → ${m.decodeNs.v2} ns; refuse forged ${m.refuseForgedNs.v1} → ${m.refuseForgedNs.v2} ns`, tag);
  }
  const doc = {
    bench: 'mesh-crypto',
    date: new Date().toISOString(),
    node: process.version,
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    rounds: ROUNDS,
    note: 'v1 = the MAC-only wire (HMAC-SHA256), v2 = the encrypted wire (AES-256-GCM, 12-byte random nonce); ns per message, median of rounds; decode and refusal under a two-key ring (the primary matches first on decode; a forged message is tried under both keys)',
    rows,
  };
  await mkdir(fileURLToPath(new URL('./results/', import.meta.url)), { recursive: true });
  await writeFile(RESULTS, `${JSON.stringify(doc, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
}

await main();
