/** Proves the training loss by hand: pinball over the quantile rows, plus the point path's peak term. */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadTf, type Tf } from '../runtime/index.ts';
import { pinballLoss } from './model.ts';

const quantiles = [0.1, 0.5, 0.9] as const;
const horizon = 2;
let tf: Tf;

beforeAll(async () => {
  ({ tf } = await loadTf());
});

/** The loss of one window: targets [2], predictions P10, P50, P90 rows of [2] each. */
async function lossOf(target: number[], rows: number[][], peak?: { weight: number; quantile: number }): Promise<number> {
  const t = tf.tensor2d(target, [1, horizon]);
  const p = tf.tensor2d(rows.flat(), [1, quantiles.length * horizon]);
  const l = pinballLoss(tf, quantiles, horizon, t, p, peak);
  const [v] = await l.data();
  [t, p, l].forEach((x) => x.dispose());
  return v ?? Number.NaN;
}

describe('pinballLoss', () => {
  // Errors (target - prediction): P10 [1, 3] -> 0.1, 0.3; P50 [0, 1] -> 0, 0.5; P90 [-1, -1] -> 0.1, 0.1.
  const target = [1, 3];
  const rows = [
    [0, 0],
    [1, 2],
    [2, 4],
  ];
  const base = 1.1 / 6;

  it('is the mean pinball loss over every quantile and step', async () => {
    expect(await lossOf(target, rows)).toBeCloseTo(base, 6);
    expect(await lossOf(target, rows, { weight: 0, quantile: 0.75 })).toBeCloseTo(base, 6);
  });

  it('adds the weighted pinball loss of the point path peak under the target peak', async () => {
    // Target peak 3, point (P50) path peak 2: error 1 at quantile 0.75 -> 0.75, weight 2 -> 1.5.
    expect(await lossOf(target, rows, { weight: 2, quantile: 0.75 })).toBeCloseTo(base + 1.5, 6);
  });

  it('charges a point path peak over the target peak at 1 - quantile', async () => {
    // P50 row [1, 4]: the per-step term becomes 0 + 0.5 (step 2 error -1 at 0.5), peak error -1 -> 0.25.
    const over = [rows[0]!, [1, 4], rows[2]!];
    const stepLoss = (0.1 + 0.3 + 0 + 0.5 + 0.1 + 0.1) / 6;
    expect(await lossOf(target, over, { weight: 1, quantile: 0.75 })).toBeCloseTo(stepLoss + 0.25, 6);
  });

  it('reads the peak from the middle row only, not from the P90 row', async () => {
    // Raising P90 above the target peak changes the per-step term but not the peak term.
    const highP90 = [rows[0]!, rows[1]!, [9, 9]];
    const stepLoss = (0.1 + 0.3 + 0 + 0.5 + 0.1 * 8 + 0.1 * 6) / 6;
    expect(await lossOf(target, highP90, { weight: 1, quantile: 0.75 })).toBeCloseTo(stepLoss + 0.75, 6);
  });
});
