/**
 * The geo benchmark's results: one row per system and message size in the shape issue 13 asks
 * for (`replicateMsgsPerSec`, `lag`, `catchupMsgsPerSec`, plus the detail behind each), the
 * issue's targets checked against JetStream's rows, and the side-by-side table.
 */
import type { CatchupPhaseFigures, ReplicateFigures } from './geo-phases.ts';

/** One system at one message size. Figures are null when their phase did not complete. */
export interface GeoRow {
  system: 'edgeq' | 'nats';
  messageBytes: number;
  replicateMsgsPerSec: number | null;
  lag: { ratePerSec: number; p50Ms: number; p99Ms: number; p999Ms: number; maxMs?: number; measured?: number; missing?: number } | null;
  catchupMsgsPerSec: number | null;
  /** Every phase completed with every record at the remote. */
  ok: boolean;
  /** Why the row is incomplete. */
  error?: { code: string; message: string };
  /** Time for the first record of the size to become readable at the remote. */
  probeMs?: number;
  replicate?: ReplicateFigures;
  catchup?: CatchupPhaseFigures;
  /** Payloads read at the remote that matched no open phase. */
  strays?: number;
}

/** Issue 13's targets, per message size: null where a figure is missing. */
export interface GeoTargetCheck {
  messageBytes: number;
  /** edgeq replicateMsgsPerSec / JetStream's; target ≥ 3. */
  throughputRatio: number | null;
  throughputMet: boolean | null;
  /** edgeq p99 lag ≤ JetStream's and ≤ RTT + 50 ms. */
  edgeqP99Ms: number | null;
  natsP99Ms: number | null;
  p99BoundMs: number;
  p99Met: boolean | null;
  /** edgeq catch-up bytes over the link / the link's limit; target ≥ 0.8. */
  catchupWireFraction: number | null;
  catchupMet: boolean | null;
}

export const THROUGHPUT_RATIO_TARGET = 3;
export const P99_SLACK_MS = 50;
export const CATCHUP_FRACTION_TARGET = 0.8;

/** Checks every size's targets; `lines` says each in words. */
export function geoTargets(rows: readonly GeoRow[], rttMs: number): { checks: GeoTargetCheck[]; lines: string[] } {
  const sizes = [...new Set(rows.map((r) => r.messageBytes))].sort((a, b) => a - b);
  const checks: GeoTargetCheck[] = [];
  const lines: string[] = [];
  const p99BoundMs = rttMs + P99_SLACK_MS;
  for (const size of sizes) {
    const e = rows.find((r) => r.system === 'edgeq' && r.messageBytes === size);
    const n = rows.find((r) => r.system === 'nats' && r.messageBytes === size);
    const ratio = e?.replicateMsgsPerSec && n?.replicateMsgsPerSec ? Math.round((e.replicateMsgsPerSec / n.replicateMsgsPerSec) * 100) / 100 : null;
    const edgeqP99Ms = e?.lag && Number.isFinite(e.lag.p99Ms) ? e.lag.p99Ms : null;
    const natsP99Ms = n?.lag && Number.isFinite(n.lag.p99Ms) ? n.lag.p99Ms : null;
    const p99Met = edgeqP99Ms === null || natsP99Ms === null ? null : edgeqP99Ms <= natsP99Ms && edgeqP99Ms <= p99BoundMs;
    const frac = e?.catchup?.complete && e.catchup.cutHeld ? (e.catchup.figures?.wireFractionOfLimit ?? null) : null;
    const c: GeoTargetCheck = {
      messageBytes: size,
      throughputRatio: ratio,
      throughputMet: ratio === null ? null : ratio >= THROUGHPUT_RATIO_TARGET,
      edgeqP99Ms,
      natsP99Ms,
      p99BoundMs,
      p99Met,
      catchupWireFraction: frac,
      catchupMet: frac === null ? null : frac >= CATCHUP_FRACTION_TARGET,
    };
    checks.push(c);
    const word = (met: boolean | null) => (met === null ? 'not measured' : met ? 'met' : 'NOT met');
    lines.push(
      `${size} B: throughput edgeq/JetStream ${ratio ?? '-'}x (target ≥ ${THROUGHPUT_RATIO_TARGET}x: ${word(c.throughputMet)}); ` +
        `p99 lag edgeq ${edgeqP99Ms ?? '-'} ms vs JetStream ${natsP99Ms ?? '-'} ms (target ≤ JetStream and ≤ ${p99BoundMs} ms: ${word(p99Met)}); ` +
        `catch-up ${frac ?? '-'} of the link limit (target ≥ ${CATCHUP_FRACTION_TARGET}: ${word(c.catchupMet)})`,
    );
  }
  return { checks, lines };
}

/** The rows side by side as a markdown table, one line per size and system. */
export function geoTable(rows: readonly GeoRow[]): string {
  const head = '| msg bytes | system | replicate msg/s | end-to-end msg/s | lag rate/s | p50 ms | p99 ms | p99.9 ms | catch-up msg/s | catch-up wire/limit | catch-up payload/limit | status |';
  const sep = '|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|';
  const f = (x: number | null | undefined) => (x === null || x === undefined || Number.isNaN(x) ? '-' : x.toLocaleString('en-US'));
  const sorted = [...rows].sort((a, b) => a.messageBytes - b.messageBytes || a.system.localeCompare(b.system));
  const lines = sorted.map((r) => {
    const status = r.ok ? 'ok' : r.error ? `failed: ${r.error.code} ${r.error.message.replace(/\|/g, '/').slice(0, 160)}` : 'incomplete';
    const cf = r.catchup?.figures;
    return `| ${r.messageBytes} | ${r.system} | ${f(r.replicateMsgsPerSec)} | ${f(r.replicate?.endToEndMsgsPerSec)} | ${f(r.lag?.ratePerSec)} | ${f(r.lag?.p50Ms)} | ${f(r.lag?.p99Ms)} | ${f(r.lag?.p999Ms)} | ${f(r.catchupMsgsPerSec)} | ${f(cf?.wireFractionOfLimit)} | ${f(cf?.payloadFractionOfLimit)} | ${status} |`;
  });
  return [head, sep, ...lines].join('\n');
}
