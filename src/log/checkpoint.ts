/**
 * The recovery checkpoint of a log: how far the active segment is known to be durable and valid,
 * whether the log was closed cleanly, and which boot of the machine wrote it. On open after a
 * crash only the bytes after it are scanned; after a clean close nothing is.
 */
import { join } from 'node:path';
import type { Storage } from './storage.ts';

export const CHECKPOINT_FILE = 'recovery-checkpoint.json';
const CHECKPOINT_VERSION = 1;

export interface RecoveryCheckpoint {
  /** Base offset of the segment the position is in. */
  segmentBaseOffset: number;
  /** Bytes of that segment that were fdatasync'd and valid when written. */
  position: number;
  /** The log end offset at `position`. */
  nextOffset: number;
  /** The segment's largest record timestamp up to `position` (-1 when empty). */
  maxTimestamp: number;
  /** True only when written by a clean close: the segment holds exactly `position` bytes. */
  clean: boolean;
  /**
   * The storage's boot id when this was written (`Storage.bootId`), or null when unknown
   * (including checkpoints written before the field existed, which carry none).
   */
  bootId: string | null;
}

/** Reads the checkpoint of the log in `dir`; null when missing or unreadable. */
export async function readCheckpoint(storage: Storage, dir: string): Promise<RecoveryCheckpoint | null> {
  let raw: Buffer;
  try {
    raw = await storage.readFile(join(dir, CHECKPOINT_FILE));
  } catch {
    return null;
  }
  try {
    const v = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
    const ints = ['segmentBaseOffset', 'position', 'nextOffset'] as const;
    if (v.version !== CHECKPOINT_VERSION || typeof v.clean !== 'boolean') return null;
    if (!Number.isSafeInteger(v.maxTimestamp) || (v.maxTimestamp as number) < -1) return null;
    if (!ints.every((k) => Number.isSafeInteger(v[k]) && (v[k] as number) >= 0)) return null;
    // Absent in checkpoints of earlier versions: the boot they were written on is unknown.
    const bootId = v.bootId === undefined || v.bootId === null ? null : v.bootId;
    if (typeof bootId !== 'string' && bootId !== null) return null;
    return {
      segmentBaseOffset: v.segmentBaseOffset as number,
      position: v.position as number,
      nextOffset: v.nextOffset as number,
      maxTimestamp: v.maxTimestamp as number,
      clean: v.clean,
      bootId,
    };
  } catch {
    return null;
  }
}

/** Writes the checkpoint atomically. */
export async function writeCheckpoint(storage: Storage, dir: string, cp: RecoveryCheckpoint): Promise<void> {
  const body = JSON.stringify({ version: CHECKPOINT_VERSION, ...cp });
  await storage.writeFileAtomic(join(dir, CHECKPOINT_FILE), Buffer.from(body, 'utf8'));
}
