/**
 * The load controller: every interval it reads the load signals and sets the gateway's
 * admission capacity (records/s). The law is a gradient one in the manner of Netflix's
 * concurrency-limits Gradient2: while every signal is under its target, capacity grows slowly
 * (a few percent per interval, and only while demand presses against it: an idle gateway does not
 * inflate a limit it never tested); when the binding signal is over its target by a factor p,
 * capacity is cut at once to capacity / p (at most halved per interval). Growing slowly and
 * cutting fast keeps the queue short. A latency signal overshoots far more than the rate does (one
 * interval at 3% over the service rate queues 30 ms of work), so a cut by the pressure alone lands
 * far below what the plant serves; the cut is therefore floored at 90% of the rate actually
 * acknowledged in the interval (the plant's delivery rate, as BBR estimates it), which drains the
 * queue without giving up more goodput than that. The sawtooth stays within ~10% of the rate.
 *
 * The seeds' rule (`capacity = base × (1 − load/100)`) sits behind the same interface, as the
 * baseline the benchmark runs beside it. A ceiling input (the forecast pre-scaling raises it ahead
 * of peaks) bounds both.
 */
import { pressures, SIGNAL_TARGETS_DEFAULT, type LoadSignals, type SignalName, type SignalTargets } from './signals.ts';

export interface ControllerDecision {
  capacityPerSec: number;
  binding: SignalName;
  pressure: number;
}

export interface CapacityController {
  /**
   * One interval: the signals now, the demand (records/s offered) and the rate acknowledged in the
   * last interval (0 when unknown).
   */
  update(signals: LoadSignals, demandPerSec: number, achievedPerSec?: number): ControllerDecision;
  /** The capacity now. */
  capacity(): number;
  /** The most capacity may reach (raised ahead of forecast peaks; Infinity: none). */
  setCeiling(perSec: number): void;
}

export interface GradientOptions {
  initialPerSec: number;
  minPerSec: number;
  /** Growth per interval while under target and demand-bound (fraction). */
  growth: number;
  /** Largest cut in one interval (fraction kept at least). */
  cutFloor: number;
  /** Pressure below which capacity may grow (a margin under 1 keeps it off the edge). */
  growBelow: number;
  /** A cut keeps at least this fraction of the rate acknowledged in the interval. */
  deliveredFloor: number;
  targets: SignalTargets;
}

export const GRADIENT_DEFAULTS: Readonly<Omit<GradientOptions, 'initialPerSec'>> = Object.freeze({
  minPerSec: 10,
  growth: 0.05,
  cutFloor: 0.5,
  growBelow: 0.9,
  deliveredFloor: 0.9,
  targets: SIGNAL_TARGETS_DEFAULT,
});

export class GradientController implements CapacityController {
  private cap: number;
  private ceiling = Infinity;
  private readonly o: GradientOptions;

  constructor(o: Partial<GradientOptions> & { initialPerSec: number }) {
    this.o = { ...GRADIENT_DEFAULTS, ...o };
    this.cap = o.initialPerSec;
  }

  capacity(): number {
    return this.cap;
  }

  setCeiling(perSec: number): void {
    this.ceiling = perSec;
    this.cap = Math.min(this.cap, perSec);
  }

  update(signals: LoadSignals, demandPerSec: number, achievedPerSec = 0): ControllerDecision {
    const { binding, pressure } = pressures(signals, this.o.targets);
    if (pressure > 1) {
      const cut = Math.max(this.cap / pressure, achievedPerSec * this.o.deliveredFloor, this.cap * this.o.cutFloor);
      this.cap = Math.min(this.cap, cut);
    } else if (pressure < this.o.growBelow && demandPerSec >= this.cap * 0.9) {
      this.cap = this.cap * (1 + this.o.growth);
    }
    this.cap = Math.max(this.o.minPerSec, Math.min(this.ceiling, this.cap));
    return { capacityPerSec: this.cap, binding, pressure };
  }
}

/**
 * The seeds' rule: capacity = base × (1 − load/100), with load the binding signal's pressure as a
 * percentage (100 at target), floored at the minimum. It has no memory: at a load held at its
 * target it admits nothing more than the minimum, and under it, it admits more than the plant
 * serves.
 */
export class SeedsRuleController implements CapacityController {
  private cap: number;
  private ceiling = Infinity;

  constructor(
    private readonly basePerSec: number,
    private readonly minPerSec = GRADIENT_DEFAULTS.minPerSec,
    private readonly targets: SignalTargets = SIGNAL_TARGETS_DEFAULT,
  ) {
    this.cap = basePerSec;
  }

  capacity(): number {
    return this.cap;
  }

  setCeiling(perSec: number): void {
    this.ceiling = perSec;
  }

  update(signals: LoadSignals): ControllerDecision {
    const { binding, pressure } = pressures(signals, this.targets);
    const load = Math.min(100, pressure * 100);
    this.cap = Math.max(this.minPerSec, Math.min(this.ceiling, this.basePerSec * (1 - load / 100)));
    return { capacityPerSec: this.cap, binding, pressure };
  }
}
