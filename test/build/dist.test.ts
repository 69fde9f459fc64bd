// Proves the build that every edgeq process runs: bin/edgeq.js takes dist/ only while no source
// that went into it is newer (else the sources, through tsx), and dist/ alone — no sources beside
// it, as in the container image — runs a command end to end, LSTM training worker thread included.
import { execFile } from 'node:child_process';
import { cp, mkdir, readFile, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain JavaScript beside bin/edgeq.js, no declarations
import { buildIsCurrent } from '../../bin/build-current.js';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

const run = promisify(execFile);
const repo = fileURLToPath(new URL('../../', import.meta.url));
const isCurrent = buildIsCurrent as (root: URL, env?: Record<string, string | undefined>) => boolean;

afterAll(cleanupTempDirs);

/** A root with src/cli/main.ts, one more source and a dist/build.json listing both, built at `builtAtMs`. */
async function fakeRoot(builtAtMs: number): Promise<URL> {
  const dir = await tempDir('edgeq-build-current-');
  await mkdir(join(dir, 'src/cli'), { recursive: true });
  await mkdir(join(dir, 'dist'));
  for (const f of ['src/cli/main.ts', 'src/x.ts']) {
    await writeFile(join(dir, f), '//\n');
    await utimes(join(dir, f), new Date(builtAtMs - 10_000), new Date(builtAtMs - 10_000));
  }
  await writeFile(join(dir, 'dist/build.json'), JSON.stringify({ builtAtMs, inputs: ['src/cli/main.ts', 'src/x.ts'] }));
  return pathToFileURL(`${dir}/`);
}

describe('which code bin/edgeq.js runs', () => {
  it('the build while every source is older than it', async () => {
    expect(isCurrent(await fakeRoot(Date.now()), {})).toBe(true);
  });

  it('the sources once one is newer, or gone, or when EDGEQ_FROM_SOURCE=1', async () => {
    const newer = await fakeRoot(Date.now());
    await utimes(new URL('src/x.ts', newer), new Date(), new Date(Date.now() + 5_000));
    expect(isCurrent(newer, {})).toBe(false);
    const gone = await fakeRoot(Date.now());
    await writeFile(new URL('dist/build.json', gone), JSON.stringify({ builtAtMs: Date.now(), inputs: ['src/cli/main.ts', 'src/y.ts'] }));
    expect(isCurrent(gone, {})).toBe(false);
    expect(isCurrent(await fakeRoot(Date.now()), { EDGEQ_FROM_SOURCE: '1' })).toBe(false);
  });

  it('the sources when there is no build, or an unreadable one', async () => {
    const none = await fakeRoot(Date.now());
    await writeFile(new URL('dist/build.json', none), '{');
    expect(isCurrent(none, {})).toBe(false);
    const noBuild = pathToFileURL(`${await tempDir('edgeq-no-build-')}/`);
    expect(isCurrent(noBuild, {})).toBe(false);
  });
});

describe('dist/ alone', () => {
  it('runs edgeq forecast train, whose LSTM trains in a worker thread of the bundle', async () => {
    const root = await tempDir('edgeq-dist-only-');
    await run(process.execPath, [join(repo, 'scripts/build.mjs'), '--out', join(root, 'dist')], { cwd: repo });
    await cp(join(repo, 'bin'), join(root, 'bin'), { recursive: true });
    await symlink(join(repo, 'node_modules'), join(root, 'node_modules'));
    await writeFile(join(root, 'package.json'), JSON.stringify({ type: 'module' }));
    // A day-shaped series of 60 rows per "day", 8 days.
    const stamp = (i: number) => new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString().slice(0, 19).replace('T', ' ');
    const rows = Array.from({ length: 480 }, (_, i) => `${stamp(i)},${(100 + 50 * Math.sin((2 * Math.PI * i) / 60)).toFixed(2)}`);
    await writeFile(join(root, 'trace.csv'), `timestamp,value\n${rows.join('\n')}\n`);
    const { stdout } = await run(
      process.execPath,
      [join(root, 'bin/edgeq.js'), 'forecast', 'train', '--csv', join(root, 'trace.csv'), '--season', '60', '--out', join(root, 'model'), '--budget-ms', '3000', '--seed', '1'],
      // No tsx registered anywhere: a source loaded by mistake would fail on its .ts import.
      { cwd: root, env: { ...process.env, EDGEQ_LOG_LEVEL: 'warn', NODE_OPTIONS: '' }, timeout: 90_000 },
    );
    const out = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as { backend?: string; rows?: number };
    expect(out).toMatchObject({ backend: 'wasm', rows: 480 });
    expect(JSON.parse(await readFile(join(root, 'dist/build.json'), 'utf8')).inputs).toContain('src/cli/main.ts');
  }, 120_000);
});
