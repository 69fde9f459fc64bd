/**
 * The command line of `npm run bench:overload` and the plan it turns into: phase lengths and
 * bounds, full or `--quick`. A bad flag is INVALID_ARGUMENT naming it, before anything starts.
 */
import { parseArgs } from 'node:util';
import { EdgeqError } from '../../src/core/index.ts';
import { CONTROLLERS, type ControllerName } from './overload-report.ts';

/** Longest case the bench takes (`--duration-s`): ten minutes per case is already a long run. */
export const CASE_SECONDS_MAX = 600;
/** Largest cell `--brokers` takes: the brief keeps this 2-core machine's deployments at 1-3 brokers. */
export const BROKERS_MAX = 3;
/** Largest `--max-sustainable`: far above what one gateway on this machine carries. */
export const MAX_SUSTAINABLE_PER_SEC_MAX = 1_000_000;

export interface Plan {
  quick: boolean;
  controllers: ControllerName[];
  brokers: number;
  /** Given: skip the search and use it. */
  maxSustainablePerSec: number | null;
  out: string | null;
  /** Low rate for the unloaded p99, and how long it is measured. */
  unloadedPerSec: number;
  unloadedSec: number;
  /**
   * Not recorded, at the start of each deployment: its first ~10 s run slow (every process compiles
   * through tsx and V8 has not optimised the produce path yet). Measured on 2 cores: p99 at 200/s
   * was 50-140 ms in the first 6 s after start, 5-8 ms after 15 s of traffic.
   */
  warmupSec: number;
  searchStartPerSec: number;
  searchStepSec: number;
  searchDoublingsMax: number;
  searchBisectSteps: number;
  /** Each case (1x, 2x, 3x, 5x), and the fairness run. */
  caseSec: number;
  overloads: number[];
  quotaWindowSec: number;
  quotaWindows: number;
  /** Pause between runs, after the last answer, so the previous run's work is done. */
  settleMs: number;
}

const HELP = `npm run bench:overload -- [--quick] [--duration-s N] [--controllers none,seeds,edgeq] [--brokers 1..3] [--max-sustainable N] [--out FILE]
  --quick              short smoke run (3 s cases, 2 s search steps and quota windows); writes bench/results/overload-quick.json
  --duration-s N       seconds per case and for the fairness run (default 20)
  --controllers LIST   controllers whose cases run (default all three); fairness and quota run with edgeq
  --brokers N          brokers in the cell (default 3)
  --max-sustainable N  skip the search and take N records/s as the maximum sustainable rate
  --out FILE           where the JSON goes (default bench/results/overload.json)`;

function bad(field: string, message: string): EdgeqError {
  return new EdgeqError('INVALID_ARGUMENT', `${field}: ${message}\n${HELP}`, { details: { field } });
}

function intIn(field: string, raw: string | undefined, lo: number, hi: number): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n < lo || n > hi) throw bad(field, `expected an integer in [${lo}, ${hi}], got "${raw}"`);
  return n;
}

/** The plan for `argv` (without node and the script), or `help` when asked. */
export function parsePlan(argv: readonly string[]): Plan | 'help' {
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({
      args: [...argv],
      options: {
        quick: { type: 'boolean' },
        'duration-s': { type: 'string' },
        controllers: { type: 'string' },
        brokers: { type: 'string' },
        'max-sustainable': { type: 'string' },
        out: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (err) {
    throw bad('arguments', (err as Error).message);
  }
  if (values.help === true) return 'help';
  const quick = values.quick === true;
  let controllers: ControllerName[] = [...CONTROLLERS];
  if (typeof values.controllers === 'string') {
    const list = values.controllers.split(',').map((s) => s.trim());
    const unknown = list.find((c) => !(CONTROLLERS as readonly string[]).includes(c));
    if (unknown !== undefined || list.length === 0) throw bad('--controllers', `expected a comma-separated subset of ${CONTROLLERS.join(', ')}, got "${values.controllers}"`);
    if (new Set(list).size !== list.length) throw bad('--controllers', `names a controller twice: "${values.controllers}"`);
    controllers = CONTROLLERS.filter((c) => list.includes(c));
  }
  if (typeof values.out === 'string' && values.out.trim() === '') throw bad('--out', 'expected a file path');
  const caseSec = intIn('--duration-s', values['duration-s'] as string | undefined, 1, CASE_SECONDS_MAX) ?? (quick ? 3 : 20);
  return {
    quick,
    controllers,
    brokers: intIn('--brokers', values.brokers as string | undefined, 1, BROKERS_MAX) ?? 3,
    maxSustainablePerSec: intIn('--max-sustainable', values['max-sustainable'] as string | undefined, 1, MAX_SUSTAINABLE_PER_SEC_MAX) ?? null,
    out: typeof values.out === 'string' ? values.out : null,
    unloadedPerSec: 200,
    unloadedSec: quick ? 3 : 10,
    warmupSec: quick ? 8 : 15,
    searchStartPerSec: 500,
    searchStepSec: quick ? 2 : 5,
    // 500 · 2^7 = 64,000/s: beyond what the gateway takes here, so the doubling always ends in a failed step.
    searchDoublingsMax: 7,
    searchBisectSteps: quick ? 1 : 3,
    caseSec,
    overloads: [1, 2, 3, 5],
    quotaWindowSec: quick ? 2 : 10,
    quotaWindows: 3,
    settleMs: quick ? 1_000 : 3_000,
  };
}

export { HELP };
