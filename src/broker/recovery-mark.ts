/**
 * The durable mark of a replica that may lack records it once held: its log was opened after an
 * unclean shutdown on a new boot of the machine (the OS may have dropped writes that were never
 * synced), or recovery cut bytes or moved segments aside (`PartitionLog.recovery`). Such a
 * replica may have told its leader it held records it no longer has, so it must not lead until
 * it has caught up with a leader again (the idea of Kafka's KIP-966 eligible leader replicas).
 *
 * The mark lives beside the log (`recovering.json`) so that it outlives further restarts: a
 * replica that crashes again before catching up, even cleanly closed in between, is still
 * marked. It is removed only once the replica has caught up.
 */
import { join } from 'node:path';
import type { LogRecoveryReport, Storage } from '../log/index.ts';

export const RECOVERY_MARK_FILE = 'recovering.json';
const FORMAT_VERSION = 1;

/** Why and since when a replica is recovering. */
export interface RecoveryMark {
  reason: string;
  /** Wall-clock time the mark was set. */
  sinceMs: number;
}

/** The reason a log's recovery report gives for a mark, or null when it lost nothing. */
export function markReason(report: LogRecoveryReport): string | null {
  if (!report.mayHaveLostWrites) return null;
  const why: string[] = [];
  if (!report.cleanShutdown && !report.sameBoot) why.push('unclean shutdown on a new boot');
  if (report.truncatedBytes > 0) why.push(`recovery cut ${report.truncatedBytes} bytes`);
  if (report.corruptSegments.length > 0) why.push(`${report.corruptSegments.length} files moved aside as corrupt`);
  if (report.shortOfCheckpoint) why.push('less on disk than its checkpoint');
  return why.join('; ') || 'the log may lack writes it once accepted';
}

/** Reads the mark in `dir`; null when there is none. A damaged mark still counts as a mark. */
export async function readRecoveryMark(storage: Storage, dir: string): Promise<RecoveryMark | null> {
  const path = join(dir, RECOVERY_MARK_FILE);
  if (!(await storage.exists(path))) return null;
  try {
    const v = JSON.parse((await storage.readFile(path)).toString('utf8')) as { version?: unknown; reason?: unknown; sinceMs?: unknown };
    if (v.version === FORMAT_VERSION && typeof v.reason === 'string' && Number.isSafeInteger(v.sinceMs)) return { reason: v.reason, sinceMs: v.sinceMs as number };
  } catch {
    // fall through: the file exists, so the replica was marked
  }
  return { reason: 'recovering (mark unreadable)', sinceMs: 0 };
}

/** Writes the mark durably. */
export async function writeRecoveryMark(storage: Storage, dir: string, mark: RecoveryMark): Promise<void> {
  await storage.writeFileAtomic(join(dir, RECOVERY_MARK_FILE), Buffer.from(JSON.stringify({ version: FORMAT_VERSION, ...mark }), 'utf8'));
}

/** Removes the mark durably (the folder entry is synced). */
export async function clearRecoveryMark(storage: Storage, dir: string): Promise<void> {
  const path = join(dir, RECOVERY_MARK_FILE);
  if (!(await storage.exists(path))) return;
  await storage.unlink(path);
  await storage.syncDir(dir);
}
