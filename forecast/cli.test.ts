// Proves `edgeq forecast backtest` runs the protocol for the baselines on a small CSV and prints
// one parseable JSON document with their metrics and a selection, and that every bad input ends in
// exit code 2 with a typed error (INVALID_DATA naming the line, or INVALID_ARGUMENT) on stderr.
import { mkdtemp, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCliCaptured } from '../src/cli/test-support.ts';
import { syntheticCsvRows } from './synthetic-csv.test-helper.ts';

const SEASON = 24;
const ROWS = SEASON * 20;
const BASELINES = 'seasonal_naive,last_value,holt_winters_add';

const rowsOf = (rows: number): string[] => syntheticCsvRows(rows, SEASON);

const run = runCliCaptured;

let dir = '';
const csv = (name: string): string => join(dir, name);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edgeq-forecast-cli-'));
  const good = rowsOf(ROWS);
  const withRow = (index: number, row: string): string[] => good.map((r, i) => (i === index ? row : r));
  const files: Record<string, string[]> = {
    'good.csv': ['timestamp,value', ...good],
    'no-header.csv': good,
    'non-numeric.csv': ['timestamp,value', ...withRow(9, `${good[9]!.split(',')[0]},lots`)],
    'negative.csv': ['timestamp,value', ...withRow(9, `${good[9]!.split(',')[0]},-3`)],
    'few.csv': ['timestamp,value', ...good.slice(0, 40)],
    'unsorted.csv': ['timestamp,value', ...withRow(9, `${good[5]!.split(',')[0]},3`)],
    'duplicate.csv': ['timestamp,value', ...withRow(9, `${good[8]!.split(',')[0]},3`)],
  };
  for (const [name, lines] of Object.entries(files)) await writeFile(csv(name), `${lines.join('\n')}\n`);
});

describe('edgeq forecast backtest', () => {
  it('prints the baselines metrics and the selection as one JSON document', async () => {
    const r = await run(['forecast', 'backtest', '--csv', csv('good.csv'), '--season', String(SEASON), '--horizon', '12', '--json', '--methods', BASELINES]);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as {
      rows: number;
      nTrain: number;
      origins: number;
      results: { method: string; mase: number; smape: number; peakCapture: number; peakUnder: number; peakOver: number; maseByHorizon: number[]; origins: number; backend: string }[];
      selected: { method: string; mase: number };
    };
    expect(doc).toMatchObject({ rows: ROWS, nTrain: 384, origins: ROWS - 384 - 12 + 1 });
    expect(doc.results.map((x) => x.method)).toEqual(['seasonal_naive', 'last_value', 'holt_winters_add']);
    for (const x of doc.results) {
      expect(x.mase).toBeGreaterThan(0);
      expect(x.smape).toBeGreaterThan(0);
      expect(x.peakCapture + x.peakUnder + x.peakOver).toBeCloseTo(1, 12);
      expect(x.maseByHorizon).toHaveLength(12);
      expect(x).toMatchObject({ origins: doc.origins, backend: 'js' });
    }
    const best = Math.min(...doc.results.map((x) => x.mase));
    expect(doc.selected.mase).toBe(best);
    expect(r.stderr).toContain('seasonal_naive stride 1');
  });

  it('prints a table without --json and honours --stride 12', async () => {
    const r = await run(['forecast', 'backtest', '--csv', csv('good.csv'), '--season', String(SEASON), '--stride', '12', '--methods', 'seasonal_naive,last_value']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^method\s+MASE/);
    expect(r.stdout).toMatch(/selected: (seasonal_naive|last_value)/);
    expect(r.stderr).toContain('stride 12');
  });

  it.each([
    ['no-header.csv', 1, /header/],
    ['non-numeric.csv', 11, /not a number/],
    ['negative.csv', 11, /negative value/],
    ['few.csv', 41, /too few rows/],
    ['unsorted.csv', 11, /earlier than line 10/],
    ['duplicate.csv', 11, /duplicate timestamp/],
  ])('%s: exit code 2, INVALID_DATA naming line %i', async (file, line, pattern) => {
    const r = await run(['forecast', 'backtest', '--csv', csv(file), '--season', String(SEASON), '--horizon', '12', '--json', '--methods', BASELINES]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('INVALID_DATA');
    expect(r.stderr).toMatch(pattern);
    expect(r.stderr).toContain(`line ${line}`);
  });

  it('a missing file is INVALID_DATA too', async () => {
    const r = await run(['forecast', 'backtest', '--csv', csv('absent.csv'), '--season', '24', '--methods', BASELINES]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('INVALID_DATA');
  });

  it.each([
    [['--season', 'abc'], /--season must be a positive integer/],
    [['--season', '0'], /--season must be a positive integer/],
    [['--season', '24', '--horizon', '2.5'], /--horizon must be a positive integer/],
    [['--season', '24', '--stride', '5'], /--stride must be 1 or 12/],
    [['--season', '24', '--methods', 'arima'], /unknown method/],
    [['--season', '24', '--peak-weight', 'abc'], /--peak-weight must be a decimal number/],
    [['--season', '24', '--peak-weight', '-1'], /--peak-weight must be a decimal number/],
    [['--season', '24', '--peak-weight', '101'], /peakWeight must be a number from 0 to 100/],
    [['--season', '24', '--peak-quantile', '1'], /peakQuantile must be a number between 0 and 1/],
  ])('bad flags %j: exit code 2, INVALID_ARGUMENT', async (flags, pattern) => {
    const r = await run(['forecast', 'backtest', '--csv', csv('good.csv'), ...flags]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('INVALID_ARGUMENT');
    expect(r.stderr).toMatch(pattern);
  });
});

describe('edgeq forecast train', () => {
  it.each([
    [['--peak-quantile', '0'], /peakQuantile must be a number between 0 and 1/],
    [['--peak-weight', '1e3'], /--peak-weight must be a decimal number/],
  ])('bad LSTM option %j: exit code 2, INVALID_ARGUMENT, no model folder', async (flags, pattern) => {
    const out = join(dir, `model-${flags.join('')}`);
    const r = await run(['forecast', 'train', '--csv', csv('good.csv'), '--season', String(SEASON), '--out', out, ...flags]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('INVALID_ARGUMENT');
    expect(r.stderr).toMatch(pattern);
    await expect(stat(out)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
