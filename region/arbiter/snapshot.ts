/**
 * The arbiter's persistent state on disk: one JSON file replaced atomically (write a temporary
 * file, fsync it, rename it over the old one, fsync the folder), so a crash leaves either the old
 * or the new snapshot, never a torn one.
 */
import { open, readFile, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import { EdgeqError } from '../../src/core/index.ts';

/**
 * Largest snapshot file read back: keysMax (100 000) keys of a few hundred bytes plus the history
 * comes to tens of MiB; 256 MiB refuses a wrong file before parsing it.
 */
export const SNAPSHOT_BYTES_MAX = 256 * 1024 * 1024;

const snapshotSchema = z.object({
  format: z.literal(1),
  revision: z.number().int().nonnegative(),
  compactRevision: z.number().int().nonnegative(),
  keys: z.array(z.object({ key: z.string().min(1), value: z.string(), createRevision: z.number().int().positive(), modRevision: z.number().int().positive(), leaseId: z.string() })),
  history: z.array(z.object({ type: z.enum(['put', 'delete']), key: z.string().min(1), value: z.string(), modRevision: z.number().int().positive() })),
});

/** Keys (values in base64), revision and recent history of a MemoryArbiter. */
export type ArbiterSnapshot = z.infer<typeof snapshotSchema>;

/** Writes `snapshot` to `file` atomically and durably. */
export async function writeSnapshotFile(file: string, snapshot: ArbiterSnapshot): Promise<void> {
  const tmp = `${file}.tmp`;
  const fh = await open(tmp, 'w');
  try {
    await fh.writeFile(JSON.stringify(snapshot));
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, file);
  // The rename is durable only once the folder's entry is on disk.
  const dir = await open(dirname(file), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}

/** Reads a snapshot written by `writeSnapshotFile`; null when there is none yet. */
export async function readSnapshotFile(file: string): Promise<ArbiterSnapshot | null> {
  let text: string;
  try {
    const fh = await open(file, 'r');
    try {
      const { size } = await fh.stat();
      if (size > SNAPSHOT_BYTES_MAX) throw new EdgeqError('STORAGE_ERROR', `arbiter snapshot ${file} is ${size} bytes, over ${SNAPSHOT_BYTES_MAX}`, { retriable: false });
    } finally {
      await fh.close();
    }
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  // A leftover temporary file is from a write that never completed: the snapshot above is current.
  await rm(`${file}.tmp`, { force: true });
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new EdgeqError('STORAGE_ERROR', `arbiter snapshot ${file} is not JSON`, { cause: err, retriable: false });
  }
  const result = snapshotSchema.safeParse(parsed);
  if (!result.success) throw new EdgeqError('STORAGE_ERROR', `arbiter snapshot ${file} is malformed: ${result.error.message}`, { retriable: false });
  return result.data;
}
