// Proves the overload bench's command line: the full and quick plans, and every bad flag refused as INVALID_ARGUMENT naming the flag.
import { describe, expect, it } from 'vitest';
import { EdgeqError } from '../../src/core/index.ts';
import { parsePlan, type Plan } from './overload-options.ts';

describe('parsePlan', () => {
  it('plans the full run by default and a short one with --quick', () => {
    const full = parsePlan([]) as Plan;
    expect(full).toMatchObject({ quick: false, controllers: ['none', 'seeds', 'edgeq'], brokers: 3, caseSec: 20, overloads: [1, 2, 3, 5], quotaWindowSec: 10, quotaWindows: 3, searchStepSec: 5, maxSustainablePerSec: null, out: null });
    const quick = parsePlan(['--quick']) as Plan;
    expect(quick.caseSec).toBeLessThan(full.caseSec);
    expect(quick.quotaWindowSec).toBeLessThan(full.quotaWindowSec);
    expect(parsePlan(['--quick', '--duration-s', '7'])).toMatchObject({ quick: true, caseSec: 7 });
    // Controllers run in the fixed order whatever order they are named in.
    expect(parsePlan(['--controllers', 'edgeq,none'])).toMatchObject({ controllers: ['none', 'edgeq'] });
    expect(parsePlan(['--max-sustainable', '2500', '--brokers', '1', '--out', 'x.json'])).toMatchObject({ maxSustainablePerSec: 2500, brokers: 1, out: 'x.json' });
    expect(parsePlan(['--help'])).toBe('help');
  });

  const cases: [string[], string][] = [
    [['--duration-s', '0'], '--duration-s'],
    [['--duration-s', '2.5'], '--duration-s'],
    [['--duration-s', 'long'], '--duration-s'],
    [['--duration-s', '601'], '--duration-s'],
    [['--controllers', 'none,gradient'], '--controllers'],
    [['--controllers', 'none,none'], '--controllers'],
    [['--controllers', ''], '--controllers'],
    [['--brokers', '4'], '--brokers'],
    [['--max-sustainable=-5'], '--max-sustainable'],
    [['--max-sustainable', '0'], '--max-sustainable'],
    [['--out', ' '], '--out'],
    [['--fast'], 'arguments'],
    [['extra'], 'arguments'],
  ];
  it('refuses a flag whose value looks like another flag, naming it', () => {
    // node:util parseArgs refuses "-5" as an ambiguous value before the bound is checked.
    expect(() => parsePlan(['--max-sustainable', '-5'])).toThrow(/--max-sustainable/);
  });

  for (const [argv, field] of cases) {
    it(`refuses ${argv.join(' ') || '(empty)'} naming ${field}`, () => {
      let err: unknown;
      try {
        parsePlan(argv);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(EdgeqError);
      expect((err as EdgeqError).code).toBe('INVALID_ARGUMENT');
      expect((err as EdgeqError).details['field']).toBe(field);
      expect((err as EdgeqError).message).toContain(field);
    });
  }
});
