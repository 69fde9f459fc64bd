/** Proves that save → load gives identical forecasts and that every damaged model folder is refused with INVALID_MODEL. */
import { cp, mkdtemp, readFile, rm, truncate, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isEdgeqError } from '../../src/core/index.ts';
import { viewAt } from '../forecaster.ts';
import { LstmForecaster } from './index.ts';
import { noisyDailySine, syntheticHorizon, syntheticSeason, tinyOptions } from './synthetic.test-helper.ts';

const series = noisyDailySine(30);
const nTrain = Math.floor(0.8 * series.values.length);
const views = [nTrain, nTrain + 5, nTrain + 40].map((o) => viewAt(series, o));

describe('LSTM model folder', () => {
  let root: string;
  let saved: string;
  let model: LstmForecaster;

  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'edgeq-lstm-'));
    saved = path.join(root, 'good');
    model = new LstmForecaster({ ...tinyOptions, epochsMax: 3 });
    await model.fit(viewAt(series, nTrain), { season: syntheticSeason, horizon: syntheticHorizon, seed: 5 });
    await model.save(saved);
  }, 60_000);

  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  /** A copy of the good folder, damaged by `damage`. */
  async function damaged(name: string, damage: (dir: string) => Promise<void>): Promise<string> {
    const dir = path.join(root, name);
    await cp(saved, dir, { recursive: true });
    await damage(dir);
    return dir;
  }

  async function loadError(dir: string): Promise<unknown> {
    return LstmForecaster.load(dir).then(
      () => undefined,
      (e: unknown) => e,
    );
  }

  it('loads back with identical forecasts and its metadata', async () => {
    const loaded = await LstmForecaster.load(saved);
    const a = await model.forecast(views, syntheticHorizon);
    const b = await loaded.forecast(views, syntheticHorizon);
    expect(b.map((f) => [Array.from(f.p10!), Array.from(f.point), Array.from(f.p90)])).toEqual(
      a.map((f) => [Array.from(f.p10!), Array.from(f.point), Array.from(f.p90)]),
    );
    expect(loaded.window).toBe(model.window);
    const meta = JSON.parse(await readFile(path.join(saved, 'meta.json'), 'utf8')) as Record<string, unknown>;
    expect(meta).toMatchObject({ formatVersion: 1, horizon: syntheticHorizon, season: syntheticSeason, backend: 'wasm', quantiles: [0.1, 0.5, 0.9] });
    expect(meta.training).toMatchObject({ epochs: 3, epochsMax: 3 });
  });

  const cases: [string, (dir: string) => Promise<void>][] = [
    ['missing weights.bin', (dir) => unlink(path.join(dir, 'weights.bin'))],
    ['missing model.json', (dir) => unlink(path.join(dir, 'model.json'))],
    ['missing meta.json', (dir) => unlink(path.join(dir, 'meta.json'))],
    ['truncated weights.bin', async (dir) => truncate(path.join(dir, 'weights.bin'), 100)],
    ['weights.bin with extra bytes', async (dir) => writeFile(path.join(dir, 'weights.bin'), Buffer.concat([await readFile(path.join(dir, 'weights.bin')), Buffer.alloc(8)]))],
    ['malformed meta.json', (dir) => writeFile(path.join(dir, 'meta.json'), '{"formatVersion": 1, ')],
    ['malformed model.json', (dir) => writeFile(path.join(dir, 'model.json'), 'not json')],
    [
      'unknown format version',
      async (dir) => {
        const meta = JSON.parse(await readFile(path.join(dir, 'meta.json'), 'utf8')) as Record<string, unknown>;
        await writeFile(path.join(dir, 'meta.json'), JSON.stringify({ ...meta, formatVersion: 99 }));
      },
    ],
    [
      'meta.json inconsistent with the network',
      async (dir) => {
        const meta = JSON.parse(await readFile(path.join(dir, 'meta.json'), 'utf8')) as { features: Record<string, unknown> };
        await writeFile(path.join(dir, 'meta.json'), JSON.stringify({ ...meta, features: { ...meta.features, windowSteps: 99 } }));
      },
    ],
  ];

  it.each(cases)('refuses a folder with %s (INVALID_MODEL)', async (name, damage) => {
    const err = await loadError(await damaged(name.replace(/\W+/g, '-'), damage));
    expect(isEdgeqError(err, 'INVALID_MODEL')).toBe(true);
  });

  it('refuses a missing folder (INVALID_MODEL)', async () => {
    expect(isEdgeqError(await loadError(path.join(root, 'does-not-exist')), 'INVALID_MODEL')).toBe(true);
  });

  it('refuses to save an unfitted model (INVALID_MODEL)', async () => {
    const err = await new LstmForecaster().save(path.join(root, 'never')).catch((e: unknown) => e);
    expect(isEdgeqError(err, 'INVALID_MODEL')).toBe(true);
  });
});
