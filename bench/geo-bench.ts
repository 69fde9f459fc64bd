/**
 * `npm run bench:geo` (issue 13's benchmark): replication of a topic between two regions over one
 * emulated WAN link (25 ms one way each direction, 50 ms RTT), edgeq's global topics side by side
 * with NATS JetStream's cross-domain sources, in the same run on the same machine.
 *
 * - edgeq: a 2-region `edgeq dev` (one broker per region), a global topic per size created at the
 *   origin's gateway, produced at the origin's brokers (binary client, acks=all, idempotent),
 *   read at the remote's brokers.
 * - JetStream: two `nats-server` 2.9 in JetStream domains "a" and "b", B a leafnode of A through
 *   the same link emulator, B's stream sourcing A's (bench/lib/geo-nats.ts).
 *
 * For 100 B and 1 KiB records (bench/lib/geo-phases.ts, the same code for both):
 * 1. replicateMsgsPerSec: publish up to N records as fast as the origin acks (bounded window);
 *    rate from the first to the last record readable at the remote.
 * 2. lag: at a fixed rate, the same for both, per record origin ack → readable at the remote
 *    (matched by an id in the payload), p50/p99/p99.9 from an HdrHistogram, warm-up not recorded.
 * 3. catch-up: link limited to a bandwidth, cut both ways for BENCH_GEO_PARTITION_S while the
 *    origin takes a fixed rate, healed; records/s at the remote from the heal until it holds
 *    everything, also as bytes/s and as a fraction of the limit (payload bytes, and bytes that
 *    crossed the link).
 *
 * A system that fails (edgeq before the exchange lands: nothing reaches the remote) gets rows
 * marked failed with the reason; the others' rows are still written. Progress on stderr, the
 * side-by-side table on stdout, results in bench/results/geo.json.
 *
 * Knobs: BENCH_GEO_SYSTEMS (nats,edgeq), BENCH_GEO_SIZES (100,1024), BENCH_GEO_SMOKE=1 (short
 * everything, results to the temp folder unless BENCH_GEO_OUT), BENCH_GEO_REPLICATE_MSGS,
 * BENCH_GEO_WINDOW, BENCH_GEO_RATE, BENCH_GEO_LAG_S, BENCH_GEO_PARTITION_S, BENCH_GEO_CATCHUP_RATE,
 * BENCH_GEO_BANDWIDTH (bytes/s), BENCH_GEO_OUT; BENCH_GEO_EDGEQ_READ_AT=origin checks the edgeq harness
 * before the exchange lands (its reader reads the origin's own log: no replication measured).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { toEdgeqError } from '../src/core/errors.ts';
import { cleanupTempDirs, tempDir } from '../test/helpers/tmp.ts';
import { progress } from './lib/harness.ts';
import { startEdgeqGeo } from './lib/geo-edgeq.ts';
import { ArrivalLog } from './lib/geo-measure.ts';
import { startNatsGeo } from './lib/geo-nats.ts';
import { catchup, lag, PhaseIds, probe, replicate, type CatchupPhaseFigures, type GeoChannel, type GeoSettings, type GeoSystem, type LagPhaseFigures, type ReplicateFigures } from './lib/geo-phases.ts';
import { geoTable, geoTargets, type GeoRow } from './lib/geo-report.ts';

const tag = 'bench:geo';
const SMOKE = process.env.BENCH_GEO_SMOKE === '1';
/** Harness self-check while the exchange is missing: edgeq's reader reads the origin's own log (no replication measured). */
const EDGEQ_READ_AT_ORIGIN = process.env.BENCH_GEO_EDGEQ_READ_AT === 'origin';
const LATENCY_MS = 25;
const RTT_MS = 2 * LATENCY_MS;

function knob(name: string, full: number, smoke: number): number {
  const raw = process.env[name];
  const v = raw === undefined ? (SMOKE ? smoke : full) : Number(raw);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number, got ${raw}`);
  return v;
}

const SYSTEMS = (process.env.BENCH_GEO_SYSTEMS ?? 'nats,edgeq').split(',').map((s) => s.trim()).filter(Boolean);
for (const s of SYSTEMS) if (s !== 'nats' && s !== 'edgeq') throw new Error(`BENCH_GEO_SYSTEMS: unknown system ${s} (nats, edgeq)`);
const SIZES = (process.env.BENCH_GEO_SIZES ?? '100,1024').split(',').map(Number);
for (const s of SIZES) if (!Number.isSafeInteger(s) || s < 8 || s > 1024 * 1024) throw new Error(`BENCH_GEO_SIZES: sizes are 8..1048576 bytes, got ${s}`);

const SETTINGS: GeoSettings = {
  replicateMsgs: Math.round(knob('BENCH_GEO_REPLICATE_MSGS', 50_000, 3_000)),
  replicateWindow: Math.round(knob('BENCH_GEO_WINDOW', 2_048, 512)),
  replicateSecondsMax: 60,
  // 500/s: a rate both hold with room over 50 ms RTT (1 KiB × 500/s is 0.5 MB/s of the link).
  lagRatePerSec: knob('BENCH_GEO_RATE', 500, 200),
  lagSeconds: knob('BENCH_GEO_LAG_S', 20, 4),
  lagWarmupSeconds: SMOKE ? 1 : 3,
  partitionSeconds: knob('BENCH_GEO_PARTITION_S', 60, 5),
  catchupRatePerSec: knob('BENCH_GEO_CATCHUP_RATE', 500, 200),
  // 2 MiB/s: the 60 s backlog of 1 KiB records at 500/s (30 MiB) takes ~15 s at the limit.
  bandwidthBytesPerSec: Math.round(knob('BENCH_GEO_BANDWIDTH', 2 * 1024 * 1024, 2 * 1024 * 1024)),
  remoteWaitSecondsMax: 60,
  catchupWaitSecondsMax: 300,
  probeWaitSecondsMax: 30,
};

/** Measures one size on a running system; whatever was measured before a failure stays in the row. */
async function measureSize(sys: GeoSystem, size: number): Promise<GeoRow> {
  const row: GeoRow = { system: sys.system, messageBytes: size, replicateMsgsPerSec: null, lag: null, catchupMsgsPerSec: null, ok: false };
  const log = new ArrivalLog();
  const ids = new PhaseIds();
  let ch: GeoChannel;
  try {
    ch = await sys.open(size, log);
  } catch (err) {
    const e = toEdgeqError(err);
    row.error = { code: e.code, message: `could not prepare ${size}-byte records: ${e.message}` };
    progress(`${sys.system} ${size} B failed: ${row.error.code} ${row.error.message}`, tag);
    return row;
  }
  try {
    row.probeMs = await probe(sys, ch, log, size, SETTINGS);
    progress(`${sys.system} ${size} B: first record readable at ${sys.remote} ${row.probeMs} ms after its publish`, tag);
    const r: ReplicateFigures = await replicate(ch, log, ids, size, SETTINGS);
    row.replicateMsgsPerSec = r.replicateMsgsPerSec;
    row.replicate = r;
    progress(`${sys.system} ${size} B: replicate ${r.replicateMsgsPerSec}/s at ${sys.remote} (${r.arrived}/${r.published}, origin acks ${r.originAckMsgsPerSec}/s)`, tag);
    const l: LagPhaseFigures = await lag(ch, log, ids, size, SETTINGS);
    row.lag = { ratePerSec: l.ratePerSec, p50Ms: l.p50Ms, p99Ms: l.p99Ms, p999Ms: l.p999Ms, maxMs: l.maxMs, measured: l.measured, missing: l.missing };
    progress(`${sys.system} ${size} B: lag at ${l.ratePerSec}/s p50 ${l.p50Ms} p99 ${l.p99Ms} p99.9 ${l.p999Ms} ms (${l.missing} missing)`, tag);
    const c: CatchupPhaseFigures = await catchup(sys, ch, log, ids, size, SETTINGS);
    row.catchup = c;
    row.catchupMsgsPerSec = c.complete && c.cutHeld ? (c.figures?.msgsPerSec ?? null) : null;
    progress(`${sys.system} ${size} B: catch-up ${c.figures?.msgsPerSec ?? '-'}/s (${c.figures?.seconds ?? '-'} s; wire ${c.figures?.wireFractionOfLimit ?? '-'} of the limit; complete ${c.complete}; cut held ${c.cutHeld})`, tag);
    row.ok = r.complete && l.missing === 0 && c.complete && c.cutHeld;
    row.strays = log.strays;
  } catch (err) {
    const e = toEdgeqError(err);
    const readerError = ch.readerError();
    row.error = { code: e.code, message: readerError === null ? e.message : `${e.message} (the remote reader stopped: ${readerError})` };
    progress(`${sys.system} ${size} B failed: ${e.code} ${e.message}`, tag);
  } finally {
    await ch.close().catch(() => undefined);
  }
  return row;
}

async function runSystem(name: 'nats' | 'edgeq'): Promise<{ rows: GeoRow[]; info: Record<string, unknown> }> {
  const root = await tempDir(`edgeq-bench-geo-${name}-`);
  const t0 = performance.now();
  let sys: (GeoSystem & { servers?: unknown; regions?: unknown }) | null = null;
  try {
    progress(`${name}: starting two regions, ${LATENCY_MS} ms one way between them`, tag);
    sys = name === 'nats' ? await startNatsGeo(join(root, 'nats'), LATENCY_MS) : await startEdgeqGeo(join(root, 'edgeq'), LATENCY_MS, { readAtOrigin: EDGEQ_READ_AT_ORIGIN });
    const rows: GeoRow[] = [];
    for (const size of SIZES) rows.push(await measureSize(sys, size));
    const diagnostics = (await sys.diagnostics?.().catch((err: unknown) => ({ error: String(err) }))) ?? {};
    return { rows, info: { origin: sys.origin, remote: sys.remote, diagnostics, ...(sys.servers ? { ports: sys.servers } : {}), ...(sys.regions ? { regions: sys.regions } : {}), seconds: Math.round((performance.now() - t0) / 1000) } };
  } catch (err) {
    const e = toEdgeqError(err);
    progress(`${name} did not start: ${e.code} ${e.message}`, tag);
    return { rows: SIZES.map((size) => ({ system: name, messageBytes: size, replicateMsgsPerSec: null, lag: null, catchupMsgsPerSec: null, ok: false, error: { code: e.code, message: e.message } })), info: { startFailed: true } };
  } finally {
    await sys?.close().catch(() => undefined);
  }
}

async function main(): Promise<void> {
  const started = performance.now();
  // Other work may share this 2-core machine: the load averages at start and end say how much.
  const loadAtStart = loadavg().map((x) => Math.round(x * 100) / 100);
  const out = process.env.BENCH_GEO_OUT ?? (SMOKE || EDGEQ_READ_AT_ORIGIN ? join(tmpdir(), 'edgeq-geo-smoke.json') : fileURLToPath(new URL('./results/geo.json', import.meta.url)));
  const rows: GeoRow[] = [];
  const systems: Record<string, unknown> = {};
  try {
    for (const name of SYSTEMS as ('nats' | 'edgeq')[]) {
      const r = await runSystem(name);
      rows.push(...r.rows);
      systems[name] = r.info;
    }
  } finally {
    await cleanupTempDirs();
  }
  const targets = geoTargets(rows, RTT_MS);
  const result = {
    rttMs: RTT_MS,
    rows,
    targets: EDGEQ_READ_AT_ORIGIN ? { selfCheck: 'edgeq read at its origin: the targets do not apply', ...targets } : targets,
    date: new Date().toISOString(),
    smoke: SMOKE,
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', node: process.version, loadAverage1m5m15m: { atStart: loadAtStart, atEnd: loadavg().map((x) => Math.round(x * 100) / 100) } },
    settings: { ...SETTINGS, oneWayLatencyMs: LATENCY_MS, sizes: SIZES, systems: SYSTEMS, ...(EDGEQ_READ_AT_ORIGIN ? { edgeqReadAt: 'origin (self-check)' } : {}) },
    systems,
    notes: [
      'replicateMsgsPerSec: records readable at the remote per second, from the first to the last (the origin publishing as fast as its acks allow, at most `replicateWindow` unanswered). When the remote starts late in a burst (replicate.firstArrivalMs) this exceeds the origin\'s ack rate; replicate.endToEndMsgsPerSec (first publish to last readable) is the conservative figure.',
      'lag: origin ack → readable at the remote, per record, open-loop at `lag.ratePerSec`, the warm-up not recorded; both systems at the same rate.',
      'catch-up: link limited to `bandwidthBytesPerSec` both ways and cut for `partitionSeconds` while the origin took `publishRatePerSec`; publishing stops at the heal; rate from the heal until the remote holds every record. wireBytesPerSec counts every byte that crossed the link towards the remote (edgeq: its mesh traffic too).',
    ],
    tookSec: Math.round((performance.now() - started) / 1000),
  };
  await mkdir(dirname(out), { recursive: true });
  await writeFile(out, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(`${geoTable(rows)}\n\n`);
  // A self-check's edgeq figures are the origin's own log read back: no target applies to them.
  if (EDGEQ_READ_AT_ORIGIN) process.stdout.write('SELF-CHECK (BENCH_GEO_EDGEQ_READ_AT=origin): edgeq read its origin\'s own log, no replication was measured; the targets below do not apply\n');
  for (const line of targets.lines) process.stdout.write(`${line}\n`);
  process.stdout.write(`took ${result.tookSec} s; wrote ${out}\n`);
}

await main();
process.exit(0);
