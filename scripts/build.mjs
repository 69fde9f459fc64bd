// Builds dist/: the edgeq command and its two worker threads bundled by esbuild into ES modules
// (npm packages stay external), beside a copy of edgeq.proto and dist/build.json, which lists the
// sources that went in. bin/edgeq.js runs dist/ when no source is newer than the build, else the
// sources through tsx, so a stale build is never run.
//
// Why a build when tsx runs the sources: a process started through tsx spends ~1.5 s of CPU
// resolving and transforming some 300 modules before it does anything, the bundle ~0.4 s, and the
// local deployment (and the test suite, and the campaign) starts a dozen processes at a time on
// two cores. The container image ships dist/ alone.
import { build } from 'esbuild';
import { copyFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// `--out DIR` builds elsewhere (the tests build a copy of their own rather than swap the dist/
// that other processes are running from).
const outFlag = process.argv.indexOf('--out');
const out = outFlag > 0 && process.argv[outFlag + 1] ? process.argv[outFlag + 1] : join(root, 'dist');
const tmp = `${out}.tmp-${process.pid}`;

// Entry points by output name. The worker clients load `./<name>.mjs` beside their own module,
// which in the bundle is dist/ itself (src/… keeps the tsx bootstraps of the same names).
const entryPoints = {
  edgeq: join(root, 'src/cli/main.ts'),
  'train-worker-bootstrap': join(root, 'forecast/lstm/train-worker.ts'),
  'retrain-worker-bootstrap': join(root, 'forecast/planner/retrain-worker.ts'),
};

const startedMs = Date.now();
await rm(tmp, { recursive: true, force: true });
const result = await build({
  entryPoints,
  outdir: tmp,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  outExtension: { '.js': '.mjs' },
  // Flat: a `new URL('./x', import.meta.url)` in any chunk points into dist/ itself, where the
  // worker bootstraps and edgeq.proto are.
  chunkNames: '[name]-[hash]',
  sourcemap: 'linked',
  metafile: true,
  logLevel: 'warning',
});
await copyFile(join(root, 'src/protocol/edgeq.proto'), join(tmp, 'edgeq.proto'));
// The dashboard's page (src/dashboard/page/, uPlot included) for browsers: the same options as
// buildDashboardBundle in src/dashboard/assets.ts, which a gateway run from the sources uses.
const page = await build({
  entryPoints: { app: join(root, 'src/dashboard/page/main.ts') },
  outdir: join(tmp, 'dashboard'),
  bundle: true,
  minify: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  metafile: true,
  logLevel: 'warning',
});
const inputs = [...Object.keys(result.metafile.inputs), ...Object.keys(page.metafile.inputs)]
  .map((p) => relative(root, join(process.cwd(), p)))
  .filter((p) => !p.startsWith('node_modules'))
  .concat(['src/protocol/edgeq.proto', 'scripts/build.mjs'])
  .filter((p, i, all) => all.indexOf(p) === i)
  .sort();
await writeFile(join(tmp, 'build.json'), `${JSON.stringify({ builtAtMs: startedMs, inputs }, null, 1)}\n`);
// Swapped in whole, so a process starting meanwhile sees the old build or the new one.
await rm(out, { recursive: true, force: true });
await rename(tmp, out);
process.stderr.write(`edgeq: built dist/ from ${inputs.length} sources in ${Date.now() - startedMs} ms\n`);
