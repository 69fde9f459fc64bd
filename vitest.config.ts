import { defineConfig } from 'vitest/config';

/**
 * Tests that need the machine to themselves: the campaign's own deployment shape (3 regions of 3
 * brokers, 15 processes), and the dashboard in chromium beside a 3-region deployment (its bounds
 * are the page's own: ingress shown within seconds of the producing, a dead broker red within 15 s).
 */
const ALONE = ['test/drill/chaos-seeds.test.ts', 'test/dashboard/browser.test.ts'];

/** What every project shares. */
const shared = {
  testTimeout: 60_000,
  hookTimeout: 60_000,
  pool: 'forks' as const,
};

export default defineConfig({
  test: {
    reporters: ['default'],
    projects: [
      {
        test: {
          ...shared,
          name: 'suite',
          include: ['src/**/*.test.ts', 'region/**/*.test.ts', 'gossip/**/*.test.ts', 'ratelimit/**/*.test.ts', 'forecast/**/*.test.ts', 'test/**/*.test.ts', 'bench/**/*.test.ts', 'drill/**/*.test.ts'],
          exclude: ['test/containers/**', 'node_modules/**', ...ALONE],
          // Two files at a time on these 2-core machines (vitest's default is cores − 1: one).
          // Most multi-process tests spend their time waiting on the processes they start
          // (leases, probes, 1 s planner steps): two side by side took the suite from 23 to 14
          // minutes, with each test's bounds set for a loaded machine.
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          ...shared,
          name: 'alone',
          include: ALONE,
          // After the rest, one file at a time: the campaign's rounds were measured on a machine
          // running nothing else, and their recovery and convergence bounds assume it.
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
