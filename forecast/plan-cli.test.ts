// Proves `edgeq forecast plan` prints one {t, instances, p90} entry per step from N on, decided
// from the rows before t − lead only (rewriting them leaves the entry as it was), that headroom
// raises the instances, that a saved LSTM is used with --model, and that every bad input ends in
// exit code 2 with a typed error naming the value and nothing on stdout.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCliCaptured } from '../src/cli/test-support.ts';
import { syntheticCsvRows } from './synthetic-csv.test-helper.ts';

const SEASON = 24;
const ROWS = SEASON * 20;
const FROM = ROWS - 60;
const RATE = 20;

const rowsOf = (rows: number): string[] => syntheticCsvRows(rows, SEASON);

const run = runCliCaptured;

interface Entry {
  t: number;
  instances: number;
  p90: number;
}

let dir = '';
const csv = (name: string): string => join(dir, name);
const good = rowsOf(ROWS);
/** The flags of a fast plan over good.csv; `over` replaces or adds flags. */
function planArgs(over: Record<string, string | null> = {}): string[] {
  const flags: Record<string, string | null> = { '--csv': csv('good.csv'), '--season': String(SEASON), '--lead': '2', '--per-instance': String(RATE), '--from': String(FROM), '--method': 'seasonal_naive', ...over };
  return ['forecast', 'plan', '--json', ...Object.entries(flags).flatMap(([k, v]) => (v === null ? [] : [k, v]))];
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edgeq-forecast-plan-'));
  await writeFile(csv('good.csv'), `${['timestamp,value', ...good].join('\n')}\n`);
  await writeFile(csv('short.csv'), `${['timestamp,value', ...good.slice(0, 20)].join('\n')}\n`);
});

describe('edgeq forecast plan', () => {
  it('prints one {t, instances, p90} per step t = N … rows − 1', async () => {
    const r = await run(planArgs());
    expect(r.code).toBe(0);
    const plan = JSON.parse(r.stdout) as Entry[];
    expect(plan.map((e) => e.t)).toEqual(Array.from({ length: ROWS - FROM }, (_, i) => FROM + i));
    for (const e of plan) {
      expect(Object.keys(e).sort()).toEqual(['instances', 'p90', 't']);
      expect(e.p90).toBeGreaterThan(0);
      // The default headroom is 0: k = ⌈p90 / RATE⌉, at least 1.
      expect(e.instances).toBe(Math.max(1, Math.ceil(e.p90 / RATE - 1e-9)));
    }
    expect(r.stderr).toContain('training seasonal_naive on the 418 rows before from − lead');
  });

  it('entry t does not change when the rows at and after t − lead are rewritten', async () => {
    const t = FROM + 7;
    const rewritten = good.map((row, i) => (i >= t - 2 ? `${row.split(',')[0]},5000` : row));
    await writeFile(csv('rewritten.csv'), `${['timestamp,value', ...rewritten].join('\n')}\n`);
    const before = JSON.parse((await run(planArgs())).stdout) as Entry[];
    const after = JSON.parse((await run(planArgs({ '--csv': csv('rewritten.csv') }))).stdout) as Entry[];
    expect(after.filter((e) => e.t <= t)).toEqual(before.filter((e) => e.t <= t));
    // Seasonal naive reads one day back: the entry a day after the rewrite sees it.
    expect(after.find((e) => e.t === t + SEASON)).not.toEqual(before.find((e) => e.t === t + SEASON));
  });

  it('headroom raises the instances', async () => {
    const plain = JSON.parse((await run(planArgs())).stdout) as Entry[];
    const raised = JSON.parse((await run(planArgs({ '--headroom': '0.5' }))).stdout) as Entry[];
    raised.forEach((e, i) => {
      expect(e.p90).toBe(plain[i]?.p90);
      expect(e.instances).toBe(Math.max(1, Math.ceil((e.p90 * 1.5) / RATE - 1e-9)));
    });
    const sum = (p: Entry[]) => p.reduce((a, e) => a + e.instances, 0);
    expect(sum(raised)).toBeGreaterThan(sum(plain));
  });

  it('uses a model saved by `edgeq forecast train` with --model, and refuses one of another season', async () => {
    const model = join(dir, 'model');
    const trained = await run(['forecast', 'train', '--csv', csv('good.csv'), '--season', String(SEASON), '--out', model, '--budget-ms', '1500', '--seed', '7']);
    expect(trained.code).toBe(0);
    const r = await run(planArgs({ '--model': model, '--method': null }));
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`loaded the LSTM from ${model}`);
    expect(r.stderr).not.toContain('training');
    const plan = JSON.parse(r.stdout) as Entry[];
    expect(plan).toHaveLength(ROWS - FROM);
    for (const e of plan) expect(e.instances).toBe(Math.max(1, Math.ceil(e.p90 / RATE - 1e-9)));
    const wrong = await run(planArgs({ '--model': model, '--method': null, '--season': '48' }));
    expect(wrong.code).toBe(2);
    expect(wrong.stdout).toBe('');
    expect(wrong.stderr).toMatch(/INVALID_ARGUMENT: --model .* trained for season 24 and horizon 12, asked for --season 48/);
  }, 60_000);

  it.each([
    [{ '--lead': '0' }, 'INVALID_ARGUMENT', /--lead must be an integer in \[1, horizon − 1 = 11\], got 0/],
    [{ '--lead': '12' }, 'INVALID_ARGUMENT', /--lead .* got 12/],
    [{ '--lead': '3', '--horizon': '3' }, 'INVALID_ARGUMENT', /--lead must be an integer in \[1, horizon − 1 = 2\], got 3/],
    [{ '--per-instance': '0' }, 'INVALID_ARGUMENT', /--per-instance must be a positive number .*got "0"/],
    [{ '--per-instance': '-5' }, 'INVALID_ARGUMENT', /--per-instance must be a positive number .*got "-5"/],
    [{ '--per-instance': 'fast' }, 'INVALID_ARGUMENT', /--per-instance must be a positive number .*got "fast"/],
    [{ '--headroom': '-1' }, 'INVALID_ARGUMENT', /--headroom must be a fraction in \[0, 10\], got "-1"/],
    [{ '--headroom': '11' }, 'INVALID_ARGUMENT', /--headroom must be a fraction in \[0, 10\], got "11"/],
    [{ '--headroom': 'abc' }, 'INVALID_ARGUMENT', /--headroom must be a fraction in \[0, 10\], got "abc"/],
    [{ '--from': String(ROWS) }, 'INVALID_ARGUMENT', new RegExp(`--from must be a row index in \\[0, rows − 1 = ${ROWS - 1}\\], got ${ROWS}`)],
    [{ '--from': '10' }, 'INVALID_ARGUMENT', /--from 10 leaves too little history for the season: 8 rows .*season 24/],
    [{ '--from': 'x' }, 'INVALID_ARGUMENT', /--from must be an integer of at least 0, got "x"/],
    [{ '--method': 'arima' }, 'INVALID_ARGUMENT', /--method must be one of lstm, seasonal_naive, holt_winters_add, last_value, got "arima"/],
    [{ '--csv': join('/nonexistent', 'absent.csv') }, 'INVALID_DATA', /absent.csv: cannot read the file \(ENOENT\)/],
    [{ '--csv': 'SHORT', '--from': '19' }, 'INVALID_DATA', /short.csv: too little history for the season: 20 rows .*season 24/],
  ] as [Record<string, string>, string, RegExp][])('%j: exit code 2, %s naming the value, nothing on stdout', async (over, code, pattern) => {
    const flags = over['--csv'] === 'SHORT' ? { ...over, '--csv': csv('short.csv') } : over;
    const r = await run(planArgs(flags));
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(code);
    expect(r.stderr).toMatch(pattern);
  });
});
