/**
 * What the admission limiter shows (`GET /v1/limiter`, docs/openapi.yaml's Limiter schema) and
 * hands out (a ticket per admitted produce request).
 */
import type { SignalName } from './signals.ts';

/** The control laws a gateway may run: the gradient law, the seeds' rule, or none. */
export type LimiterControllerName = 'none' | 'seeds' | 'edgeq';

/** A signal as `view()` shows it. */
export interface SignalView {
  /** The last value read (null: the source could not read it, NaN). */
  value: number | null;
  /** Its target (0: not used). */
  target: number;
  pressure: number;
  /** Failed reads since start. */
  failures: number;
}

/** A tenant as `view()` shows it: rates over the last interval. */
export interface TenantView {
  tenant: string;
  weight: number;
  demandPerSec: number;
  admittedPerSec: number;
  throttledPerSec: number;
  /** The most it may be admitted per second now: its bucket's rate, plus the spare bucket's while capacity is not contended (null with `none`). */
  sharePerSec: number | null;
}

/** The body of `GET /v1/limiter`. */
export interface LimiterView {
  controller: LimiterControllerName;
  intervalMs: number;
  /** Admission capacity (records/s); null with `none`. */
  capacityPerSec: number | null;
  /** Produce requests allowed in flight; null with `none`. */
  concurrencyLimit: number | null;
  inFlight: number;
  /** Records/s offered in the last interval (admitted and refused). */
  demandPerSec: number;
  /** Records/s acknowledged in the last interval. */
  achievedPerSec: number;
  /** The most capacity may reach; null: none. */
  ceilingPerSec: number | null;
  /** The forecast pre-scaling's level for the current step, capacity is lifted to it while no signal presses; null: no plan. */
  plannedPerSec: number | null;
  /** The signal with the highest pressure, once it is at least 0.5 (BINDING_PRESSURE_MIN); null: none binds. */
  binding: SignalName | null;
  /** The highest pressure (value / target) of any signal. */
  pressure: number;
  signals: Record<SignalName, SignalView>;
  tenants: TenantView[];
}

/** What admitting a produce request gave: call `done` once when it finished. */
export interface AdmissionTicket {
  /** The request finished after `latencyMs`; `ok`: its records were acknowledged. Later calls are ignored. */
  done(ok: boolean, latencyMs: number): void;
}
