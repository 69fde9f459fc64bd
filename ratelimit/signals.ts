/**
 * The load signals the controller reads every interval, each with the target it should stay
 * under. "Pressure" of a signal is value / target (1 = at target); the binding signal is the one
 * with the highest pressure.
 */

export interface LoadSignals {
  /** Gateway event-loop delay p99 (ms). */
  eventLoopDelayP99Ms: number;
  /** Produce latency p99 through the gateway (ms). */
  produceP99Ms: number;
  /** Brokers' fsync p99 (ms). */
  fsyncP99Ms: number;
  /** ISR shrinks in the last interval. */
  isrShrinks: number;
  /** Partitions whose ISR is smaller than their replica set. */
  underReplicatedPartitions: number;
  /** Records of this region's own writes not yet applied in other regions. */
  replicationBacklogRecords: number;
  /** The gateway's resident memory (MB). */
  rssMb: number;
}

export type SignalName = keyof LoadSignals;

/** Every signal's name, in a fixed order (views and metrics list them so). */
export const SIGNAL_NAMES: readonly SignalName[] = Object.freeze(['eventLoopDelayP99Ms', 'produceP99Ms', 'fsyncP99Ms', 'isrShrinks', 'underReplicatedPartitions', 'replicationBacklogRecords', 'rssMb']);

/**
 * Where the limiter reads the signals every interval. `read` must be quick and synchronous (it
 * runs on the interval timer): a source that needs I/O (the cell's status) polls in the
 * background and answers its last value. A signal it cannot read now is NaN (pressures() ignores
 * it); a signal it does not give is 0, except produceP99Ms, which the limiter measures itself
 * from its tickets unless the source gives one.
 */
export interface LoadSignalSource {
  read(): Partial<LoadSignals>;
  /** Failed reads of each signal since start. */
  failures?(): Partial<Record<SignalName, number>>;
  /** Stops any background polling. */
  close?(): void;
}

/** Where each signal should stay; a signal with target 0 is not used. */
export type SignalTargets = Record<SignalName, number>;

export const SIGNAL_TARGETS_DEFAULT: Readonly<SignalTargets> = Object.freeze({
  // An event loop late by more than this is the gateway itself falling behind.
  eventLoopDelayP99Ms: 50,
  // The gateway's produce p99 target; the benchmark sets it from the unloaded p99 (2x).
  produceP99Ms: 50,
  fsyncP99Ms: 100,
  // Any shrink or under-replicated partition is the cell in trouble: 1 means "one is too many".
  isrShrinks: 1,
  underReplicatedPartitions: 1,
  replicationBacklogRecords: 1_000_000,
  rssMb: 1024,
});

/** Each used signal's pressure, and the binding one. */
export function pressures(s: LoadSignals, targets: SignalTargets): { bySignal: Record<SignalName, number>; binding: SignalName; pressure: number } {
  const bySignal = {} as Record<SignalName, number>;
  let binding: SignalName = 'produceP99Ms';
  let pressure = -Infinity;
  for (const k of Object.keys(targets) as SignalName[]) {
    const t = targets[k];
    const p = t > 0 && Number.isFinite(s[k]) ? s[k] / t : 0;
    bySignal[k] = p;
    if (p > pressure) {
      pressure = p;
      binding = k;
    }
  }
  return { bySignal, binding, pressure: Math.max(0, pressure) };
}
