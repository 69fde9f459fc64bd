import { defineConfig } from 'vitest/config';

/**
 * `npm run test:containers`: the container-image suite, apart from the main suite (which excludes
 * test/containers/**): it needs a container engine, and without one it reports why it skipped.
 */
export default defineConfig({
  test: {
    include: ['test/containers/**/*.test.ts'],
    reporters: ['default'],
    pool: 'forks',
    maxWorkers: 1,
    // Building the image (npm ci twice, the bundle) takes minutes on a cold cache.
    testTimeout: 900_000,
    hookTimeout: 900_000,
  },
});
