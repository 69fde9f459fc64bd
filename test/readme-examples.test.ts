// Proves every example in README.md returns what the README says it returns: its shell examples (`npx edgeq …`, curl) run in order against a real local deployment (`edgeq dev`, what `npm start` runs), each printing exactly the `#>` lines shown under it, and its client-library example prints the line it promises.
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, stopAllDevs, type Ready } from './helpers/dev-process.ts';
import { cleanupTempDirs, tempDir } from './helpers/tmp.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Where the README's examples say the two first gateways and the control API are; replaced by the test deployment's. */
const README_ADDRESSES = ['localhost:8080', 'localhost:8081', 'localhost:8090'] as const;
/** Where the README's client example says the brokers are (the CLI's default, too). */
const README_BROKER = '127.0.0.1:9092';
/** The top-level commands of "Two commands": this test starts what `npm start` starts, and `npm test` runs this test. */
const NOT_RUN = new Set(['npm start', 'npm test']);
/**
 * One example command: `npx` resolves and starts the CLI (~1-2 s here, several on the loaded
 * 2-core machine), then at most one read waits (waitMs=1000) or the consumer polls for its two records.
 */
const COMMAND_MS_MAX = 60_000;
/** The client example joins a group (300 ms initial delay) and fetches: seconds, even loaded. */
const CLIENT_EXAMPLE_MS_MAX = 60_000;
/** Most output an example may print before the test stops reading it. */
const OUTPUT_BYTES_MAX = 1024 * 1024;

/** One command of a shell block and the lines the README says it prints (`#> …` under it). */
interface Step {
  command: string;
  expected: string[];
  line: number;
}

interface Block {
  lang: string;
  body: string[];
  line: number;
}

function fencedBlocks(markdown: string): Block[] {
  const out: Block[] = [];
  let open: Block | null = null;
  markdown.split('\n').forEach((text, i) => {
    const fence = /^```(\w*)\s*$/.exec(text);
    if (fence && !open) open = { lang: fence[1] ?? '', body: [], line: i + 1 };
    else if (fence && open) {
      out.push(open);
      open = null;
    } else open?.body.push(text);
  });
  return out;
}

/** A shell block's commands and their documented output; plain `#` comments and blank lines are skipped. */
function steps(block: Block): Step[] {
  const out: Step[] = [];
  block.body.forEach((text, i) => {
    const line = block.line + 1 + i;
    if (text.startsWith('#>')) {
      const last = out[out.length - 1];
      if (!last) throw new Error(`README.md:${line}: output line before any command`);
      last.expected.push(text.replace(/^#> ?/, ''));
    } else if (text.trim() !== '' && !text.trimStart().startsWith('#')) out.push({ command: text, expected: [], line });
  });
  return out;
}

/** `…` in an expected line stands for anything that differs between runs (ids, pids, timestamps). */
function matches(expected: string, actual: string): boolean {
  const pattern = expected
    .split('…')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^]*?');
  return new RegExp(`^${pattern}$`).test(actual);
}

/** Runs `command` with bash in the repository root; resolves with its exit code and output. */
function run(command: string, env: Record<string, string>, o: { timeoutMs: number; until?: (stdout: string) => boolean }): Promise<{ code: number | string; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', command], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    // The whole process group: npx starts node, which the shell does not wait for on a kill.
    const kill = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => {
      kill();
      reject(new Error(`"${command}" did not finish in ${o.timeoutMs} ms; stdout: ${stdout}; stderr: ${stderr}`));
    }, o.timeoutMs);
    child.stdout.on('data', (d: Buffer) => {
      if (stdout.length < OUTPUT_BYTES_MAX) stdout += d.toString('utf8');
      if (o.until?.(stdout)) kill();
    });
    child.stderr.on('data', (d: Buffer) => {
      if (stderr.length < OUTPUT_BYTES_MAX) stderr += d.toString('utf8');
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal ?? -1, stdout, stderr });
    });
  });
}

function lines(text: string): string[] {
  const all = text.split('\n');
  if (all[all.length - 1] === '') all.pop();
  return all;
}

let readme: string;
let ready: Ready;
let dev: ReturnType<typeof startDevRegions>;

beforeAll(async () => {
  readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  // Two regions of three brokers: the examples use the first two gateways and the control API.
  const base = await freeRange(DEV_REGIONS_PORT_SPAN);
  dev = startDevRegions(await tempDir('edgeq-readme-'), base, { regions: 'us-east,eu-west', brokersPerRegion: 3 });
  ready = await dev.ready;
}, 120_000);

afterAll(async () => {
  await stopAllDevs();
  await cleanupTempDirs();
});

describe('README examples', () => {
  it('every shell example prints what the README shows under it', async () => {
    const actual = [new URL(ready.regions[0]!.gateway).host, new URL(ready.regions[1]!.gateway).host, new URL(ready.control).host];
    const env = { EDGEQ_BROKERS: ready.brokers, EDGEQ_LOG_LEVEL: 'warn' };
    const blocks = fencedBlocks(readme).filter((b) => b.lang === 'sh');
    const runnable = blocks.map(steps).filter((s) => !(s.length === 1 && NOT_RUN.has(s[0]!.command.trim())));
    // The README's examples exist (a README without them would pass trivially).
    expect(runnable.flat().some((s) => s.command.startsWith('npx edgeq'))).toBe(true);
    expect(runnable.flat().some((s) => s.command.startsWith('curl'))).toBe(true);
    for (const step of runnable.flat()) {
      const command = README_ADDRESSES.reduce((c, a, i) => c.replaceAll(a, actual[i]!), step.command);
      const res = await run(command, env, { timeoutMs: COMMAND_MS_MAX });
      const where = `README.md:${step.line}: ${step.command}`;
      expect(res.code, `${where} exited ${res.code}; stderr: ${res.stderr}`).toBe(0);
      const got = lines(res.stdout);
      const shown = step.expected.length === 0 ? '(nothing)' : step.expected.join('\n');
      const ok = got.length === step.expected.length && got.every((l, i) => matches(step.expected[i]!, l));
      expect(ok, `${where}\nprinted:\n${res.stdout || '(nothing)'}\nthe README shows:\n${shown}`).toBe(true);
    }
  }, 300_000);

  it('the client-library example prints the record it sends', async () => {
    const block = fencedBlocks(readme).find((b) => b.lang === 'ts' && b.body.some((l) => l.includes('createClient')));
    expect(block, 'a ```ts block using createClient').toBeDefined();
    const promise = block!.body.map((l) => /^\/\/ prints: (.*)$/.exec(l.trim())?.[1]).find((p) => p !== undefined);
    expect(promise, 'a "// prints: …" line in the example').toBeDefined();
    const source = block!.body
      .join('\n')
      .replaceAll("'./src/", `'${ROOT}src/`)
      .replaceAll(README_BROKER, ready.brokers.split(',')[0]!);
    const file = join(await tempDir('edgeq-readme-ts-'), 'example.mts');
    await writeFile(file, source);
    // .mts: ESM with top-level await, as the example is in the repository (package.json has "type": "module").
    // The loop consumes forever (as the README's reader would stop it with Ctrl-C): stop it at its first line.
    const res = await run(`exec node --import tsx ${file}`, { EDGEQ_LOG_LEVEL: 'warn' }, { timeoutMs: CLIENT_EXAMPLE_MS_MAX, until: (out) => out.includes('\n') });
    const first = lines(res.stdout)[0] ?? '';
    expect(matches(promise!, first), `the example printed "${first}", the README promises "${promise}"; stderr: ${res.stderr}`).toBe(true);
  }, 120_000);
});
