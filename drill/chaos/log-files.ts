/**
 * Corrupting a stopped follower's log behind the broker's back (the campaign's "corruption on a
 * minority"): find a partition's last segment in a broker's data folder, then cut its tail or flip
 * bits in its middle at a seeded position. Only ever called while the broker is held down, so no
 * process has the file open; the broker's recovery (CRC32C of every batch past its checkpoint) and
 * the leader's repair are what the campaign then checks.
 */
import { open, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { EdgeqError } from '../../src/core/index.ts';
import { parseSegmentName, segmentStem } from '../../src/log/index.ts';
import { BROKER_TOPICS_DIR, BROKER_TOPICS_FILE } from '../checker/index.ts';

/** Most bytes a tail truncation cuts (a few batches of the workload's ~100-byte records). */
export const TRUNCATE_BYTES_MAX = 4_096;
/** Bits flipped by one flip corruption: a few, in one byte (what a bad sector or a cosmic ray does). */
export const FLIP_BYTES = 1;

/** What a corruption did, for the timeline and the report. */
export interface Corruption {
  readonly path: string;
  readonly kind: 'truncate' | 'flip';
  /** Size before; for a flip, the byte position and mask. */
  readonly sizeBefore: number;
  readonly sizeAfter: number;
  readonly position?: number;
  readonly mask?: number;
}

/** The folder of `topic`-`partition` in a broker's data folder, or null when the broker has none. */
export async function partitionFolder(dataDir: string, topic: string, partition: number): Promise<string | null> {
  let parsed: { topics?: { name?: unknown; id?: unknown }[] };
  try {
    parsed = JSON.parse((await readFile(join(dataDir, BROKER_TOPICS_FILE))).toString('utf8')) as typeof parsed;
  } catch {
    return null;
  }
  const t = (parsed.topics ?? []).find((x) => x.name === topic);
  return t && typeof t.id === 'string' ? join(dataDir, BROKER_TOPICS_DIR, `${topic}.${t.id}`, String(partition)) : null;
}

/** The newest segment file of a partition folder with at least one byte in it, or null. */
export async function lastSegment(dir: string): Promise<{ path: string; size: number } | null> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return null;
  }
  const bases = names.map(parseSegmentName).filter((b): b is number => b !== null).sort((a, b) => b - a);
  for (const base of bases) {
    const path = join(dir, `${segmentStem(base)}.log`);
    const size = (await stat(path)).size;
    if (size > 0) return { path, size };
  }
  return null;
}

/**
 * Cuts 1..TRUNCATE_BYTES_MAX bytes (at most half the file) off the end of `path`, seeded by
 * `random`: a torn or lost tail, which recovery must cut back to the last whole batch.
 */
export async function truncateTail(path: string, random: () => number): Promise<Corruption> {
  const sizeBefore = (await stat(path)).size;
  if (sizeBefore < 2) throw new EdgeqError('INVALID_ARGUMENT', `${path} is too small to truncate (${sizeBefore} bytes)`, { details: { path } });
  const cut = 1 + Math.floor(random() * Math.min(TRUNCATE_BYTES_MAX, Math.floor(sizeBefore / 2)));
  const f = await open(path, 'r+');
  try {
    await f.truncate(sizeBefore - cut);
    await f.datasync();
  } finally {
    await f.close();
  }
  return { path, kind: 'truncate', sizeBefore, sizeAfter: sizeBefore - cut };
}

/**
 * XORs one byte in the middle half of `path` ([size/4, 3·size/4), seeded) with a non-zero mask:
 * a batch whose bytes no longer match its CRC32C, which the broker must never serve or elect.
 */
export async function flipBits(path: string, random: () => number): Promise<Corruption> {
  const size = (await stat(path)).size;
  if (size < 4) throw new EdgeqError('INVALID_ARGUMENT', `${path} is too small to corrupt (${size} bytes)`, { details: { path } });
  const from = Math.floor(size / 4);
  const position = from + Math.floor(random() * Math.max(1, Math.floor(size / 2)));
  const mask = 1 + Math.floor(random() * 255);
  const f = await open(path, 'r+');
  try {
    const b = Buffer.alloc(FLIP_BYTES);
    await f.read(b, 0, FLIP_BYTES, position);
    b[0] = b[0]! ^ mask;
    await f.write(b, 0, FLIP_BYTES, position);
    await f.datasync();
  } finally {
    await f.close();
  }
  return { path, kind: 'flip', sizeBefore: size, sizeAfter: size, position, mask };
}
