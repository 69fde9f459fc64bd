/**
 * The storage a process opens its data folder through, chosen by one environment variable that
 * is read here and nowhere else, so a composition root (the broker's, a test child's) only passes
 * the result on:
 *
 * - `EDGEQ_FAULT_STORAGE` unset or empty: the real file system (production);
 * - `EDGEQ_FAULT_STORAGE=power-loss`: **a test facility**: the power-loss storage over the real
 *   file system, journalling under `<dataDir>/.power-loss/`, so that a test can SIGKILL the
 *   process and then call `applyPowerLoss(dataDir)` to discard what a power cut would have. It
 *   costs a journal write per first write after each fdatasync; never set it in production.
 */
import { EdgeqError } from '../core/errors.ts';
import { FsStorage } from './fs-storage.ts';
import { PowerLossStorage } from './power-loss-storage.ts';
import type { Storage } from './storage.ts';

/** The environment variable that selects a fault-injecting storage. */
export const FAULT_STORAGE_ENV = 'EDGEQ_FAULT_STORAGE';

/** The storages `EDGEQ_FAULT_STORAGE` can select. */
export type FaultStorageKind = 'none' | 'power-loss';
const KINDS: Record<string, FaultStorageKind> = { '': 'none', 'power-loss': 'power-loss' };

/** Which storage `env` selects; INVALID_CONFIG naming the variable for any other value. */
export function faultStorageKind(env: NodeJS.ProcessEnv = process.env): FaultStorageKind {
  const value = env[FAULT_STORAGE_ENV] ?? '';
  const kind = KINDS[value];
  if (kind === undefined) {
    throw new EdgeqError('INVALID_CONFIG', `${FAULT_STORAGE_ENV} must be "power-loss" or unset, got "${value}"`, {
      details: { key: FAULT_STORAGE_ENV },
    });
  }
  return kind;
}

/** The storage for the data folder `dataDir`, as `env` selects (the real file system by default). */
export function storageFromEnv(dataDir: string, env: NodeJS.ProcessEnv = process.env): Storage {
  const fs = new FsStorage();
  return faultStorageKind(env) === 'power-loss' ? new PowerLossStorage(fs, { root: dataDir }) : fs;
}
