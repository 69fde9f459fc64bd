/**
 * `npm run bench:mesh`: the mesh between regions, measured with real processes and in simulation.
 *
 * Real processes: a 3-region `edgeq dev` (one broker per region; 25 ms one way on every emulated
 * link, so 50 ms RTT), with the supervisor's restart delay raised so a killed gateway stays dead
 * until the others have declared it so.
 * - Crash detection, over BENCH_MESH_DETECT_RUNS (20) SIGKILLs of a gateway, round robin over the
 *   regions: from the kill until both other regions see it `dead`.
 * - False deaths over BENCH_MESH_LOSSY_MINUTES (10) minutes with 5% loss on every link while one
 *   region's gateway runs at full CPU (an open HTTP produce load saturating its event loop): the
 *   deaths every member's suspicion timers declared (`edgeq_mesh_deaths_total`) and any `dead`
 *   seen in any view, sampled every second.
 * - Convergence after a 30 s partition (one region cut off from both others) heals: from the heal
 *   until every region sees all three alive.
 * Simulation: the figures of `bench/mesh-sim.ts` (10-200 members, 0-5% loss), beside memberlist's.
 *
 * Writes bench/results/mesh.json: {"real": {...}, "sim": [...]}.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { cannon } from './lib/autocannon.ts';
import { cpuMs } from './lib/proc-cpu.ts';
import { progress, sleep } from './lib/harness.ts';
import { DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, stopAllDevs, type Ready } from '../test/helpers/dev-process.ts';
import { cleanupTempDirs, tempDir } from '../test/helpers/tmp.ts';

const RESULTS = fileURLToPath(new URL('./results/mesh.json', import.meta.url));
const SIM_RESULTS = fileURLToPath(new URL('./results/mesh-sim.json', import.meta.url));
const DETECT_RUNS = Number(process.env.BENCH_MESH_DETECT_RUNS ?? 20);
const LOSSY_MINUTES = Number(process.env.BENCH_MESH_LOSSY_MINUTES ?? 10);
const PARTITION_MS = 30_000;
const WAN_LATENCY_MS = 25;
/** A killed gateway is restarted this long after: detection is done well before. */
const RESTART_DELAY_MS = 12_000;
const DETECT_MS_MAX = 30_000;

/**
 * The simulation half (`npm run bench:mesh:sim` writes bench/results/mesh-sim.json; run it first):
 * its rows, with the figures the issue names first and the rest (memberlist's bounds) kept.
 */
async function simRows(): Promise<unknown[]> {
  try {
    const doc = JSON.parse(await readFile(SIM_RESULTS, 'utf8')) as { sim?: Record<string, unknown>[] } | Record<string, unknown>[];
    const rows = Array.isArray(doc) ? doc : (doc.sim ?? []);
    return rows.map((r) => ({
      members: r.members,
      lossRate: r.lossRate,
      detectMsMedian: r.detectMsMedian,
      falseSuspicionsPerMemberHour: r.falseSuspicionsPerMemberHour,
      falseDeaths: r.falseDeaths,
      bytesPerMemberPerSec: r.bytesPerMemberPerSec,
      ...r,
    }));
  } catch (err) {
    progress(`simulation rows unavailable (${SIM_RESULTS}: ${(err as Error).message}); run npm run bench:mesh:sim first`, tag);
    return [];
  }
}

/** The simulation's Lifeguard comparison (slow members, Lifeguard on and off), carried as it is. */
async function simExtras(): Promise<Record<string, unknown>> {
  try {
    const doc = JSON.parse(await readFile(SIM_RESULTS, 'utf8')) as Record<string, unknown>;
    return { lifeguard: doc.lifeguard ?? null, slowMemberLossy: doc.slowMemberLossy ?? null };
  } catch {
    return {};
  }
}

interface MeshView {
  self: { member: string };
  members: { member: string; state: string; incarnation: number }[];
}

let ready: Ready;
const tag = 'bench:mesh';

async function view(gateway: string): Promise<MeshView | undefined> {
  const res = await fetch(`${gateway}/v1/mesh`, { signal: AbortSignal.timeout(2000) }).catch(() => null);
  return res?.ok ? ((await res.json()) as MeshView) : undefined;
}

async function until<T>(what: string, msMax: number, fn: () => Promise<T | undefined>, everyMs = 50): Promise<T> {
  const deadline = Date.now() + msMax;
  while (Date.now() < deadline) {
    const v = await fn();
    if (v !== undefined) return v;
    await sleep(everyMs);
  }
  throw new Error(`timed out after ${msMax} ms waiting for ${what}`);
}

async function processes(): Promise<{ name: string; region: string; role: string; pid: number | null }[]> {
  return ((await (await fetch(`${ready.control}/v1/dev/processes`)).json()) as { processes: { name: string; region: string; role: string; pid: number | null }[] }).processes;
}

async function setLink(from: string, to: string, body: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${ready.control}/v1/dev/links/${from}/${to}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`PUT link ${from}→${to}: ${res.status} ${await res.text()}`);
}

async function allAlive(): Promise<boolean> {
  const views = await Promise.all(ready.regions.map((r) => view(r.gateway)));
  return views.every((v) => v && v.members.length === 3 && v.members.every((m) => m.state === 'alive'));
}

async function metric(gateway: string, name: string): Promise<number> {
  const text = await (await fetch(`${gateway}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  const m = text.match(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+(?:\\.\\d+)?)`, 'm'));
  return m ? Number(m[1]) : 0;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

async function detection(): Promise<{ runs: number; medianMs: number; maxMs: number; runsMs: number[] }> {
  const runsMs: number[] = [];
  for (let i = 0; i < DETECT_RUNS; i++) {
    const victim = ready.regions[i % ready.regions.length]!;
    const others = ready.regions.filter((r) => r !== victim);
    const member = (await view(victim.gateway))!.self.member;
    const pid = (await processes()).find((p) => p.name === `${victim.region}/gateway`)!.pid!;
    const t0 = Date.now();
    process.kill(pid, 'SIGKILL');
    await until(`${victim.region} dead everywhere`, DETECT_MS_MAX, async () => {
      const vs = await Promise.all(others.map((o) => view(o.gateway)));
      return vs.every((v) => v?.members.find((m) => m.member === member)?.state === 'dead') ? true : undefined;
    }, 25);
    const ms = Date.now() - t0;
    runsMs.push(ms);
    progress(`detect ${i + 1}/${DETECT_RUNS}: ${victim.region}'s gateway dead everywhere ${ms} ms after SIGKILL`, tag);
    await until('the restarted gateway alive everywhere', RESTART_DELAY_MS + 60_000, async () => ((await allAlive()) ? true : undefined), 250);
  }
  return { runs: runsMs.length, medianMs: median(runsMs), maxMs: Math.max(...runsMs), runsMs };
}

async function healConvergence(): Promise<{ healConvergeMs: number; deadSeenBeforeHeal: boolean }> {
  const [cut, ...rest] = ready.regions.map((r) => r.region) as [string, ...string[]];
  for (const o of rest) {
    await setLink(cut, o, { blackhole: true });
    await setLink(o, cut, { blackhole: true });
  }
  progress(`partition: ${cut} cut off from ${rest.join(' and ')} for ${PARTITION_MS / 1000} s`, tag);
  await sleep(PARTITION_MS);
  const before = await Promise.all(ready.regions.map((r) => view(r.gateway)));
  const deadSeenBeforeHeal = before.some((v) => v?.members.some((m) => m.state === 'dead'));
  const t0 = Date.now();
  for (const o of rest) {
    await setLink(cut, o, { blackhole: false });
    await setLink(o, cut, { blackhole: false });
  }
  await until('one view after the heal', 60_000, async () => ((await allAlive()) ? true : undefined), 25);
  const healConvergeMs = Date.now() - t0;
  progress(`heal: every region sees all three alive ${healConvergeMs} ms after the heal (dead seen during the cut: ${deadSeenBeforeHeal})`, tag);
  return { healConvergeMs, deadSeenBeforeHeal };
}

async function lossyRun(): Promise<{ falseDeaths: number; deadSamples: number; suspicions: number; refutations: number; loadedGatewayCpuPct: number; loadRequests: number }> {
  const names = ready.regions.map((r) => r.region);
  for (const a of names) for (const b of names) if (a !== b) await setLink(a, b, { lossRate: 0.05 });
  const loaded = ready.regions[0]!;
  const deathsBefore = await Promise.all(ready.regions.map((r) => metric(r.gateway, 'edgeq_mesh_deaths_total')));
  const suspicionsBefore = await Promise.all(ready.regions.map((r) => metric(r.gateway, 'edgeq_mesh_suspicions_total')));
  const refutationsBefore = await Promise.all(ready.regions.map((r) => metric(r.gateway, 'edgeq_mesh_refutations_total')));
  await fetch(`${loaded.gateway}/v1/topics`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'mesh-load', partitions: 1 }) });
  const gwPid = (await processes()).find((p) => p.name === `${loaded.region}/gateway`)!.pid!;
  const cpu0 = cpuMs(gwPid) ?? 0;
  const t0 = Date.now();
  const durationSec = LOSSY_MINUTES * 60;
  progress(`lossy run: 5% loss on every link, ${loaded.region}'s gateway under an HTTP produce load, ${LOSSY_MINUTES} min`, tag);
  let deadSamples = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const vs = await Promise.all(ready.regions.map((r) => view(r.gateway)));
      for (const v of vs) deadSamples += v?.members.filter((m) => m.state === 'dead').length ?? 0;
      await sleep(1000);
    }
  })();
  const load = await cannon({
    url: loaded.gateway,
    requests: [{ method: 'POST', path: '/v1/topics/mesh-load/records?acks=1', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ records: [{ value: 'x'.repeat(100) }] }) }],
    connections: 32,
    pipelining: 1,
    durationSec,
  });
  sampling = false;
  await sampler;
  const cpuPct = ((cpuMs(gwPid) ?? 0) - cpu0) / (Date.now() - t0) * 100;
  const deathsAfter = await Promise.all(ready.regions.map((r) => metric(r.gateway, 'edgeq_mesh_deaths_total')));
  const suspicionsAfter = await Promise.all(ready.regions.map((r) => metric(r.gateway, 'edgeq_mesh_suspicions_total')));
  const refutationsAfter = await Promise.all(ready.regions.map((r) => metric(r.gateway, 'edgeq_mesh_refutations_total')));
  for (const a of names) for (const b of names) if (a !== b) await setLink(a, b, { lossRate: 0 });
  const sum = (after: number[], before: number[]) => after.reduce((s, x, i) => s + x - before[i]!, 0);
  const r = {
    falseDeaths: sum(deathsAfter, deathsBefore),
    deadSamples,
    suspicions: sum(suspicionsAfter, suspicionsBefore),
    refutations: sum(refutationsAfter, refutationsBefore),
    loadedGatewayCpuPct: Math.round(cpuPct),
    loadRequests: load.completed,
  };
  progress(`lossy run: ${r.falseDeaths} false deaths, ${r.deadSamples} dead seen in samples, ${r.suspicions} suspicions, ${r.refutations} refutations; loaded gateway at ${r.loadedGatewayCpuPct}% of a core (${load.completed} produce requests)`, tag);
  return r;
}

async function main(): Promise<void> {
  const started = Date.now();
  const base = await freeRange(DEV_REGIONS_PORT_SPAN);
  const dev = startDevRegions(await tempDir('edgeq-bench-mesh-'), base, { regions: '3', brokersPerRegion: 1, wanLatencyMs: WAN_LATENCY_MS, env: { EDGEQ_DEV_RESTART_DELAY_MS: String(RESTART_DELAY_MS) } });
  try {
    ready = await dev.ready;
    await until('the mesh formed', 60_000, async () => ((await allAlive()) ? true : undefined), 200);
    const detect = await detection();
    const heal = await healConvergence();
    const lossy = await lossyRun();
    const sim = await simRows();
    const results = {
      rttMs: 2 * WAN_LATENCY_MS,
      real: {
        detect: { runs: detect.runs, medianMs: detect.medianMs, maxMs: detect.maxMs, runsMs: detect.runsMs },
        falseDeaths: lossy.falseDeaths,
        lossyRunMinutes: LOSSY_MINUTES,
        lossyRun: lossy,
        healConvergeMs: heal.healConvergeMs,
        partitionMs: PARTITION_MS,
        deadSeenDuringPartition: heal.deadSeenBeforeHeal,
      },
      sim,
      ...(await simExtras()),
      tookSec: Math.round((Date.now() - started) / 1000),
    };
    await mkdir(fileURLToPath(new URL('./results/', import.meta.url)), { recursive: true });
    await writeFile(RESULTS, `${JSON.stringify(results, null, 2)}\n`);
    process.stdout.write(`${JSON.stringify(results.real, null, 2)}\n`);
    process.stdout.write(
      `detection (${detect.runs} SIGKILLs, ${2 * WAN_LATENCY_MS} ms RTT): median ${detect.medianMs} ms, max ${detect.maxMs} ms (target: median <= 3000 ms)\n` +
        `false deaths in ${LOSSY_MINUTES} min at 5% loss with a saturated gateway: ${lossy.falseDeaths} (target 0)\n` +
        `convergence after a ${PARTITION_MS / 1000} s partition heals: ${heal.healConvergeMs} ms (target <= 2000 ms)\n` +
        `wrote ${RESULTS}\n`,
    );
  } finally {
    await stopAllDevs();
    await cleanupTempDirs();
  }
}

await main();
