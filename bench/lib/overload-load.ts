/**
 * The open loop of the overload bench. Every flow (a tenant's sender at its offered rate) has its
 * send times fixed in advance: request i is due at t0 + i/rate, whatever happened to the ones
 * before it, and its latency is measured from that due time to the end of its answer, so a server
 * (or a client out of sockets) that falls behind shows it in the latency instead of quietly
 * sending less (coordinated omission). Bounded: a flow sends at most rate × duration requests, holds
 * at most `inflightMax` unanswered (a request due beyond that is not sent and counts as dropped),
 * stops sending SCHEDULE_LAG_MS_MAX after its last due time (the rest count as dropped) and waits
 * for its answers at most as long as the sender's request timeout.
 */
import { newHistogram, type Histogram } from './harness.ts';
import type { Answer, Sender } from './overload-sender.ts';

/** Unanswered requests one flow may hold; a due request beyond it is dropped by the client. */
export const FLOW_INFLIGHT_MAX = 20_000;
/** How far behind its schedule a flow may fall before it gives up on the requests still due. */
export const SCHEDULE_LAG_MS_MAX = 5_000;
/** The first request of a run is due this long after the run starts (set-up out of the way). */
const START_DELAY_MS = 20;

/** One tenant's load. */
export interface Flow {
  name: string;
  sender: Sender;
  ratePerSec: number;
}

/** Bounds of a run. */
export interface RunOptions {
  durationMs: number;
  /** Width of the windows admitted requests are counted in, by the time they were sent. */
  windowMs?: number;
  inflightMax?: number;
  /** False: nothing recorded (a warm-up). */
  record?: boolean;
}

/** What one flow saw. */
export interface FlowStats {
  name: string;
  offeredPerSec: number;
  durationMs: number;
  /** Requests due in the run (sent + dropped). */
  due: number;
  sent: number;
  ok: number;
  throttled: number;
  other: number;
  timeouts: number;
  /** Due but not sent: too many unanswered, or too far behind the schedule. */
  dropped: number;
  /** Answers by `status code` (e.g. `429 QUOTA_EXCEEDED`, `0 TIMEOUT`, `200`). */
  answers: Record<string, number>;
  /** Latency of admitted (2xx) requests from their due time, µs. */
  latency: Histogram;
  /** Latency of throttled answers from their due time, µs. */
  throttledLatency: Histogram;
  /** Admitted requests per window, by send time from the first due time. */
  okByWindow: number[];
  /** Admitted requests sent after the last window (a client that fell behind its schedule). */
  okAfterWindows: number;
  /** Admitted requests answered by the end of the run (first due time + duration). */
  okAnsweredInRun: number;
}

/**
 * Goodput: admissions answered during the run, per second of it. By answer time, because that is
 * when the server did the work: without a limiter past its capacity, the cell answers its queue
 * for seconds after the schedule ended, and counting those answers against the run's length would
 * credit it with a rate it never had (seen: no limiter at 5x in a 3 s case, 29,744 admissions, the
 * slowest answered 4.9 s after it was due, which a count over the run's length called 9,915/s).
 */
export function goodputPerSec(s: FlowStats): number {
  return s.durationMs <= 0 ? 0 : s.okAnsweredInRun / (s.durationMs / 1000);
}

/**
 * The admitted rate of what was offered during the run: requests sent within the run and
 * admitted (whenever answered), per second. By send time, so a late answer (this 2-core machine's
 * event loop stalls) still counts for the tenant that sent it, and requests a lagging client sent
 * after the run count for none; what fairness and a quota are about is how much of what each
 * sender offered in a period was let in.
 */
export function admittedSentPerSec(s: FlowStats): number {
  const inWindows = s.okByWindow.reduce((a, b) => a + b, 0);
  return s.durationMs <= 0 ? 0 : inWindows / (s.durationMs / 1000);
}

/** Runs the flows side by side for `durationMs` and returns each one's figures (destroy their histograms). */
export async function runOpenLoop(flows: readonly Flow[], o: RunOptions): Promise<FlowStats[]> {
  return Promise.all(flows.map((f) => runFlow(f, o)));
}

async function runFlow(flow: Flow, o: RunOptions): Promise<FlowStats> {
  const inflightMax = o.inflightMax ?? FLOW_INFLIGHT_MAX;
  const windowMs = o.windowMs ?? o.durationMs;
  const record = o.record ?? true;
  const windows = Math.max(1, Math.ceil(o.durationMs / windowMs));
  const s = zeroStats(flow.name, {
    offeredPerSec: flow.ratePerSec,
    durationMs: o.durationMs,
    due: Math.max(0, Math.round((flow.ratePerSec * o.durationMs) / 1000)),
    okByWindow: new Array<number>(windows).fill(0),
  });

  if (s.due === 0) return s;
  const intervalMs = 1000 / flow.ratePerSec;
  const t0 = performance.now() + START_DELAY_MS;
  const giveUpAt = t0 + o.durationMs + SCHEDULE_LAG_MS_MAX;
  let inflight = 0;
  let drained: (() => void) | null = null;

  const onAnswer = (a: Answer, dueAt: number, windowIndex: number) => {
    inflight--;
    const us = Math.max(1, Math.round((performance.now() - dueAt) * 1000));
    const key = a.code === null ? String(a.status) : `${a.status} ${a.code}`;
    s.answers[key] = (s.answers[key] ?? 0) + 1;
    if (a.outcome === 'ok') {
      s.ok++;
      if (performance.now() <= t0 + o.durationMs) s.okAnsweredInRun++;
      if (record) s.latency.recordValue(us);
      // A request sent after the last window (a client that fell behind) is in none of them.
      if (windowIndex >= 0 && windowIndex < windows) s.okByWindow[windowIndex]!++;
      else s.okAfterWindows++;
    } else if (a.outcome === 'throttled') {
      s.throttled++;
      if (record) s.throttledLatency.recordValue(us);
    } else {
      s.other++;
      if (a.code === 'TIMEOUT') s.timeouts++;
    }
    if (inflight === 0) drained?.();
  };

  let i = 0;
  while (i < s.due) {
    const now = performance.now();
    if (now > giveUpAt) {
      s.dropped += s.due - i;
      break;
    }
    // Everything due by now goes out at once; then sleep to the next due time (a timer, never a
    // busy wait: the load generator shares this 2-core machine with the deployment).
    for (; i < s.due && t0 + i * intervalMs <= now; i++) {
      const dueAt = t0 + i * intervalMs;
      if (inflight >= inflightMax) {
        s.dropped++;
        continue;
      }
      inflight++;
      s.sent++;
      const windowIndex = Math.floor((performance.now() - t0) / windowMs);
      void flow.sender.send().then((a) => onAnswer(a, dueAt, windowIndex));
    }
    if (i < s.due) await new Promise((r) => setTimeout(r, Math.max(1, t0 + i * intervalMs - performance.now())));
  }
  // Every request ends within the sender's own timeout: wait for the last answers.
  if (inflight > 0) await new Promise<void>((r) => (drained = r));
  return s;
}

/** Percentile of a µs histogram in ms (3 decimals), null when it holds nothing. */
export function percentileMs(h: Histogram, p: number): number | null {
  if (h.totalCount === 0) return null;
  return Math.round(h.getValueAtPercentile(p)) / 1000;
}

/** A flow's figures before anything was sent: every count 0, empty histograms. */
function zeroStats(name: string, o: Pick<FlowStats, 'offeredPerSec' | 'durationMs' | 'due' | 'okByWindow'>): FlowStats {
  return { name, ...o, sent: 0, ok: 0, throttled: 0, other: 0, timeouts: 0, dropped: 0, answers: {}, latency: newHistogram(), throttledLatency: newHistogram(), okAfterWindows: 0, okAnsweredInRun: 0 };
}

/** The flows' figures summed into one (histograms added into a new one). */
export function mergeStats(name: string, stats: readonly FlowStats[]): FlowStats {
  const out = zeroStats(name, { offeredPerSec: 0, durationMs: Math.max(0, ...stats.map((x) => x.durationMs)), due: 0, okByWindow: [] });

  for (const x of stats) {
    out.offeredPerSec += x.offeredPerSec;
    for (const k of ['due', 'sent', 'ok', 'throttled', 'other', 'timeouts', 'dropped', 'okAfterWindows', 'okAnsweredInRun'] as const) out[k] += x[k];
    for (const [k, v] of Object.entries(x.answers)) out.answers[k] = (out.answers[k] ?? 0) + v;
    out.latency.add(x.latency);
    out.throttledLatency.add(x.throttledLatency);
    x.okByWindow.forEach((v, w) => (out.okByWindow[w] = (out.okByWindow[w] ?? 0) + v));
  }
  return out;
}

/** Frees the histograms (hdr-histogram-js may hold them in WebAssembly memory). */
export function destroyStats(stats: readonly FlowStats[]): void {
  for (const x of stats) {
    x.latency.destroy();
    x.throttledLatency.destroy();
  }
}
