/** Seeds for randomised tests: printed, so a failure can be replayed. */

/** The seed from EDGEQ_TEST_SEED, or a fresh one; printed so a failure can be replayed. */
export function testSeed(label: string): number {
  const env = process.env.EDGEQ_TEST_SEED;
  const seed = env ? Number(env) : Math.floor(Math.random() * 2 ** 31);
  // eslint-disable-next-line no-console
  console.log(`[${label}] seed=${seed} (replay with EDGEQ_TEST_SEED=${seed})`);
  return seed;
}

/** Random integer in [lo, hi]. */
export function randInt(rand: () => number, lo: number, hi: number): number {
  return lo + Math.floor(rand() * (hi - lo + 1));
}
