import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'region/**/*.test.ts', 'gossip/**/*.test.ts', 'ratelimit/**/*.test.ts', 'forecast/**/*.test.ts', 'test/**/*.test.ts', 'bench/**/*.test.ts', 'drill/**/*.test.ts'],
    exclude: ['test/containers/**', 'node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: ['default'],
  },
});
