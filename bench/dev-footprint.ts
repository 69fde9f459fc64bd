/**
 * `npm run bench:dev-footprint`: what the local deployment costs at rest. Starts `edgeq dev` in
 * its default shape (3 regions of an arbiter, 3 brokers and a gateway each, plus the supervisor
 * with the link emulator), lets it settle, then reads every process's resident memory and its CPU
 * time over an idle window from /proc. Writes bench/results/dev-footprint.json.
 */
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { cpuMs } from './lib/proc-cpu.ts';
import { progress, sleep } from './lib/harness.ts';
import { DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, stopAllDevs } from '../test/helpers/dev-process.ts';
import { cleanupTempDirs, tempDir } from '../test/helpers/tmp.ts';

const RESULTS = fileURLToPath(new URL('./results/dev-footprint.json', import.meta.url));
const SETTLE_MS = Number(process.env.BENCH_FOOTPRINT_SETTLE_MS ?? 20_000);
const IDLE_MS = Number(process.env.BENCH_FOOTPRINT_IDLE_MS ?? 30_000);

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0);
  return Math.round((kb / 1024) * 10) / 10;
}

async function main(): Promise<void> {
  const base = await freeRange(DEV_REGIONS_PORT_SPAN);
  const dev = startDevRegions(await tempDir('edgeq-footprint-'), base, { regions: '3', brokersPerRegion: 3, wanLatencyMs: 25 });
  try {
    const ready = await dev.ready;
    progress(`deployment ready: ${ready.processes.length} processes; settling ${SETTLE_MS / 1000} s`, 'footprint');
    await sleep(SETTLE_MS);
    const procs = [{ name: 'dev (supervisor, link emulator, control API)', role: 'dev', pid: dev.child.pid! }, ...ready.processes.map((p) => ({ name: p.name, role: p.role, pid: p.pid }))];
    const cpu0 = new Map(procs.map((p) => [p.pid, cpuMs(p.pid) ?? 0]));
    const t0 = Date.now();
    await sleep(IDLE_MS);
    const elapsed = Date.now() - t0;
    const rows = procs.map((p) => ({ ...p, rssMb: rssMb(p.pid), idleCpuPct: Math.round((((cpuMs(p.pid) ?? 0) - cpu0.get(p.pid)!) / elapsed) * 1000) / 10 }));
    const byRole = (role: string) => rows.filter((r) => r.role === role);
    const sum = (rs: typeof rows, k: 'rssMb' | 'idleCpuPct') => Math.round(rs.reduce((s, r) => s + r[k], 0) * 10) / 10;
    const results = {
      shape: { regions: 3, brokersPerRegion: 3, processes: rows.length },
      idleWindowMs: elapsed,
      total: { rssMb: sum(rows, 'rssMb'), idleCpuPctOfOneCore: sum(rows, 'idleCpuPct') },
      byRole: Object.fromEntries(['dev', 'arbiter', 'broker', 'gateway'].map((role) => [role, { processes: byRole(role).length, rssMb: sum(byRole(role), 'rssMb'), idleCpuPct: sum(byRole(role), 'idleCpuPct') }])),
      processes: rows,
    };
    await mkdir(fileURLToPath(new URL('./results/', import.meta.url)), { recursive: true });
    await writeFile(RESULTS, `${JSON.stringify(results, null, 2)}\n`);
    process.stdout.write(`${JSON.stringify({ total: results.total, byRole: results.byRole }, null, 2)}\nwrote ${RESULTS}\n`);
  } finally {
    await stopAllDevs();
    await cleanupTempDirs();
  }
}

await main();
