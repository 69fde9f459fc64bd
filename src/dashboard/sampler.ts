/**
 * The dashboard's history: once a second, one point per region of the mesh (ingress against the
 * forecast that was made for that second, the limiter's capacity, the planner's ceiling and
 * desired instances), kept an hour at 1 s and a day at 1 min. This region's figures come from its
 * own planner and limiter; every other region's from its entry in the mesh (what its gateways
 * publish: load, forecast summary, plan). Nothing here asks the cell: the sample is cheap enough
 * to run whether anyone watches or not, so the history is there when someone opens the page.
 *
 * The forecast drawn under the actual is the one that stood before the second came: at each tick
 * the sampler looks the second up in the forecast it kept at the previous tick (made earlier),
 * then keeps the newest forecast for the next tick. So the band under the actual is what a person
 * would have seen ahead of time, the way AWS's predictive scaling draws past forecasts.
 */
import type { Clock, TimerHandle } from '../core/index.ts';
import type { CapacityReport } from '../../forecast/planner/types.ts';
import type { MeshView } from '../gateway/mesh.ts';
import type { LimiterView } from '../../ratelimit/index.ts';
import { DASHBOARD_COARSE_POINTS_MAX, DASHBOARD_COARSE_STEP_MS, DASHBOARD_FINE_POINTS_MAX, DASHBOARD_REGIONS_MAX, DASHBOARD_SAMPLE_MS } from './limits.ts';
import { meanPoint, SeriesRing, type SeriesColumns, type SeriesPoint } from './series.ts';

/** Where the sampler reads. Each may be absent (a gateway without a mesh, planner or limiter). */
export interface SamplerSources {
  readonly region: string;
  readonly mesh?: (() => MeshView | null) | undefined;
  readonly capacity?: (() => CapacityReport | null) | undefined;
  readonly limiter?: (() => LimiterView | null) | undefined;
}

/** One forecast point as the page draws the future part: start of the step, P50 and the P10–P90 band. */
export interface ForecastPoint {
  t: number;
  p50: number;
  p10: number;
  p90: number;
}

/** What one region looks like now: its newest point and the forecast ahead of it. */
export interface RegionNow {
  region: string;
  point: SeriesPoint | null;
  forecast: ForecastPoint[];
  /** `predictive` or `reactive` (the planner's fallback); null: no planner there. */
  mode: 'predictive' | 'reactive' | null;
  method: string | null;
  health: { cellReady: boolean; brokersAlive: number; brokersTotal: number; underReplicatedPartitions: number } | null;
}

interface RegionSeries {
  fine: SeriesRing;
  coarse: SeriesRing;
  /** Fine points of the minute being filled, for its coarse mean. */
  minute: SeriesPoint[];
  minuteStart: number;
  /** The newest forecast, to look the next second up in. */
  forecast: ForecastPoint[];
  now: RegionNow;
}

/** A region's entry in the mesh, as much of it as the sampler reads (the gateway's MeshView keeps it `unknown`). */
interface EntryLoad {
  ingressRecordsPerSec?: unknown;
  capacityRecordsPerSec?: unknown;
}
interface EntryForecast {
  kind?: unknown;
  t0?: unknown;
  pointMs?: unknown;
  p50?: unknown;
  p90?: unknown;
  p10?: unknown;
  plan?: { broker?: unknown; gateway?: unknown; ceilingPerSec?: unknown };
  method?: unknown;
  mode?: unknown;
}

const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : NaN);

/**
 * A source's value, or null when it has none or cannot give one now (a gateway's mesh is wired
 * after its app is built): a sample goes on with what the others give.
 */
export function readSource<T>(source: (() => T | null) | undefined): T | null {
  try {
    return source?.() ?? null;
  } catch {
    return null;
  }
}

/** The forecast point whose step holds `t`, or null. */
function lookup(forecast: readonly ForecastPoint[], t: number, stepMs: number): ForecastPoint | null {
  for (const f of forecast) if (f.t <= t && t < f.t + stepMs) return f;
  return null;
}

export class DashboardSampler {
  private readonly regions = new Map<string, RegionSeries>();
  private timer: TimerHandle | null = null;
  private stopped = false;

  constructor(
    private readonly sources: SamplerSources,
    private readonly clock: Clock,
  ) {}

  /** Samples once a second (DASHBOARD_SAMPLE_MS), half-way through it, until `stop`. */
  start(): void {
    if (this.timer || this.stopped) return;
    // Half-way through each second: the sources close their own 1 s steps on the whole second
    // (the ingress history's last step read 0 for a moment there), and a sample taken on it raced them.
    const next = () => {
      const into = this.clock.nowMs() % DASHBOARD_SAMPLE_MS;
      return (into < DASHBOARD_SAMPLE_MS / 2 ? 0 : DASHBOARD_SAMPLE_MS) + DASHBOARD_SAMPLE_MS / 2 - into;
    };
    const tick = () => {
      this.timer = null;
      if (this.stopped) return;
      this.sample();
      this.timer = this.clock.setTimeout(tick, next());
    };
    // The first sample a moment later, not now: the gateway is still being put together.
    this.timer = this.clock.setTimeout(tick, next());
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = null;
  }

  /** Takes one point of every region at the current second. Public for tests on a fake clock. */
  sample(): void {
    const t = Math.floor(this.clock.nowMs() / DASHBOARD_SAMPLE_MS) * DASHBOARD_SAMPLE_MS;
    const mesh = readSource(this.sources.mesh);
    const report = readSource(this.sources.capacity);
    const limiter = readSource(this.sources.limiter);
    const own = this.sources.region;
    const names = new Set<string>([own, ...(mesh?.regions.map((r) => r.region) ?? [])]);
    for (const name of names) {
      if (!this.regions.has(name) && this.regions.size >= DASHBOARD_REGIONS_MAX) continue;
      const entry = mesh?.regions.find((r) => r.region === name) ?? null;
      const s = this.series(name, t);
      const load = (entry?.load ?? {}) as EntryLoad;
      const fc = (entry?.forecast ?? {}) as EntryForecast;
      const summary = fc.kind === 'forecast' ? fc : null;
      const health = (entry?.health ?? null) as RegionNow['health'];
      let forecast: ForecastPoint[];
      let stepMs: number;
      const point: SeriesPoint = { t, ingress: NaN, capacity: NaN, ceiling: NaN, p50: NaN, p10: NaN, p90: NaN, brokers: NaN, gateways: NaN };
      let mode: RegionNow['mode'] = null;
      let method: string | null = null;
      if (name === own && report) {
        stepMs = report.step;
        forecast = report.forecast.map((f) => ({ t: f.t, p50: f.p50, p10: f.p10, p90: f.p90 }));
        point.ingress = report.now.ingressPerSec;
        point.capacity = num(limiter?.capacityPerSec ?? report.now.capacityPerSec);
        const plan = report.plan.find((p) => p.t <= t && t < p.t + report.step) ?? null;
        point.ceiling = num(plan?.ceilingPerSec);
        point.brokers = num(plan?.instances.broker);
        point.gateways = num(plan?.instances.gateway);
        mode = report.model.mode;
        method = report.model.method;
      } else {
        stepMs = num(summary?.pointMs) || DASHBOARD_SAMPLE_MS;
        const t0 = num(summary?.t0);
        const p50 = Array.isArray(summary?.p50) ? (summary.p50 as unknown[]) : [];
        const p90 = Array.isArray(summary?.p90) ? (summary.p90 as unknown[]) : [];
        // A peer from before the lower band publishes none: its band starts at its P50.
        const p10 = Array.isArray(summary?.p10) ? (summary.p10 as unknown[]) : p50;
        forecast = Number.isFinite(t0) ? p50.map((v, i) => ({ t: t0 + i * stepMs, p50: num(v), p10: num(p10[i]), p90: num(p90[i]) })) : [];
        point.ingress = num(load.ingressRecordsPerSec);
        point.capacity = num(name === own ? (limiter?.capacityPerSec ?? load.capacityRecordsPerSec) : load.capacityRecordsPerSec);
        point.ceiling = num(summary?.plan?.ceilingPerSec);
        point.brokers = num(summary?.plan?.broker);
        point.gateways = num(summary?.plan?.gateway);
        mode = summary?.mode === 'predictive' || summary?.mode === 'reactive' ? summary.mode : null;
        method = typeof summary?.method === 'string' ? summary.method : null;
      }
      // The past forecast: what stood for this second before it came.
      const before = lookup(s.forecast, t, stepMs);
      point.p50 = before?.p50 ?? NaN;
      point.p10 = before?.p10 ?? NaN;
      point.p90 = before?.p90 ?? NaN;
      s.forecast = forecast.filter((f) => f.t + stepMs > t);
      this.push(s, point);
      s.now = { region: name, point, forecast: s.forecast, mode, method, health };
    }
  }

  /** Every region's newest point and forecast, this region first. */
  now(): RegionNow[] {
    const own = this.regions.get(this.sources.region);
    return [...(own ? [own.now] : []), ...[...this.regions.entries()].filter(([n]) => n !== this.sources.region).map(([, s]) => s.now)];
  }

  /** Each region's points over the last `rangeMs`: 1 s points up to an hour, 1 min points beyond. */
  history(rangeMs: number): { stepMs: number; regions: Record<string, SeriesColumns> } {
    const fine = rangeMs <= DASHBOARD_FINE_POINTS_MAX * DASHBOARD_SAMPLE_MS;
    const from = this.clock.nowMs() - rangeMs;
    const regions: Record<string, SeriesColumns> = {};
    for (const [name, s] of this.regions) regions[name] = (fine ? s.fine : s.coarse).since(from);
    return { stepMs: fine ? DASHBOARD_SAMPLE_MS : DASHBOARD_COARSE_STEP_MS, regions };
  }

  private series(name: string, t: number): RegionSeries {
    let s = this.regions.get(name);
    if (!s) {
      s = {
        fine: new SeriesRing(DASHBOARD_FINE_POINTS_MAX),
        coarse: new SeriesRing(DASHBOARD_COARSE_POINTS_MAX),
        minute: [],
        minuteStart: Math.floor(t / DASHBOARD_COARSE_STEP_MS) * DASHBOARD_COARSE_STEP_MS,
        forecast: [],
        now: { region: name, point: null, forecast: [], mode: null, method: null, health: null },
      };
      this.regions.set(name, s);
    }
    return s;
  }

  private push(s: RegionSeries, p: SeriesPoint): void {
    const last = s.fine.last();
    if (last && last.t >= p.t) return; // one point per second, in order (a late timer adds none)
    s.fine.push(p);
    const minute = Math.floor(p.t / DASHBOARD_COARSE_STEP_MS) * DASHBOARD_COARSE_STEP_MS;
    if (minute !== s.minuteStart && s.minute.length > 0) {
      s.coarse.push(meanPoint(s.minuteStart, s.minute));
      s.minute = [];
    }
    s.minuteStart = minute;
    // Bounded: at most one minute of 1 s points.
    if (s.minute.length < DASHBOARD_COARSE_STEP_MS / DASHBOARD_SAMPLE_MS) s.minute.push(p);
  }
}
