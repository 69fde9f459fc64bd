/**
 * The gateway's admission limiter: every interval (LIMITER_INTERVAL_MS_DEFAULT) it reads the load
 * signals, lets a CapacityController set the capacity in records/s (`edgeq`: the gradient law;
 * `seeds`: the seeds' rule, the baseline; `none`: no limit, only counting), and splits that
 * capacity max-min fairly by tenant weight over the demand it measured in the interval. Each
 * tenant takes from its own token bucket at its share, so a tenant sending 10x its share is
 * refused past its share and cannot starve the others.
 *
 * Three things bound what is admitted:
 *  - the tenant's bucket. When demand exceeds capacity, every tenant's bucket runs at the water
 *    level of the max-min split times its weight (α·w, with α such that Σ min(demand, α·w) is the
 *    capacity, as core-stateless fair queueing rates flows): a tenant asking more gets exactly α·w,
 *    and a tenant asking less keeps room up to α·w, so the noise in its own demand is not refused.
 *    The rates then sum past the capacity by what the light tenants leave unused, which they can
 *    take for at most one interval before the next split counts it;
 *  - when demand is below capacity, each bucket runs at its tenant's demand and a spare bucket
 *    holds the rest of the capacity for any tenant to draw on: the limiter is work-conserving
 *    within the interval (a tenant whose demand jumps is not held at last interval's figure);
 *  - a concurrency limit on produce requests in flight, from Little's law: the requests/s the
 *    capacity makes (capacity / records per request) times the produce p99 target, floored at
 *    CONCURRENCY_MIN. It is the in-flight count the capacity would have at the latency we accept;
 *    the measured latency is not used there because it grows with the very overload the limit
 *    must stop (positive feedback). It catches what a rate cannot: a cell that stops answering
 *    holds requests, not tokens.
 *
 * A tenant with no demand in the last interval (new, or back from a pause) draws on the spare
 * bucket while capacity is not contended; when it is, it gets a provisional share of α·w until
 * the next interval measures its demand: the limiter may over-admit by that much for at most one
 * interval, which the concurrency limit bounds, rather than refuse a light tenant for a whole
 * interval.
 *
 * A request is admitted when its bucket holds min(records, burst) tokens; the rest of a large
 * request is taken on credit (the balance goes negative, PIP-322's design), so requests larger
 * than a burst still pass and the long-run rate is exact.
 */
import type { Clock, Logger, TimerHandle } from '../src/core/index.ts';
import { EdgeqError, silentLogger, systemClock } from '../src/core/index.ts';
import { GradientController, GRADIENT_DEFAULTS, SeedsRuleController, type CapacityController } from './controller.ts';
import { maxMinFairShares } from './fair-share.ts';
import { rateLimitHeaders, retryAfterSec } from './headers.ts';
import { LatencyWindow } from './latency-window.ts';
import { DEFAULT_BURST_SEC } from './quota.ts';
import { pressures, SIGNAL_NAMES, SIGNAL_TARGETS_DEFAULT, type LoadSignals, type LoadSignalSource, type SignalName, type SignalTargets } from './signals.ts';
import { DEFAULT_TENANT_WEIGHT } from './tenant-weights.ts';
import { TokenBucket, type TakeResult } from './token-bucket.ts';
import type { AdmissionTicket, LimiterControllerName, LimiterView, SignalView } from './limiter-view.ts';

export type { AdmissionTicket, LimiterControllerName, LimiterView, SignalView, TenantView } from './limiter-view.ts';

/** The control laws a gateway may run. */
export const LIMITER_CONTROLLERS = ['none', 'seeds', 'edgeq'] as const satisfies readonly LimiterControllerName[];

/** The control interval: the issue's "every second". */
export const LIMITER_INTERVAL_MS_DEFAULT = 1_000;
/** Shortest and longest interval: under 50 ms a p99 has too few samples; over a minute it is no control loop. */
export const LIMITER_INTERVAL_MS_MIN = 50;
export const LIMITER_INTERVAL_MS_MAX = 60_000;
/**
 * Capacity before the first interval. High on purpose: the gradient law cuts by up to half per
 * interval but grows 5% (20 000 → 2 500 takes 3 intervals; 2 500 → 20 000 would take 43), so a
 * start above the plant's rate converges in seconds. The benchmark sets it.
 */
export const LIMITER_INITIAL_PER_SEC_DEFAULT = 20_000;
/**
 * The capacity never goes below this fraction of the initial capacity (the operator's estimate of
 * what the cell takes). The gradient law cuts to what the cell delivered, so under a pressure that
 * admission does not relieve (a disk slowed by other processes: fsync p99 at 150 ms on a shared
 * 2-core machine, measured in test/geo) each cut lands below the last and capacity fell to the
 * law's 10 records/s, refusing a 40-record burst. A tenth leaves the law an order of magnitude of
 * range: shaving a 5x overload down to the cell's rate needs a cut to a fifth of demand, and a
 * cell that serves under a tenth of its estimate is the concurrency limit's case.
 */
export const LIMITER_FLOOR_FRACTION = 0.1;
/** Largest capacity or ceiling (records/s): stays exact in the bucket's integer thousandths. */
export const LIMITER_PER_SEC_MAX = 1_000_000_000;
/** Tenants tracked at once (a bucket and a few counters each); the one idle longest goes first. */
export const LIMITER_TENANTS_MAX = 10_000;
/** A tenant with no request for this many intervals is forgotten (its counters too). */
export const TENANT_IDLE_INTERVALS_MAX = 300;
/** Concurrency floor: a cell answering in 1 ms at a low capacity still gets this many requests in flight. */
export const CONCURRENCY_MIN = 16;
/**
 * The concurrency limit is the requests capacity makes in flight at this many times the p99
 * target. At 1x it bound before the rate did whenever produces took longer than the target (a
 * gateway short of CPU): slots then went to whoever arrived when one freed, in proportion to
 * arrivals, and a tenant sending 10x took most of them (bench:overload, Jain 0.83). The rate's
 * fair shares do the sharing; the concurrency limit is for a cell that stops answering.
 */
export const CONCURRENCY_TARGET_MULTIPLE = 4;
/** Concurrency ceiling, whatever the capacity says. */
export const CONCURRENCY_MAX = 100_000;
/**
 * A signal binds once its pressure is at least this (half its target): below, no signal constrains
 * the capacity (demand and the growth law do), and the highest of several small pressures would
 * change at random and flood the log.
 */
export const BINDING_PRESSURE_MIN = 0.5;
/** The policy name of the RateLimit fields on a refusal. */
export const CAPACITY_POLICY = 'capacity';

export interface AdmissionLimiterOptions {
  controller: LimiterControllerName;
  intervalMs?: number;
  /** Capacity before the first interval, and the seeds' rule's base (records/s). */
  initialPerSec?: number;
  /** Signal targets over the defaults (the gateway sets produceP99Ms from --limiter-target-p99-ms). */
  targets?: Partial<SignalTargets>;
  /** Tenant weights; a tenant not listed weighs DEFAULT_TENANT_WEIGHT. */
  weights?: ReadonlyMap<string, number>;
  signals?: LoadSignalSource;
  clock?: Clock;
  logger?: Logger;
  /** Jitter of Retry-After, and the latency reservoir. */
  random?: () => number;
}

interface Tenant {
  name: string;
  weight: number;
  bucket: TokenBucket | null;
  burst: number;
  sharePerSec: number;
  // This interval, in records.
  offered: number;
  admitted: number;
  throttled: number;
  // The last interval, per second.
  demandPerSec: number;
  admittedPerSec: number;
  throttledPerSec: number;
  // Since start (the metrics' counters), in records.
  admittedTotal: number;
  throttledTotal: number;
  idleIntervals: number;
  /** Its requests in flight now (its part of the concurrency limit). */
  inFlight: number;
}

class Ticket implements AdmissionTicket {
  private finished = false;
  constructor(
    readonly records: number,
    readonly startedMs: number,
    readonly tenant: Tenant,
    private readonly onDone: (t: Ticket, ok: boolean, latencyMs: number) => void,
  ) {}

  done(ok: boolean, latencyMs: number): void {
    if (this.finished) return;
    this.finished = true;
    this.onDone(this, ok, latencyMs);
  }
}

const ZERO_SIGNALS: Readonly<LoadSignals> = Object.freeze(Object.fromEntries(SIGNAL_NAMES.map((n) => [n, 0])) as unknown as LoadSignals);

function configNumber(value: number | undefined, key: string, fallback: number, min: number, max: number, integer: boolean): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max || (integer && !Number.isSafeInteger(value))) {
    throw new EdgeqError('INVALID_CONFIG', `limiter ${key} must be ${integer ? 'an integer' : 'a number'} in [${min}, ${max}], got ${String(value)}`, { details: { key } });
  }
  return value;
}

export class AdmissionLimiter {
  readonly kind: LimiterControllerName;
  readonly intervalMs: number;
  private readonly controller: CapacityController | null;
  private readonly targets: SignalTargets;
  private readonly weights: ReadonlyMap<string, number>;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly random: () => number;
  private readonly latency: LatencyWindow;
  private readonly tenants = new Map<string, Tenant>();
  /** Tickets not done yet, oldest first (a Set keeps insertion order). */
  private readonly inFlight = new Set<Ticket>();
  private spare: TokenBucket | null = null;
  private spareBurst = 0;
  private spareRate = 0;
  /** The max-min water level (records/s per unit of weight) while demand exceeds capacity; null otherwise. */
  private level: number | null = null;
  private capacity: number;
  private ceiling = Infinity;
  private planned: number | null = null;
  private concurrency: number;
  private recordsPerRequest = 1;
  private lastTickMs: number;
  private timer: TimerHandle | null = null;
  private closed = false;
  // This interval.
  private acked = 0;
  private requests = 0;
  private requestRecords = 0;
  // The last interval.
  private signals: LoadSignals = { ...ZERO_SIGNALS };
  private bySignal: Record<SignalName, number> = { ...ZERO_SIGNALS };
  private pressure = 0;
  private binding: SignalName | null = null;
  private demandPerSec = 0;
  private achievedPerSec = 0;

  constructor(private readonly o: AdmissionLimiterOptions) {
    if (!(LIMITER_CONTROLLERS as readonly string[]).includes(o.controller)) {
      throw new EdgeqError('INVALID_CONFIG', `limiter controller must be one of ${LIMITER_CONTROLLERS.join(', ')}, got ${JSON.stringify(o.controller)}`, { details: { key: 'controller' } });
    }
    this.kind = o.controller;
    this.intervalMs = configNumber(o.intervalMs, 'intervalMs', LIMITER_INTERVAL_MS_DEFAULT, LIMITER_INTERVAL_MS_MIN, LIMITER_INTERVAL_MS_MAX, true);
    const initial = configNumber(o.initialPerSec, 'initialPerSec', LIMITER_INITIAL_PER_SEC_DEFAULT, GRADIENT_DEFAULTS.minPerSec, LIMITER_PER_SEC_MAX, true);
    this.targets = { ...SIGNAL_TARGETS_DEFAULT };
    for (const [k, v] of Object.entries(o.targets ?? {}) as [SignalName, number][]) {
      if (!SIGNAL_NAMES.includes(k)) throw new EdgeqError('INVALID_CONFIG', `limiter targets: unknown signal "${k}" (one of ${SIGNAL_NAMES.join(', ')})`, { details: { key: `targets.${k}` } });
      this.targets[k] = configNumber(v, `targets.${k}`, 0, 0, Number.MAX_SAFE_INTEGER, false);
    }
    this.weights = o.weights ?? new Map();
    this.clock = o.clock ?? systemClock;
    this.logger = (o.logger ?? silentLogger).child({ component: 'limiter' });
    this.random = o.random ?? Math.random;
    this.latency = new LatencyWindow(this.random);
    this.controller =
      o.controller === 'edgeq' ? new GradientController({ initialPerSec: initial, minPerSec: this.floorPerSec(initial), targets: this.targets }) : o.controller === 'seeds' ? new SeedsRuleController(initial, this.floorPerSec(initial), this.targets) : null;
    this.capacity = this.controller ? this.controller.capacity() : Infinity;
    this.concurrency = this.concurrencyFor(this.capacity);
    this.lastTickMs = this.clock.monotonicMs();
    this.reshare();
  }

  /** Runs the control loop every interval until `close`. */
  start(): void {
    if (this.timer || this.closed) return;
    const loop = () => {
      if (this.closed) return;
      try {
        this.tick();
      } catch (err) {
        // A bug in one interval must not stop the loop: the capacity would freeze where it is.
        this.logger.error({ err }, 'limiter interval failed');
      }
      this.timer = this.clock.setTimeout(loop, this.intervalMs);
    };
    this.timer = this.clock.setTimeout(loop, this.intervalMs);
  }

  /** Stops the loop and the signal source's polling. */
  close(): void {
    this.closed = true;
    this.timer?.cancel();
    this.timer = null;
    this.o.signals?.close?.();
  }

  /**
   * Admits a produce request of `records` records for `tenant`, or throws
   * TEMPORARY_REDUCED_CAPACITY (503) with `details.throttleMs` and `details.headers` (Retry-After
   * with jitter, RateLimit-Policy and RateLimit of the "capacity" policy). Call the ticket's
   * `done` when the request finished, whatever happened to it.
   */
  admit(tenant: string, records: number): AdmissionTicket {
    if (!Number.isSafeInteger(records) || records < 1) throw new EdgeqError('INVALID_ARGUMENT', `records must be a positive integer, got ${String(records)}`, { details: { field: 'records' } });
    const t = this.tenant(tenant);
    t.offered += records;
    t.idleIntervals = 0;
    if (this.kind === 'none') {
      // No admission check at all (the benchmark's baseline): only the figures the view shows.
      t.admitted += records;
      t.admittedTotal += records;
      this.countRequest(records);
      return this.open(records, t);
    }
    if (this.overConcurrency(t)) {
      // A slot frees when a request finishes: about one produce latency.
      return this.refuse(t, records, Math.max(1, Math.ceil(this.signals.produceP99Ms)), `${this.inFlight.size} produce requests are in flight, the limit at ${Math.round(this.capacity)} records/s`);
    }
    const own = this.takeFrom(t.bucket!, t.burst, records);
    if (!own.ok && !(this.spare !== null && this.takeFrom(this.spare, this.spareBurst, records).ok)) {
      return this.refuse(t, records, Math.max(1, own.throttleMs), `tenant "${t.name}" has a share of ${Math.round(this.allowance(t))} records/s of a capacity of ${Math.round(this.capacity)} records/s`);
    }
    t.admitted += records;
    t.admittedTotal += records;
    this.countRequest(records);
    return this.open(records, t);
  }

  /**
   * Before a request's body is read: refuses it at once when the concurrency limit is reached or
   * its tenant (and the spare) has no token for even one record, so a refusal under overload
   * costs little (no body read, no parse: on a gateway bound by its own CPU, a refusal that costs
   * as much as a produce saves nothing). Takes nothing; `admit` does, once the request is parsed.
   */
  precheck(tenant: string): void {
    if (this.kind === 'none') return;
    const t = this.tenant(tenant);
    if (this.overConcurrency(t)) {
      t.offered += 1;
      this.refuse(t, 1, Math.max(1, Math.ceil(this.signals.produceP99Ms)), `${this.inFlight.size} produce requests are in flight, the limit at ${Math.round(this.capacity)} records/s`);
    }
    const own = t.bucket!.peek(1);
    if (!own.ok && !(this.spare !== null && this.spare.peek(1).ok)) {
      t.offered += 1;
      this.refuse(t, 1, Math.max(1, own.throttleMs), `tenant "${t.name}" has a share of ${Math.round(this.allowance(t))} records/s of a capacity of ${Math.round(this.capacity)} records/s`);
    }
  }

  /** The most capacity may reach (records/s; Infinity: none): the forecast pre-scaling raises it ahead of peaks. */
  setCeiling(perSec: number): void {
    if (typeof perSec !== 'number' || Number.isNaN(perSec) || perSec < GRADIENT_DEFAULTS.minPerSec || (Number.isFinite(perSec) && perSec > LIMITER_PER_SEC_MAX)) {
      throw new EdgeqError('INVALID_ARGUMENT', `ceilingPerSec must be a number in [${GRADIENT_DEFAULTS.minPerSec}, ${LIMITER_PER_SEC_MAX}] or Infinity, got ${String(perSec)}`, { details: { field: 'ceilingPerSec' } });
    }
    this.ceiling = perSec;
    if (!this.controller) return;
    this.controller.setCeiling(perSec);
    // Applied now, not at the next interval: a ceiling lowered after a peak takes effect at once.
    this.capacity = Math.min(this.controller.capacity(), perSec);
    this.concurrency = this.concurrencyFor(this.capacity);
    this.reshare();
  }

  /**
   * The forecast pre-scaling's input: the planner's capacity for the current step (records/s),
   * decided ahead of a forecast ramp; null: no plan (reactive mode, or no forecast yet). While no
   * load signal presses, capacity is lifted to it at once (see controller.ts: pre-warm); the
   * controller still cuts under it on overload.
   */
  prewarm(perSec: number | null): void {
    if (perSec !== null && (typeof perSec !== 'number' || !Number.isFinite(perSec) || perSec < GRADIENT_DEFAULTS.minPerSec || perSec > LIMITER_PER_SEC_MAX)) {
      throw new EdgeqError('INVALID_ARGUMENT', `plannedPerSec must be null or a number in [${GRADIENT_DEFAULTS.minPerSec}, ${LIMITER_PER_SEC_MAX}], got ${String(perSec)}`, { details: { field: 'plannedPerSec' } });
    }
    this.planned = perSec;
    if (!this.controller) return;
    this.controller.setPlanned(perSec);
    this.capacity = Math.min(this.controller.capacity(), this.ceiling);
    this.concurrency = this.concurrencyFor(this.capacity);
    this.reshare();
  }

  /** One control interval (the timer calls it; tests on a fake clock may too). */
  tick(): void {
    const now = this.clock.monotonicMs();
    const elapsedSec = Math.max(1, now - this.lastTickMs) / 1000;
    this.lastTickMs = now;
    // The p99 of the produces that finished in the interval (an interval where none did reads 0).
    // Requests still in flight are not aged into it: during a leader failover every request waits
    // for the election, and counting their age would cut capacity in every interval of it for
    // latency that less admission does not shorten (measured: 20 000 → 83 records/s over two
    // SIGKILLed leaders in test/geo/faults). A cell that stops answering is the concurrency
    // limit's case: it holds requests, and past the limit new ones are refused.
    const produceP99Ms = this.latency.drain();
    let read: Partial<LoadSignals> = {};
    try {
      read = this.o.signals?.read() ?? {};
    } catch (err) {
      this.logger.warn({ err }, 'load signal source failed');
      read = Object.fromEntries(SIGNAL_NAMES.filter((n) => n !== 'produceP99Ms').map((n) => [n, NaN]));
    }
    this.signals = { ...ZERO_SIGNALS, produceP99Ms, ...read };

    let offered = 0;
    for (const t of this.tenants.values()) offered += t.offered;
    this.demandPerSec = offered / elapsedSec;
    this.achievedPerSec = this.acked / elapsedSec;
    const p = pressures(this.signals, this.targets);
    this.bySignal = p.bySignal;
    this.pressure = p.pressure;
    if (this.controller) {
      const decision = this.controller.update(this.signals, this.demandPerSec, this.achievedPerSec);
      this.capacity = decision.capacityPerSec;
    }
    const binding = p.pressure >= BINDING_PRESSURE_MIN ? p.binding : null;
    if (binding !== this.binding) {
      // Logged only on a change, so the log shows the controller's regimes, not every interval.
      this.logger.info({ from: this.binding, to: binding, pressure: p.pressure, value: binding ? this.signals[binding] : null, target: binding ? this.targets[binding] : null, capacityPerSec: this.viewCapacity() }, 'limiter binding signal changed');
      this.binding = binding;
    }

    if (this.requests > 0) this.recordsPerRequest = this.requestRecords / this.requests;
    this.concurrency = this.concurrencyFor(this.capacity);
    for (const [name, t] of this.tenants) {
      t.demandPerSec = t.offered / elapsedSec;
      t.admittedPerSec = t.admitted / elapsedSec;
      t.throttledPerSec = t.throttled / elapsedSec;
      if (t.offered === 0) t.idleIntervals++;
      t.offered = t.admitted = t.throttled = 0;
      if (t.idleIntervals > TENANT_IDLE_INTERVALS_MAX) this.tenants.delete(name);
    }
    this.acked = this.requests = this.requestRecords = 0;
    this.reshare();
  }

  /** The state `GET /v1/limiter` shows. */
  view(): LimiterView {
    const failures = this.o.signals?.failures?.() ?? {};
    const signals = {} as Record<SignalName, SignalView>;
    for (const n of SIGNAL_NAMES) {
      const v = this.signals[n];
      signals[n] = { value: Number.isFinite(v) ? v : null, target: this.targets[n], pressure: this.bySignal[n], failures: failures[n] ?? 0 };
    }
    return {
      controller: this.kind,
      intervalMs: this.intervalMs,
      capacityPerSec: this.viewCapacity(),
      concurrencyLimit: this.controller ? this.concurrency : null,
      inFlight: this.inFlight.size,
      demandPerSec: this.demandPerSec,
      achievedPerSec: this.achievedPerSec,
      ceilingPerSec: Number.isFinite(this.ceiling) ? this.ceiling : null,
      plannedPerSec: this.planned,
      binding: this.binding,
      pressure: this.pressure,
      signals,
      tenants: [...this.tenants.values()]
        .sort((a, b) => a.name.localeCompare(b.name))
        .map((t) => ({ tenant: t.name, weight: t.weight, demandPerSec: t.demandPerSec, admittedPerSec: t.admittedPerSec, throttledPerSec: t.throttledPerSec, sharePerSec: t.bucket ? this.allowance(t) : null })),
    };
  }

  /** Records admitted and refused per tenant since start (the metrics' counters). */
  totals(): { tenant: string; admitted: number; throttled: number }[] {
    return [...this.tenants.values()].map((t) => ({ tenant: t.name, admitted: t.admittedTotal, throttled: t.throttledTotal }));
  }

  // -----------------------------------------------------------------------------------------------

  /** The lowest capacity (the same for both laws, so the benchmark compares them on equal terms). */
  private floorPerSec(initial: number): number {
    return Math.max(GRADIENT_DEFAULTS.minPerSec, Math.ceil(initial * LIMITER_FLOOR_FRACTION));
  }

  private viewCapacity(): number | null {
    return this.controller ? this.capacity : null;
  }

  /** Takes `records` if the bucket holds min(records, burst); the rest on credit. */
  private takeFrom(bucket: TokenBucket, burst: number, records: number): TakeResult {
    const first = Math.min(records, burst);
    const r = bucket.tryTake(first);
    if (r.ok && records > first) bucket.take(records - first);
    return r;
  }

  private refuse(t: Tenant, records: number, throttleMs: number, why: string): never {
    t.throttled += records;
    t.throttledTotal += records;
    const headers = {
      'Retry-After': String(retryAfterSec(throttleMs, this.random)),
      ...rateLimitHeaders([{ name: CAPACITY_POLICY, quota: this.allowance(t), windowSec: 1, remaining: 0, resetSec: throttleMs / 1000 }]),
    };
    throw new EdgeqError('TEMPORARY_REDUCED_CAPACITY', `the load controller has cut admission (${why}${this.binding ? `; binding signal ${this.binding}` : ''}); retry in ${throttleMs} ms`, {
      details: { throttleMs, tenant: t.name, capacityPerSec: Math.round(this.capacity), sharePerSec: Math.round(this.allowance(t)), headers },
    });
  }

  private countRequest(records: number): void {
    this.requests++;
    this.requestRecords += records;
  }

  private open(records: number, t: Tenant): AdmissionTicket {
    const ticket = new Ticket(records, this.clock.monotonicMs(), t, (x, ok, ms) => this.finish(x, ok, ms));
    this.inFlight.add(ticket);
    t.inFlight++;
    return ticket;
  }

  /** A ticket's `done`. */
  /**
   * The concurrency limit, shared by weight: with the limit reached, a tenant is refused only when
   * it holds its weighted part of the slots or more (one sending 10x its share fills the slots
   * first; the others still get theirs). A tenant under its part may pass the limit, so the slots
   * in use stay under twice the limit (the sum of the parts is the limit).
   */
  private overConcurrency(t: Tenant): boolean {
    if (this.inFlight.size < this.concurrency) return false;
    if (this.inFlight.size >= 2 * this.concurrency) return true;
    let weights = 0;
    for (const x of this.tenants.values()) if (x === t || x.inFlight > 0 || x.demandPerSec > 0) weights += x.weight;
    return t.inFlight >= Math.max(1, Math.floor((this.concurrency * t.weight) / Math.max(t.weight, weights)));
  }

  private finish(ticket: Ticket, ok: boolean, latencyMs: number): void {
    this.inFlight.delete(ticket);
    ticket.tenant.inFlight--;
    this.latency.record(latencyMs);
    if (ok) this.acked += ticket.records;
  }

  private tenant(name: string): Tenant {
    let t = this.tenants.get(name);
    if (t) return t;
    if (this.tenants.size >= LIMITER_TENANTS_MAX) {
      // Forget the tenant idle longest (ties: the oldest entry).
      let victim: Tenant | undefined;
      for (const c of this.tenants.values()) if (!victim || c.idleIntervals > victim.idleIntervals) victim = c;
      this.tenants.delete(victim!.name);
    }
    const weight = this.weights.get(name) ?? DEFAULT_TENANT_WEIGHT;
    t = { name, weight, bucket: null, burst: 1, sharePerSec: 0, offered: 0, admitted: 0, throttled: 0, demandPerSec: 0, admittedPerSec: 0, throttledPerSec: 0, admittedTotal: 0, throttledTotal: 0, idleIntervals: 0, inFlight: 0 };
    this.tenants.set(name, t);
    if (this.controller) this.setShare(t, this.provisionalShare(weight));
    return t;
  }

  /** What a tenant may be admitted per second now (its bucket, and the spare while there is one). */
  private allowance(t: Tenant): number {
    return t.sharePerSec + (this.spare ? this.spareRate : 0);
  }

  /**
   * The share of a tenant without measured demand: the water level when contended; otherwise none
   * of its own (it draws on the spare bucket, which holds what nobody claims: a bucket of its own
   * on top would let it take the capacity twice).
   */
  private provisionalShare(weight: number): number {
    return this.level !== null ? this.level * weight : 0;
  }

  /** Splits the capacity max-min fairly by weight over the last interval's demand. */
  private reshare(): void {
    if (!this.controller) return;
    const active = [...this.tenants.values()].filter((t) => t.demandPerSec > 0);
    const shares = maxMinFairShares(this.capacity, active.map((t) => ({ key: t.name, demand: t.demandPerSec, weight: t.weight })));
    let given = 0;
    let level = 0;
    for (const t of active) {
      const s = shares.get(t.name) ?? 0;
      given += s;
      level = Math.max(level, s / t.weight);
    }
    // Contended: the shares took the whole capacity (to within a record/s of rounding).
    const spare = Math.floor(this.capacity - given);
    this.level = active.length > 0 && spare < 1 ? level : null;
    for (const t of active) this.setShare(t, this.level !== null ? this.level * t.weight : (shares.get(t.name) ?? 0));
    for (const t of this.tenants.values()) if (t.demandPerSec <= 0) this.setShare(t, this.provisionalShare(t.weight));
    if (spare < 1) {
      this.spare = null;
      this.spareRate = 0;
      return;
    }
    this.spareRate = spare;
    this.spareBurst = Math.max(1, Math.round(spare * DEFAULT_BURST_SEC));
    const spec = { ratePerSec: spare, burst: this.spareBurst };
    if (this.spare) this.spare.reconfigure(spec);
    else this.spare = new TokenBucket(spec, this.clock);
  }

  private setShare(t: Tenant, perSec: number): void {
    // Buckets take whole tokens per second; a share under 1/s still lets one record through a second.
    const rate = Math.max(1, Math.min(LIMITER_PER_SEC_MAX, Math.floor(perSec)));
    t.sharePerSec = perSec;
    t.burst = Math.max(1, Math.round(rate * DEFAULT_BURST_SEC));
    const spec = { ratePerSec: rate, burst: t.burst };
    if (t.bucket) t.bucket.reconfigure(spec);
    else t.bucket = new TokenBucket(spec, this.clock);
  }

  /** Little's law: the requests/s `capacity` makes, times the produce p99 target (and its multiple). */
  private concurrencyFor(capacity: number): number {
    if (!Number.isFinite(capacity)) return CONCURRENCY_MAX;
    const targetSec = (this.targets.produceP99Ms > 0 ? this.targets.produceP99Ms : SIGNAL_TARGETS_DEFAULT.produceP99Ms) / 1000;
    const requestsPerSec = capacity / Math.max(1, this.recordsPerRequest);
    return Math.min(CONCURRENCY_MAX, Math.max(CONCURRENCY_MIN, Math.ceil(requestsPerSec * targetSec * CONCURRENCY_TARGET_MULTIPLE)));
  }
}
