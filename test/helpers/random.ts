/** The seeded PRNG lives in core (the forecaster samples with it too); seeds in src/testing. */
export { seededRandom } from '../../src/core/index.ts';
export { testSeed, randInt } from '../../src/testing/index.ts';
