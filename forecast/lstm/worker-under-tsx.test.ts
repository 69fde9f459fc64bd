/** Proves that training in the worker thread also works in a plain `node --import tsx` process (the CLI's way of running), not only under vitest. */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const indexUrl = new URL('./index.ts', import.meta.url).href;
const helperUrl = new URL('./synthetic.test-helper.ts', import.meta.url).href;
/** Where the child runs: the repo root, so that `--import tsx` resolves from node_modules. */
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

const script = `
const { LstmForecaster } = await import(${JSON.stringify(indexUrl)});
const { noisyDailySine, tinyOptions } = await import(${JSON.stringify(helperUrl)});
const s = noisyDailySine(20);
const m = new LstmForecaster({ ...tinyOptions, epochsMax: 1 });
const r = await m.fit({ origin: 400, values: s.values.subarray(0, 400), timestamps: s.timestamps }, { season: 24, horizon: 6 });
const [f] = await m.forecast([{ origin: 420, values: s.values.subarray(0, 420), timestamps: s.timestamps }], 6);
process.stdout.write(JSON.stringify({ backend: r.backend, epochs: r.details.epochs, steps: f.point.length }) + '\\n');
`;

describe('training worker under node --import tsx', () => {
  it('fits in a worker and forecasts', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: repoRoot,
      env: { ...process.env, EDGEQ_LOG_LEVEL: 'warn' },
      timeout: 50_000,
    });
    expect(JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}')).toEqual({ backend: 'wasm', epochs: 1, steps: 6 });
  }, 60_000);
});
