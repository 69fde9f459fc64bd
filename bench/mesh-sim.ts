/**
 * The mesh in simulation (`npm run bench:mesh:sim`): real MeshAgents with their default
 * configuration on a simulated network (seeded PRNG, simulated time), the simulation half of
 * issue 12's benchmark. Results go to bench/results/mesh-sim.json and a table on stdout.
 *
 * For 10, 50, 100 and 200 members at 0%, 1% and 5% loss on every link (25 ms one way, a 50 ms
 * RTT): crash-detection time (a member crashes; until every member holds it dead) over several
 * crashes, median and max; false suspicions per member-hour and false deaths over a steady
 * window; gossip bytes sent per member per second over that window (datagrams and push-pull);
 * time for every member to have one view after a 50/50 partition heals. Beside each row,
 * memberlist's suspicion timeouts for the same member count, at these settings and at its own
 * LAN and WAN defaults (formula: state.go suspicionTimeout and suspicion.go; defaults:
 * config.go DefaultLANConfig/DefaultWANConfig):
 *
 *   min = SuspicionMult × max(1, log10 n) × ProbeInterval,  max = SuspicionMaxTimeoutMult × min
 *
 * Then the slow-member runs: Lifeguard on against plain SWIM (10 members, one member handling
 * messages 0-1000 ms late), and the "one member at full CPU with 5% loss on every link" case
 * (3 and 10 members, 10 minutes, several handling delays) for false deaths.
 *
 * Bounded: every wait in simulated time is bounded, and the whole run stops starting new cells
 * after BENCH_MESH_WALL_S_MAX seconds of wall time (default 300; a full run takes ~2-3 minutes
 * on 2 cores). BENCH_MESH_SEED replays a run; BENCH_MESH_SCALE (0 < s ≤ 1) shortens the
 * steady windows for development.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_MESH_CONFIG, detectionBoundMs, memberlistSuspicion, MEMBERLIST_LAN, MEMBERLIST_WAN, SimCluster } from '../gossip/index.ts';
import { seededRandom } from '../src/core/index.ts';
import { envNumber } from './lib/env.ts';

const SEED = Math.floor(envNumber('BENCH_MESH_SEED', 20_261_201));
const SCALE = Math.min(1, envNumber('BENCH_MESH_SCALE', 1));
const WALL_MS_MAX = envNumber('BENCH_MESH_WALL_S_MAX', 300) * 1000;
const OUT = join(dirname(fileURLToPath(import.meta.url)), 'results', 'mesh-sim.json');
const ONE_WAY_MS = 25;
const SIZES = [10, 50, 100, 200];
const LOSS_RATES = [0, 0.01, 0.05];
/** Simulated steady window per size: the cost of a simulated second grows with n². */
const STEADY_MS: Record<number, number> = { 10: 600_000, 50: 600_000, 100: 300_000, 200: 120_000 };
const CRASHES = 5;
/** Simulated time after a rejoin before the next crash. */
const SETTLE_MS = 5_000;
const HOUR_MS = 3_600_000;

const started = Date.now();
const say = (line: string): void => void process.stderr.write(`[mesh-sim] ${line}\n`);

function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function memberlistColumns(members: number) {
  const ours = memberlistSuspicion(DEFAULT_MESH_CONFIG, members);
  const lan = memberlistSuspicion(MEMBERLIST_LAN, members);
  const wan = memberlistSuspicion(MEMBERLIST_WAN, members);
  // A typical detection with confirmations: half an interval until the probe, the probe, the minimum timeout.
  const typical = (s: { probeIntervalMs: number }, minMs: number) => Math.round(1.5 * s.probeIntervalMs + minMs);
  return {
    suspicionMinMs: ours.minMs,
    suspicionMaxMs: ours.maxMs,
    detectBoundMs: detectionBoundMs(DEFAULT_MESH_CONFIG, members),
    memberlistLan: { probeIntervalMs: MEMBERLIST_LAN.probeIntervalMs, suspicionMinMs: lan.minMs, suspicionMaxMs: lan.maxMs, detectTypicalMs: typical(MEMBERLIST_LAN, lan.minMs) },
    memberlistWan: { probeIntervalMs: MEMBERLIST_WAN.probeIntervalMs, suspicionMinMs: wan.minMs, suspicionMaxMs: wan.maxMs, detectTypicalMs: typical(MEMBERLIST_WAN, wan.minMs) },
  };
}

async function cell(members: number, lossRate: number, seed: number) {
  const t0 = Date.now();
  const random = seededRandom(seed);
  const c = await SimCluster.create({ members, seed, lossRate, delayMs: ONE_WAY_MS });
  const steadyMs = Math.round(STEADY_MS[members]! * SCALE);
  // Measure from a quiet mesh: the joins' own gossip is not steady-state traffic.
  c.runUntil(() => c.sum((x) => x.queuedUpdates()) === 0, 60_000);
  const suspicions0 = c.falseSuspicions.length;
  const deaths0 = c.falseDeaths.length;
  const bytes0 = c.sum((a) => a.stats().bytesSent);
  c.run(steadyMs);
  const bytesPerMemberPerSec = (c.sum((a) => a.stats().bytesSent) - bytes0) / members / (steadyMs / 1000);
  const falseSuspicions = c.falseSuspicions.length - suspicions0;
  const falseDeaths = c.falseDeaths.length - deaths0;

  const bound = detectionBoundMs(DEFAULT_MESH_CONFIG, members);
  const detections: number[] = [];
  let undetected = 0;
  for (let k = 0; k < CRASHES; k++) {
    const live = c.live().filter((i) => i !== 0);
    const victim = live[Math.floor(random() * live.length)]!;
    c.crash(victim);
    const d = c.runUntil(() => c.allKnowGone(victim), bound + 10_000, 10);
    if (d === null) undetected++;
    else detections.push(d);
    await c.restart(victim);
    c.runUntil(() => c.converged(), 60_000);
    c.run(SETTLE_MS);
  }

  const live = c.live();
  const a = live.slice(0, Math.floor(live.length / 2));
  const b = live.slice(a.length);
  c.partition(a, b);
  const seesDead = (from: number[], to: number[]) => from.every((i) => to.every((j) => c.agents[i]!.memberStatus(c.ids[j]!)?.state === 'dead'));
  const splitMs = c.runUntil(() => seesDead(a, b) && seesDead(b, a), 120_000, 100);
  c.heal();
  const healConvergeMs = c.runUntil(() => c.converged(), 60_000, 10);
  await c.stop();
  return {
    members,
    lossRate,
    detectMsMedian: median(detections),
    detectMsMax: detections.length > 0 ? Math.max(...detections) : null,
    detectRuns: detections.length,
    undetected,
    falseSuspicionsPerMemberHour: +(falseSuspicions / members / (steadyMs / HOUR_MS)).toFixed(2),
    falseSuspicions,
    falseDeaths,
    steadyMinutes: steadyMs / 60_000,
    bytesPerMemberPerSec: Math.round(bytesPerMemberPerSec),
    splitSeenMs: splitMs,
    healConvergeMs,
    ...memberlistColumns(members),
    seed,
    wallMs: Date.now() - t0,
  };
}

async function slowRun(members: number, lossRate: number, lifeguard: boolean, delay: { minMs: number; maxMs: number }, seed: number) {
  const t0 = Date.now();
  const c = await SimCluster.create({ members, seed, lossRate, delayMs: ONE_WAY_MS, config: { lifeguard } });
  const slow = members - 1;
  c.slow(slow, delay);
  const runMs = Math.round(600_000 * SCALE);
  c.run(runMs);
  const hours = runMs / HOUR_MS;
  const r = {
    members,
    lossRate,
    lifeguard,
    slowHandlingMs: `${delay.minMs}-${delay.maxMs}`,
    minutes: runMs / 60_000,
    falseSuspicionsOfHealthy: c.falseSuspicions.filter((e) => !e.targetSlow).length,
    falseSuspicionsOfSlow: c.falseSuspicions.filter((e) => e.targetSlow).length,
    falseSuspicionsPerMemberHour: +(c.falseSuspicions.length / members / hours).toFixed(1),
    falseDeathsOfHealthy: c.falseDeaths.filter((e) => !e.targetSlow).length,
    falseDeathsOfSlow: c.falseDeaths.filter((e) => e.targetSlow).length,
    slowMemberHealthScore: c.agents[slow]!.health(),
    seed,
    wallMs: Date.now() - t0,
  };
  await c.stop();
  return r;
}

function outOfTime(): boolean {
  return Date.now() - started > WALL_MS_MAX;
}

const doc: Record<string, unknown> = {
  generatedAt: new Date().toISOString(),
  seed: SEED,
  scale: SCALE,
  partial: true,
  network: { oneWayMs: ONE_WAY_MS, rttMs: 2 * ONE_WAY_MS },
  config: DEFAULT_MESH_CONFIG,
  memberlistFormula:
    'suspicion min = SuspicionMult × max(1, log10 n) × ProbeInterval; max = SuspicionMaxTimeoutMult × min (memberlist state.go suspicionTimeout, suspicion.go remainingSuspicionTime: timeout = max(min, max − (max − min)·log(C+1)/log(k+1)), k = SuspicionMult − 2); defaults from memberlist config.go: LAN probe 1 s, timeout 500 ms, mult 4; WAN probe 5 s, timeout 3 s, mult 6; SuspicionMaxTimeoutMult 6',
  detectBoundFormula: '2 × probeInterval + suspicion max + 10 × gossipInterval (gossip/sim/expectations.ts)',
  sim: [] as unknown[],
  lifeguard: [] as unknown[],
  slowMemberLossy: [] as unknown[],
};

async function save(): Promise<void> {
  await mkdir(dirname(OUT), { recursive: true });
  await writeFile(OUT, `${JSON.stringify(doc, null, 2)}\n`);
}

say(`seed ${SEED} (replay with BENCH_MESH_SEED=${SEED}), scale ${SCALE}, wall bound ${WALL_MS_MAX / 1000} s`);
let k = 0;
for (const members of SIZES) {
  for (const lossRate of LOSS_RATES) {
    if (outOfTime()) break;
    const row = await cell(members, lossRate, SEED + k++);
    (doc.sim as unknown[]).push(row);
    say(`${members} members, ${lossRate * 100}% loss: detect median ${row.detectMsMedian} ms max ${row.detectMsMax} ms, false suspicions ${row.falseSuspicionsPerMemberHour}/member-hour, false deaths ${row.falseDeaths}, ${row.bytesPerMemberPerSec} B/member/s, heal ${row.healConvergeMs} ms (wall ${row.wallMs} ms)`);
    await save();
  }
}
for (const lifeguard of [false, true]) {
  if (outOfTime()) break;
  const r = await slowRun(10, 0, lifeguard, { minMs: 0, maxMs: 1_000 }, SEED + 100);
  (doc.lifeguard as unknown[]).push(r);
  say(`lifeguard ${lifeguard}: false suspicions of healthy ${r.falseSuspicionsOfHealthy}, of the slow member ${r.falseSuspicionsOfSlow}, false deaths healthy ${r.falseDeathsOfHealthy} slow ${r.falseDeathsOfSlow}`);
  await save();
}
for (const members of [3, 10]) {
  for (const maxMs of [200, 500]) {
    if (outOfTime()) break;
    const r = await slowRun(members, 0.05, true, { minMs: 0, maxMs }, SEED + 200 + members + maxMs);
    (doc.slowMemberLossy as unknown[]).push(r);
    say(`${members} members, 5% loss, slow 0-${maxMs} ms: false deaths healthy ${r.falseDeathsOfHealthy} slow ${r.falseDeathsOfSlow}, false suspicions ${r.falseSuspicionsPerMemberHour}/member-hour`);
    await save();
  }
}
doc.partial = outOfTime();
doc.wallSeconds = Math.round((Date.now() - started) / 1000);
await save();

const pad = (v: unknown, n: number) => String(v ?? '-').padStart(n);
console.log('\nmembers  loss  detect median/max ms  bound ms  false susp/member-h  false deaths  B/member/s  heal ms | memberlist LAN min-max s  WAN min-max s');
for (const r of doc.sim as Awaited<ReturnType<typeof cell>>[]) {
  console.log(
    `${pad(r.members, 7)} ${pad(`${r.lossRate * 100}%`, 5)} ${pad(`${r.detectMsMedian}/${r.detectMsMax}`, 20)} ${pad(r.detectBoundMs, 9)} ${pad(r.falseSuspicionsPerMemberHour, 20)} ${pad(r.falseDeaths, 13)} ${pad(r.bytesPerMemberPerSec, 11)} ${pad(r.healConvergeMs, 8)} | ${pad(`${r.memberlistLan.suspicionMinMs / 1000}-${r.memberlistLan.suspicionMaxMs / 1000}`, 24)} ${pad(`${r.memberlistWan.suspicionMinMs / 1000}-${r.memberlistWan.suspicionMaxMs / 1000}`, 14)}`,
  );
}
console.log('\nslow member runs:');
console.table([...(doc.lifeguard as unknown[]), ...(doc.slowMemberLossy as unknown[])]);
console.log(`\nwrote ${OUT} (${doc.wallSeconds} s${doc.partial ? ', PARTIAL: wall bound reached' : ''})`);
