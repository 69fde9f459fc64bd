// Proves the trace reader accepts the NAB format (CRLF, BOM, trailing newline, UTC timestamps) and
// rejects every defect with a typed INVALID_DATA error naming the 1-based line, and reports gaps.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EdgeqError } from '../src/core/index.ts';
import { dailySeasonSteps, findGaps, medianIntervalMs, parseSeriesCsv, parseTimestamp, readSeriesCsv, requireRows } from './csv.ts';

const GOOD = 'timestamp,value\n2015-02-26 21:42:53,104\n2015-02-26 21:47:53,100.5\n2015-02-26 21:52:53,0\n';

/** The INVALID_DATA error `fn` throws (fails the test if it throws anything else or nothing). */
function invalidData(fn: () => unknown): EdgeqError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(EdgeqError);
    expect((err as EdgeqError).code).toBe('INVALID_DATA');
    return err as EdgeqError;
  }
  throw new Error('expected an INVALID_DATA error');
}

describe('parseSeriesCsv', () => {
  it('reads rows as UTC epoch ms and plain numbers', () => {
    const s = parseSeriesCsv(GOOD, 't');
    expect(s.name).toBe('t');
    expect(Array.from(s.values)).toEqual([104, 100.5, 0]);
    expect(s.timestamps[0]).toBe(Date.UTC(2015, 1, 26, 21, 42, 53));
    expect(s.timestamps[2]! - s.timestamps[1]!).toBe(300_000);
  });

  it('accepts CRLF line ends, a BOM, no final newline and several trailing newlines', () => {
    const base = Array.from(parseSeriesCsv(GOOD, 't').values);
    expect(Array.from(parseSeriesCsv(GOOD.replace(/\n/g, '\r\n'), 't').values)).toEqual(base);
    expect(Array.from(parseSeriesCsv(`\uFEFF${GOOD}`, 't').values)).toEqual(base);
    expect(Array.from(parseSeriesCsv(GOOD.trimEnd(), 't').values)).toEqual(base);
    expect(Array.from(parseSeriesCsv(`${GOOD}\n\n`, 't').values)).toEqual(base);
  });

  it.each([
    ['an empty file', '', 1, /empty file/],
    ['a blank file', '  \n', 1, /empty file/],
    ['a missing header', '2015-02-26 21:42:53,104\n', 1, /header/],
    ['a wrong header', 'time,value\n2015-02-26 21:42:53,104\n', 1, /header/],
    ['a header with no rows', 'timestamp,value\n', 2, /no data rows/],
    ['three fields', `${GOOD}2015-02-26 21:57:53,1,2\n`, 5, /expected 2 fields.*found 3/],
    ['one field', `${GOOD}2015-02-26 21:57:53\n`, 5, /expected 2 fields.*found 1/],
    ['an empty row inside', 'timestamp,value\n2015-02-26 21:42:53,104\n\n2015-02-26 21:52:53,1\n', 3, /expected 2 fields.*found 0/],
    ['an ISO T timestamp', 'timestamp,value\n2015-02-26T21:42:53,104\n', 2, /malformed timestamp/],
    ['an impossible date', 'timestamp,value\n2015-02-30 21:42:53,104\n', 2, /malformed timestamp/],
    ['an hour 24', 'timestamp,value\n2015-02-26 24:00:00,104\n', 2, /malformed timestamp/],
    ['a non-numeric value', `${GOOD}2015-02-26 21:57:53,abc\n`, 5, /not a number/],
    ['an empty value', `${GOOD}2015-02-26 21:57:53,\n`, 5, /not a number/],
    ['a hex value', `${GOOD}2015-02-26 21:57:53,0x10\n`, 5, /not a number/],
    ['Infinity', `${GOOD}2015-02-26 21:57:53,Infinity\n`, 5, /not a number/],
    ['an overflowing value', `${GOOD}2015-02-26 21:57:53,1e999\n`, 5, /not finite/],
    ['a negative value', `${GOOD}2015-02-26 21:57:53,-1\n`, 5, /negative value/],
    ['unsorted timestamps', `${GOOD}2015-02-26 21:50:53,3\n`, 5, /earlier than line 4/],
    ['a duplicate timestamp', `${GOOD}2015-02-26 21:52:53,3\n`, 5, /duplicate timestamp/],
  ])('rejects %s naming line %i', (_what, text, line, pattern) => {
    const err = invalidData(() => parseSeriesCsv(text, 'bad.csv'));
    expect(err.message).toMatch(pattern);
    expect(err.message).toContain(`line ${line}`);
    expect(err.message).toContain('bad.csv');
    expect(err.details.line).toBe(line);
  });
});

describe('parseTimestamp', () => {
  it('parses the NAB shape as UTC and rejects others', () => {
    expect(parseTimestamp('2014-07-01 00:30:00')).toBe(Date.UTC(2014, 6, 1, 0, 30, 0));
    expect(parseTimestamp('2016-02-29 00:00:00')).toBe(Date.UTC(2016, 1, 29));
    expect(parseTimestamp('2015-02-29 00:00:00')).toBeNaN();
    expect(parseTimestamp('2015-13-01 00:00:00')).toBeNaN();
    expect(parseTimestamp('2015-01-01 00:00:00Z')).toBeNaN();
    expect(parseTimestamp(' 2015-01-01 00:00:00')).toBeNaN();
  });
});

describe('gaps and helpers', () => {
  it('reports a gap (kept as one step) with its line and the missing steps', () => {
    const text = 'timestamp,value\n2014-04-10 00:04:00,1\n2014-04-10 00:09:00,2\n2014-04-10 00:19:00,3\n2014-04-10 00:24:00,4\n2014-04-10 00:44:00,5\n';
    const s = parseSeriesCsv(text, 'g');
    expect(s.values.length).toBe(5);
    expect(medianIntervalMs(s)).toBe(300_000 * 1.5);
    // Median of [5, 10, 5, 20] min is 7.5 min: the 10-min interval is a gap of round(10/7.5)−1 → at least 1.
    expect(findGaps(s)).toEqual([
      { line: 4, index: 2, missingSteps: 1 },
      { line: 6, index: 4, missingSteps: 2 },
    ]);
  });

  it('finds no gap in a regular series and derives the daily season from the interval', () => {
    const rows = Array.from({ length: 5 }, (_, i) => `2014-07-01 ${String(Math.floor(i / 2)).padStart(2, '0')}:${i % 2 === 0 ? '00' : '30'}:00,${i}`);
    const s = parseSeriesCsv(`timestamp,value\n${rows.join('\n')}\n`, 'r');
    expect(findGaps(s)).toEqual([]);
    expect(dailySeasonSteps(s)).toBe(48);
  });

  it('requireRows raises INVALID_DATA "too few rows" with the last line', () => {
    const s = parseSeriesCsv(GOOD, 'few.csv');
    requireRows(s, 3, 'anything');
    const err = invalidData(() => requireRows(s, 4, 'one window plus the horizon'));
    expect(err.message).toMatch(/too few rows for one window plus the horizon: 3 rows \(up to line 4\), need at least 4/);
    expect(err.details).toMatchObject({ rows: 3, minRows: 4, line: 4 });
  });

  it('readSeriesCsv reads a file and turns a missing file into INVALID_DATA', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'edgeq-csv-'));
    const path = join(dir, 'ok.csv');
    await writeFile(path, GOOD);
    expect(Array.from((await readSeriesCsv(path)).values)).toEqual([104, 100.5, 0]);
    await expect(readSeriesCsv(join(dir, 'missing.csv'))).rejects.toMatchObject({ code: 'INVALID_DATA', message: expect.stringContaining('ENOENT') });
  });
});
