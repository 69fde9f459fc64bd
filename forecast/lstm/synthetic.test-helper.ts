/** Small synthetic series shared by the LSTM tests (a noisy daily sine, hourly steps, season 24). */
import type { Series } from '../forecaster.ts';
import type { LstmOptions } from './options.ts';
import { seededRandom } from '../../src/core/index.ts';

/** Season of the synthetic series: one day of hourly steps. */
export const syntheticSeason = 24;
/** Horizon used by the tests. */
export const syntheticHorizon = 6;

/** A daily sine around 100 (amplitude 50) with a little seeded noise, `days` days long. */
export function noisyDailySine(days: number, seed = 7): Series {
  const n = days * syntheticSeason;
  const random = seededRandom(seed);
  const start = Date.UTC(2024, 0, 1);
  const timestamps = Float64Array.from({ length: n }, (_, i) => start + i * 3_600_000);
  const values = Float64Array.from({ length: n }, (_, i) => 100 + 50 * Math.sin((2 * Math.PI * i) / syntheticSeason) + 6 * (random() - 0.5));
  return { name: 'synthetic-sine', timestamps, values };
}

/** The daily sine with bursts: each step, with probability 0.2, 20..80 above the curve (seeded). */
export function burstyDailySine(days: number, seed = 11): Series {
  const base = noisyDailySine(days, seed);
  const random = seededRandom(seed + 1);
  const values = Float64Array.from(base.values, (y) => (random() < 0.2 ? y + 20 + 60 * random() : y));
  return { ...base, name: 'synthetic-bursty-sine', values };
}

/** Options that train in a few seconds on the synthetic series. */
export const tinyOptions: Partial<LstmOptions> = {
  windowSteps: 8,
  units: 8,
  hiddenUnits: 16,
  profileDays: 2,
  weeklyLag: false,
  epochsMax: 12,
  patienceEpochs: 4,
  windowsPerEpochMax: 512,
  batchSize: 64,
  learningRate: 0.01,
};
