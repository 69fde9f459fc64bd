/**
 * Drill ids: `<yyyymmddThhmmss>-<scenario>-<4 hex>` (UTC), so ids sort by start time and say what
 * ran; the id is also a file name in the report folder, so it is checked against one strict
 * pattern before it touches a path (a `../` or a `/` can never reach the file system).
 */
import { EdgeqError } from '../../src/core/index.ts';

/** A scenario name as an id carries it: the drills' names, `chaos` for a campaign round. */
export const DRILL_SCENARIO_PATTERN = /^[a-z][a-z0-9-]{0,39}$/;

/** Every id the store accepts; anything else is INVALID_ARGUMENT before a path is built. */
export const DRILL_ID_PATTERN = /^(\d{8}T\d{6})-([a-z][a-z0-9-]{0,39})-([0-9a-f]{4})$/;

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** A new id for a drill of `scenario` started at `startedAtMs`; `random` (0..1) picks the 4 hex digits. */
export function newDrillId(scenario: string, startedAtMs: number, random: () => number = Math.random): string {
  if (!DRILL_SCENARIO_PATTERN.test(scenario)) {
    throw new EdgeqError('INVALID_ARGUMENT', `a drill scenario is 1..40 of [a-z0-9-] starting with a letter, got ${JSON.stringify(scenario)}`, { details: { field: 'scenario' } });
  }
  if (!Number.isSafeInteger(startedAtMs) || startedAtMs < 0) throw new EdgeqError('INVALID_ARGUMENT', `startedAtMs must be a non-negative integer, got ${startedAtMs}`);
  const d = new Date(startedAtMs);
  const stamp = `${pad(d.getUTCFullYear(), 4)}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}T${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}`;
  // 16 bits: two drills of one scenario started in the same second collide 1 time in 65536.
  const hex = Math.min(0xffff, Math.max(0, Math.floor(random() * 0x10000))).toString(16).padStart(4, '0');
  return `${stamp}-${scenario}-${hex}`;
}

/** Throws INVALID_ARGUMENT unless `id` is a drill id (path traversal, separators, anything else). */
export function checkDrillId(id: string): { scenario: string; startedAt: string } {
  const m = DRILL_ID_PATTERN.exec(id);
  if (!m) throw new EdgeqError('INVALID_ARGUMENT', `${JSON.stringify(id.slice(0, 100))} is not a drill id (<yyyymmddThhmmss>-<scenario>-<4 hex>)`, { details: { field: 'id' } });
  const s = m[1]!;
  return { scenario: m[2]!, startedAt: `${s.slice(0, 4)}-${s.slice(4, 6)}-${s.slice(6, 8)}T${s.slice(9, 11)}:${s.slice(11, 13)}:${s.slice(13, 15)}.000Z` };
}
