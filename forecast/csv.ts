/**
 * Reads a traffic trace (`timestamp,value`, timestamps `YYYY-MM-DD HH:MM:SS` read as UTC) into a
 * `Series`, one row per step with no resampling (PROTOCOL.md §1). Every defect a trace can have is
 * a typed INVALID_DATA error naming the 1-based line of the file, so a bad file is fixed in one go.
 *
 * Gaps (an interval longer than the median interval) are not an error: the protocol keeps them
 * as-is, the row after a gap being simply the next step. `findGaps` reports them.
 */
import { readFile } from 'node:fs/promises';
import { EdgeqError } from '../src/core/index.ts';
import type { Series } from './forecaster.ts';

/** The only header a trace may have. */
export const CSV_HEADER = 'timestamp,value';

/** A gap in a series: the row at `line` comes `missingSteps` median intervals too late. */
export interface SeriesGap {
  /** 1-based line in the file of the row after the gap (the header is line 1). */
  readonly line: number;
  /** Index of that row in the series. */
  readonly index: number;
  /** Whole median intervals missing before that row (at least 1). */
  readonly missingSteps: number;
}

/** The strict timestamp shape; anything else (a `T`, a zone, fractions) is rejected. */
const TIMESTAMP_RE = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/;
/** A plain decimal number: `Number()` alone would also take '', ' ', '0x1f' and 'Infinity'. */
const NUMBER_RE = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** 1-based file line of data row `index` (the header is line 1). */
export function lineOfRow(index: number): number {
  return index + 2;
}

function invalid(name: string, line: number, message: string, details: Record<string, unknown> = {}): EdgeqError {
  return new EdgeqError('INVALID_DATA', `${name}: line ${line}: ${message}`, { details: { file: name, line, ...details } });
}

/** Epoch ms of a `YYYY-MM-DD HH:MM:SS` UTC timestamp, or NaN when malformed or not a real date. */
export function parseTimestamp(text: string): number {
  const m = TIMESTAMP_RE.exec(text);
  if (!m) return Number.NaN;
  const [y, mo, d, h, mi, s] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as [number, number, number, number, number, number];
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return Number.NaN;
  const ms = Date.UTC(y, mo - 1, d, h, mi, s);
  // Date.UTC rolls 2015-02-30 over to March: a round trip catches impossible days.
  if (new Date(ms).getUTCDate() !== d) return Number.NaN;
  return ms;
}

/** Parses the text of a trace CSV; `name` labels errors and the returned series. */
export function parseSeriesCsv(text: string, name: string): Series {
  if (text.trim().length === 0) throw invalid(name, 1, 'empty file (expected the header "timestamp,value" and rows)');
  // One split, then a bounded walk over the lines: no per-row allocation beyond the two fields.
  const lines = text.split('\n');
  let last = lines.length;
  // A trailing newline (or several) leaves empty strings at the end; they are not rows.
  while (last > 0 && (lines[last - 1] ?? '').replace(/\r$/, '') === '') last--;
  let header = lines[0] ?? '';
  if (header.charCodeAt(0) === 0xfeff) header = header.slice(1);
  if (header.endsWith('\r')) header = header.slice(0, -1);
  if (header !== CSV_HEADER) {
    throw invalid(name, 1, `missing or malformed header: expected "${CSV_HEADER}", found "${header.slice(0, 80)}"`, { header: header.slice(0, 80) });
  }
  const rows = last - 1;
  if (rows < 1) throw invalid(name, 2, 'no data rows after the header');
  const timestamps = new Float64Array(rows);
  const values = new Float64Array(rows);
  for (let i = 0; i < rows; i++) {
    const line = lineOfRow(i);
    let row = lines[i + 1] as string;
    if (row.endsWith('\r')) row = row.slice(0, -1);
    const comma = row.indexOf(',');
    if (comma < 0 || row.indexOf(',', comma + 1) >= 0) {
      const fields = row.length === 0 ? 0 : row.split(',').length;
      throw invalid(name, line, `expected 2 fields (timestamp,value), found ${fields}`, { fields });
    }
    const tsText = row.slice(0, comma);
    const valueText = row.slice(comma + 1);
    const ts = parseTimestamp(tsText);
    if (Number.isNaN(ts)) throw invalid(name, line, `malformed timestamp "${tsText.slice(0, 40)}" (expected YYYY-MM-DD HH:MM:SS)`, { timestamp: tsText.slice(0, 40) });
    if (!NUMBER_RE.test(valueText)) throw invalid(name, line, `value "${valueText.slice(0, 40)}" is not a number`, { value: valueText.slice(0, 40) });
    const value = Number(valueText);
    if (!Number.isFinite(value)) throw invalid(name, line, `value "${valueText.slice(0, 40)}" is not finite`, { value: valueText.slice(0, 40) });
    if (value < 0) throw invalid(name, line, `negative value ${value} (traffic is non-negative)`, { value });
    if (i > 0) {
      const prev = timestamps[i - 1] as number;
      if (ts === prev) throw invalid(name, line, `duplicate timestamp ${tsText} (same as line ${line - 1})`, { timestamp: tsText });
      if (ts < prev) throw invalid(name, line, `timestamp ${tsText} is earlier than line ${line - 1} (rows must be in time order)`, { timestamp: tsText });
    }
    timestamps[i] = ts;
    values[i] = value;
  }
  return { name, timestamps, values };
}

/** Reads and parses a trace CSV file; a missing or unreadable file is INVALID_DATA too. */
export async function readSeriesCsv(path: string): Promise<Series> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new EdgeqError('INVALID_DATA', `${path}: cannot read the file (${code ?? (err as Error).message})`, { cause: err, details: { file: path, line: 0, errno: code } });
  }
  return parseSeriesCsv(text, path);
}

/** The median interval between consecutive rows, in ms (0 for fewer than 2 rows). */
export function medianIntervalMs(series: Series): number {
  const n = series.timestamps.length;
  if (n < 2) return 0;
  const deltas = new Float64Array(n - 1);
  for (let i = 1; i < n; i++) deltas[i - 1] = (series.timestamps[i] as number) - (series.timestamps[i - 1] as number);
  deltas.sort();
  const mid = deltas.length >> 1;
  return deltas.length % 2 === 1 ? (deltas[mid] as number) : ((deltas[mid - 1] as number) + (deltas[mid] as number)) / 2;
}

/**
 * Every interval longer than the median one. PROTOCOL.md §1 keeps gaps as they are (each row is
 * one step), so this only reports them: how many median steps are missing before each row.
 */
export function findGaps(series: Series): SeriesGap[] {
  const step = medianIntervalMs(series);
  const gaps: SeriesGap[] = [];
  if (step <= 0) return gaps;
  for (let i = 1; i < series.timestamps.length; i++) {
    const delta = (series.timestamps[i] as number) - (series.timestamps[i - 1] as number);
    if (delta > step) gaps.push({ line: lineOfRow(i), index: i, missingSteps: Math.max(1, Math.round(delta / step) - 1) });
  }
  return gaps;
}

/** Season length in steps (one day) implied by the median interval: 288 at 5 min, 48 at 30 min. */
export function dailySeasonSteps(series: Series): number {
  const step = medianIntervalMs(series);
  if (step <= 0) throw new EdgeqError('INVALID_DATA', `${series.name}: too few rows to tell the sampling interval`, { details: { file: series.name, rows: series.values.length } });
  return Math.max(1, Math.round(86_400_000 / step));
}

/**
 * Throws INVALID_DATA "too few rows" unless `series` has at least `minRows` rows; `what` says what
 * they are needed for (e.g. "one window plus the horizon").
 */
export function requireRows(series: Series, minRows: number, what: string): void {
  const rows = series.values.length;
  if (rows < minRows) {
    throw new EdgeqError('INVALID_DATA', `${series.name}: too few rows for ${what}: ${rows} rows (up to line ${lineOfRow(rows - 1)}), need at least ${minRows}`, {
      details: { file: series.name, line: lineOfRow(rows - 1), rows, minRows, what },
    });
  }
}
