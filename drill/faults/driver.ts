/**
 * How a drill injects faults (issue 16): an interface, so the same scenarios run against the local
 * deployment's supervisor (dev-driver.ts) and, later, a Kubernetes driver. A driver remembers what
 * it injected, and `healAll()` undoes all of it (links back to their settings before the drill,
 * stopped processes continued), so a drill never leaves the deployment worse than it found it,
 * also when it is interrupted or fails.
 */

/** One process of the deployment. */
export interface DeploymentProcess {
  readonly name: string;
  readonly region: string;
  readonly role: 'arbiter' | 'broker' | 'gateway';
  /** null while it is not running (the supervisor is restarting it). */
  readonly pid: number | null;
}

/** Settings of a degraded link (the link emulator's). */
export interface LinkDegradation {
  readonly latencyMs?: number;
  readonly jitterMs?: number;
  /** 0..1. */
  readonly lossRate?: number;
}

/** One link between regions as the driver sees it. */
export interface DeploymentLink {
  readonly from: string;
  readonly to: string;
  readonly latencyMs: number;
  readonly jitterMs: number;
  readonly lossRate: number;
  readonly blackhole: boolean;
}

export interface FaultDriver {
  /** Every process, with its region and role (pid null while down). */
  processes(): Promise<DeploymentProcess[]>;
  /** Every link between regions. */
  links(): Promise<DeploymentLink[]>;
  /** SIGKILL: the supervisor restarts it (with backoff). */
  kill(p: DeploymentProcess): Promise<void>;
  /** SIGSTOP (a pause: the process is alive but answers nothing) until `resume` or `healAll`. */
  pause(p: DeploymentProcess): Promise<void>;
  resume(p: DeploymentProcess): Promise<void>;
  /** Cuts (or heals) both directions between two regions. */
  blackhole(a: string, b: string, on: boolean): Promise<void>;
  /** Degrades one direction `from → to`; `null` puts back the settings it had before the first change. */
  degrade(from: string, to: string, settings: LinkDegradation | null): Promise<void>;
  /** Undoes every fault this driver injected and not yet undone; safe to call more than once. */
  healAll(): Promise<void>;
}
