/**
 * Keeping aside what recovery cannot use. A segment recovery would drop (it follows a corrupt one,
 * or does not start where the previous one ends) is renamed, and the bytes cut off a segment at a
 * corrupt batch are copied, to `*.corrupt` files in the log's folder instead of being deleted: the
 * data may be the only copy of acknowledged writes, so an operator (or a later repair) can still
 * read it. No later open takes such a file for a segment (`parseSegmentName` matches only
 * `<20 digits>.log`), and retention and reset never look at it; `destroy` removes the folder with
 * everything in it.
 */
import { join } from 'node:path';
import { EdgeqError } from '../core/errors.ts';
import type { Storage, StorageFile } from './storage.ts';

/** The suffix of every file kept aside. */
export const CORRUPT_SUFFIX = '.corrupt';
/**
 * Names tried for one file before giving up: `x.corrupt`, `x.1.corrupt`, … A folder with this
 * many corrupt copies of the same segment needs an operator, not another copy.
 */
const ASIDE_NAMES_MAX = 1000;
/** Bytes copied per read when keeping a cut-off tail (a tail is at most a segment, 256 MiB). */
const COPY_CHUNK_BYTES = 1024 * 1024;

/** True when `name` is a file kept aside by recovery. */
export function isCorruptName(name: string): boolean {
  return name.endsWith(CORRUPT_SUFFIX);
}

/**
 * The first free set of aside names for `names` (files of one segment, kept under one number so
 * they stay together): `n.corrupt` for each, else `n.1.corrupt`, and so on.
 */
async function freeAsideNames(storage: Storage, dir: string, names: readonly string[]): Promise<string[]> {
  for (let n = 0; n < ASIDE_NAMES_MAX; n++) {
    const candidates = names.map((name) => (n === 0 ? `${name}${CORRUPT_SUFFIX}` : `${name}.${n}${CORRUPT_SUFFIX}`));
    const taken = await Promise.all(candidates.map((c) => storage.exists(join(dir, c))));
    if (!taken.some(Boolean)) return candidates;
  }
  throw new EdgeqError('STORAGE_ERROR', `${dir} already holds ${ASIDE_NAMES_MAX} corrupt copies of ${names[0]}`, {
    details: { dir, file: names[0] },
  });
}

/**
 * Renames the files `names` of `dir` that exist to free aside names, and returns, for each one
 * that existed, its old and new name. The caller syncs the folder.
 */
export async function moveAside(storage: Storage, dir: string, names: readonly string[]): Promise<{ from: string; to: string }[]> {
  const targets = await freeAsideNames(storage, dir, names);
  const moved: { from: string; to: string }[] = [];
  for (let i = 0; i < names.length; i++) {
    const from = join(dir, names[i]!);
    if (!(await storage.exists(from))) continue;
    await storage.rename(from, join(dir, targets[i]!));
    moved.push({ from: names[i]!, to: targets[i]! });
  }
  return moved;
}

/**
 * Copies the bytes [start, end) of `file` into a new aside file named after `name`, durably
 * (synced, folder synced) before the caller cuts them off. Returns the new file's name.
 */
export async function copyAside(
  storage: Storage,
  file: StorageFile,
  range: { start: number; end: number },
  dir: string,
  name: string,
): Promise<string> {
  const [target] = await freeAsideNames(storage, dir, [name]);
  const out = await storage.open(join(dir, target!), { create: true });
  try {
    const chunk = Buffer.allocUnsafe(Math.min(COPY_CHUNK_BYTES, Math.max(1, range.end - range.start)));
    for (let at = range.start; at < range.end; ) {
      const n = await file.read(chunk, 0, Math.min(chunk.length, range.end - at), at);
      if (n <= 0) throw new EdgeqError('STORAGE_ERROR', `short read at ${at} of ${file.path} while keeping its tail aside`);
      const written = await out.writev([chunk.subarray(0, n)], at - range.start);
      if (written !== n) throw new EdgeqError('STORAGE_FULL', `short write keeping the tail of ${file.path} aside`);
      at += n;
    }
    await out.datasync();
  } finally {
    await out.close();
  }
  await storage.syncDir(dir);
  return target!;
}
