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
 * Two guards keep the cuts from collapsing capacity when the pressure is not the admission's doing
 * (a loaded machine's fsync, refusals that cost the gateway as much as produces):
 *  - the delivered-rate floor uses the best rate acknowledged over the last `deliveredWindow`
 *    intervals (BBR's max filter), not the last one alone, so successive cuts do not compound
 *    0.9 × 0.9 × … below what the plant delivered a few seconds ago;
 *  - a cut that brought no relief (the pressure after it at or above `reliefRatio` of the pressure
 *    before it) is not followed by another: capacity holds until the pressure falls under target
 *    (then it may grow) or rises past `reliefRatio`⁻¹ of the held level (a new overload: cut again).
 *    Cutting further when cutting does not help only refuses goodput.
 *
 * The seeds' rule (`capacity = base × (1 − load/100)`) sits behind the same interface, as the
 * baseline the benchmark runs beside it. A ceiling input bounds both.
 *
 * Pre-warm (`setPlanned`, the forecast pre-scaling's input): the planner's capacity for the current
 * step, decided ahead of a forecast ramp. While no signal presses, capacity jumps up to it at once
 * instead of climbing a few percent per interval, so the ramp is admitted; demand above it still
 * grows capacity the usual way (a low forecast never refuses what the controller alone would
 * admit), and when the plan falls after the peak, capacity falls back to the controller's own
 * level. The forecast never overrides overload protection: a cut applies as always, and the lift
 * stays off for PREWARM_HOLD_INTERVALS calm intervals after it, so cut and lift do not alternate.
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
  /** The most capacity may reach (Infinity: none). */
  setCeiling(perSec: number): void;
  /** The pre-warm level (records/s) capacity is lifted to while no signal presses; null: none. */
  setPlanned(perSec: number | null): void;
}

/** Calm intervals after a cut before the plan may lift capacity again. */
export const PREWARM_HOLD_INTERVALS = 5;

export interface GradientOptions {
  initialPerSec: number;
  minPerSec: number;
  /** Growth per interval while under target and demand-bound (fraction). */
  growth: number;
  /** Largest cut in one interval (fraction kept at least). */
  cutFloor: number;
  /** Pressure below which capacity may grow (a margin under 1 keeps it off the edge). */
  growBelow: number;
  /** A cut keeps at least this fraction of the best rate acknowledged over the delivered window. */
  deliveredFloor: number;
  /** Intervals of the delivered-rate max filter. */
  deliveredWindow: number;
  /** A cut relieved the pressure when the pressure after it is below this fraction of it before. */
  reliefRatio: number;
  targets: SignalTargets;
}

export const GRADIENT_DEFAULTS: Readonly<Omit<GradientOptions, 'initialPerSec'>> = Object.freeze({
  minPerSec: 10,
  growth: 0.05,
  cutFloor: 0.5,
  growBelow: 0.9,
  deliveredFloor: 0.9,
  deliveredWindow: 5,
  reliefRatio: 0.9,
  targets: SIGNAL_TARGETS_DEFAULT,
});

export class GradientController implements CapacityController {
  /** The capacity in force: the controller's own level, or the plan's while it lifts it. */
  private cap: number;
  /** The controller's own level: what capacity would be without the plan. */
  private own: number;
  private planned: number | null = null;
  /** Calm intervals left before the plan may lift capacity again (set by a cut). */
  private liftHold = 0;
  private ceiling = Infinity;
  private readonly o: GradientOptions;
  /** The rates acknowledged in the last intervals (newest last), for the max filter. */
  private readonly delivered: number[] = [];
  /** The pressure when capacity was last cut, while waiting to see whether the cut helped. */
  private cutPressure: number | null = null;
  /** Set once a cut brought no relief: the pressure level capacity is held at. */
  private heldPressure: number | null = null;

  constructor(o: Partial<GradientOptions> & { initialPerSec: number }) {
    this.o = { ...GRADIENT_DEFAULTS, ...o };
    this.cap = this.own = o.initialPerSec;
  }

  capacity(): number {
    return this.cap;
  }

  setCeiling(perSec: number): void {
    this.ceiling = perSec;
    this.cap = Math.min(this.cap, perSec);
    this.own = Math.min(this.own, perSec);
  }

  setPlanned(perSec: number | null): void {
    this.planned = perSec;
    // Applied now, both ways: a step's plan holds for the step, not from the next interval on.
    this.cap = this.bounded(this.liftHold === 0 && perSec !== null ? Math.max(this.own, perSec) : this.own);
  }

  update(signals: LoadSignals, demandPerSec: number, achievedPerSec = 0): ControllerDecision {
    const { binding, pressure } = pressures(signals, this.o.targets);
    this.delivered.push(Math.max(0, achievedPerSec));
    if (this.delivered.length > this.o.deliveredWindow) this.delivered.shift();
    if (pressure > 1) {
      // Did the last cut help? If not, hold (see the file comment), unless the pressure rose anew.
      if (this.cutPressure !== null && pressure >= this.cutPressure * this.o.reliefRatio) this.heldPressure = this.cutPressure;
      this.cutPressure = null;
      const held = this.heldPressure !== null && pressure < this.heldPressure / this.o.reliefRatio;
      if (!held) {
        this.heldPressure = null;
        const best = Math.max(...this.delivered);
        const cut = Math.max(this.cap / pressure, best * this.o.deliveredFloor, this.cap * this.o.cutFloor);
        if (cut < this.cap) {
          this.cap = cut;
          this.cutPressure = pressure;
        }
      }
      // Whatever the plan said, the level the pressure left is the controller's own from now on.
      this.own = this.cap;
      this.liftHold = PREWARM_HOLD_INTERVALS;
    } else {
      this.cutPressure = null;
      this.heldPressure = null;
      if (this.liftHold > 0) this.liftHold--;
      if (pressure < this.o.growBelow) {
        // Demand beyond a lifted capacity (the forecast was low) grows it from the lift; demand
        // within it grows the controller's own level by its own law, so that the own level, what
        // capacity falls back to after the peak, is what the controller alone would have reached.
        if (demandPerSec > this.cap && this.cap > this.own) this.own = this.cap * (1 + this.o.growth);
        else if (demandPerSec >= this.own * 0.9) this.own = this.own * (1 + this.o.growth);
      }
      this.own = this.bounded(this.own);
      const lift = this.liftHold === 0 && this.planned !== null ? this.planned : 0;
      // Near the target (growBelow ≤ pressure ≤ 1) the lift holds what it reached but raises no further.
      this.cap = Math.max(this.own, pressure < this.o.growBelow ? lift : Math.min(this.cap, lift));
    }
    this.own = this.bounded(this.own);
    this.cap = this.bounded(this.cap);
    return { capacityPerSec: this.cap, binding, pressure };
  }

  private bounded(perSec: number): number {
    return Math.max(this.o.minPerSec, Math.min(this.ceiling, perSec));
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

  /** The seeds' rule is the benchmark's memoryless baseline: it has no pre-warm input. */
  setPlanned(): void {}

  update(signals: LoadSignals): ControllerDecision {
    const { binding, pressure } = pressures(signals, this.targets);
    const load = Math.min(100, pressure * 100);
    this.cap = Math.max(this.minPerSec, Math.min(this.ceiling, this.basePerSec * (1 - load / 100)));
    return { capacityPerSec: this.cap, binding, pressure };
  }
}
