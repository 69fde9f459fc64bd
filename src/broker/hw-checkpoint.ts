/**
 * The broker's high-watermark checkpoint (Kafka's `replication-offset-checkpoint`): the high
 * watermark of every local replica, written now and then and at a clean stop, and read at start so
 * a partition opens with a high watermark that is at most stale-low, never one taken from its log
 * end. A leader's log end may hold a tail no follower has; a stale-low high watermark only delays
 * what consumers see until the followers' fetches move it again.
 *
 * Keys are the partition folder names (`<topic>.<topicId>/<partition>`), so a topic created again
 * under the same name never inherits the old one's marks.
 */
import { join } from 'node:path';
import type { Storage } from '../log/index.ts';

export const HW_CHECKPOINT_FILE = 'replication-offset-checkpoint.json';
const FORMAT_VERSION = 1;

/** Reads the checkpoint; an absent or unreadable file is an empty one (every HW starts at the log start). */
export async function readHwCheckpoint(storage: Storage, dataDir: string): Promise<Map<string, number>> {
  const path = join(dataDir, HW_CHECKPOINT_FILE);
  const out = new Map<string, number>();
  if (!(await storage.exists(path))) return out;
  try {
    const parsed = JSON.parse((await storage.readFile(path)).toString('utf8')) as { version?: unknown; partitions?: unknown };
    if (parsed.version !== FORMAT_VERSION || typeof parsed.partitions !== 'object' || parsed.partitions === null) return out;
    for (const [k, v] of Object.entries(parsed.partitions as Record<string, unknown>)) {
      if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) out.set(k, v);
    }
  } catch {
    // A damaged checkpoint costs only visibility: every HW starts at its log start and moves up
    // with the followers' fetches.
  }
  return out;
}

/** Writes the checkpoint atomically. */
export async function writeHwCheckpoint(storage: Storage, dataDir: string, marks: ReadonlyMap<string, number>): Promise<void> {
  const body = JSON.stringify({ version: FORMAT_VERSION, partitions: Object.fromEntries(marks) });
  await storage.writeFileAtomic(join(dataDir, HW_CHECKPOINT_FILE), Buffer.from(body, 'utf8'));
}

/** The checkpoint key of one partition. */
export function hwCheckpointKey(topic: string, topicId: string, partition: number): string {
  return `${topic}.${topicId}/${partition}`;
}
