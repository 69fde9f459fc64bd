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
  /** null while it is not running (the supervisor is restarting it, or it is held down). */
  readonly pid: number | null;
  /** Held down by the driver (`hold`), not restarted until `release`. */
  readonly held?: boolean;
}

/** One broker: where it listens and where its log is (the checker reads replicas from disk). */
export interface DeploymentBroker {
  readonly name: string;
  readonly id: number;
  readonly address: string;
  readonly admin: string;
  readonly dataDir: string;
}

/** One region of the deployment. */
export interface DeploymentRegion {
  readonly region: string;
  readonly gateway: string;
  readonly gatewayName: string;
  readonly arbiter: { readonly name: string; readonly address: string; readonly dataDir: string };
  readonly brokers: readonly DeploymentBroker[];
}

/** Where every part of the deployment is. */
export interface Deployment {
  readonly dataDir: string;
  /** `power-loss`: the brokers write through the power-loss storage (campaign and tests only). */
  readonly faultStorage: 'none' | 'power-loss';
  readonly regions: readonly DeploymentRegion[];
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
  /** Where everything is (regions, gateways, brokers and their data folders). */
  deployment(): Promise<Deployment>;
  /** Every process, with its region and role (pid null while down). */
  processes(): Promise<DeploymentProcess[]>;
  /** Every link between regions. */
  links(): Promise<DeploymentLink[]>;
  /** SIGKILL: the supervisor restarts it (with backoff). */
  kill(p: DeploymentProcess): Promise<void>;
  /**
   * Takes a process down (SIGKILL by default) and keeps it down until `release` or `healAll`:
   * for faults applied to a stopped process (a power loss, a corrupted segment).
   */
  hold(p: DeploymentProcess, signal?: 'SIGKILL' | 'SIGTERM'): Promise<void>;
  /** Starts a held process again; resolves once it is ready. */
  release(p: DeploymentProcess): Promise<void>;
  /** SIGSTOP (a pause: the process is alive but answers nothing) until `resume` or `healAll`. */
  pause(p: DeploymentProcess): Promise<void>;
  resume(p: DeploymentProcess): Promise<void>;
  /** Cuts (or heals) both directions between two regions. */
  blackhole(a: string, b: string, on: boolean): Promise<void>;
  /** Degrades one direction `from → to`; `null` puts back the settings it had before the first change. */
  degrade(from: string, to: string, settings: LinkDegradation | null): Promise<void>;
  /** Undoes every fault this driver injected and not yet undone (resumes, releases, links back); safe to call more than once. */
  healAll(): Promise<void>;
}
