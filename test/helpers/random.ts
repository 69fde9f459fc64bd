/** A small seeded PRNG (mulberry32) so randomised tests print a seed and can be replayed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

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
