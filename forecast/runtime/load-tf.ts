/**
 * Loads TensorFlow.js once per process (or worker thread) and picks the fastest backend that is
 * present: `tensorflow` (native, via the optional `@tensorflow/tfjs-node`), else `wasm`
 * (`@tensorflow/tfjs-backend-wasm`), else the pure-JS `cpu` backend. Model code gets the `tf`
 * namespace from here and never imports a backend itself, so there is one code path whatever runs.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { createLogger, type Logger } from '../../src/core/index.ts';

/** The TensorFlow.js namespace model code receives (the same API for every backend). */
export type Tf = typeof import('@tensorflow/tfjs');

/** The backends this loader can select. */
export type TfBackendName = 'tensorflow' | 'wasm' | 'cpu';

/** What `loadTf` resolved to. */
export interface TfRuntime {
  readonly tf: Tf;
  readonly backend: TfBackendName;
  /** wasm only: whether the SIMD / multi-threaded builds are usable in this process. */
  readonly simd?: boolean;
  readonly threads?: boolean;
  readonly loadMs: number;
}

/** Env var that forces a backend (tests and benchmarks): `tensorflow`, `wasm` or `cpu`. */
export const backendEnvVar = 'EDGEQ_TF_BACKEND';

const backendNames: readonly TfBackendName[] = ['tensorflow', 'wasm', 'cpu'];
const require = createRequire(import.meta.url);
let runtimePromise: Promise<TfRuntime> | undefined;
let loaded: TfRuntime | undefined;
let log: Logger | undefined;

function logger(): Logger {
  // Created lazily and on stderr (fd 2) so that a CLI printing results on stdout stays clean.
  log ??= createLogger({ name: 'tf-runtime', destination: process.stderr });
  return log;
}

function requestedBackend(): TfBackendName | undefined {
  const raw = process.env[backendEnvVar];
  if (raw === undefined || raw === '') return undefined;
  if ((backendNames as readonly string[]).includes(raw)) return raw as TfBackendName;
  throw new Error(`${backendEnvVar}=${raw}: expected one of ${backendNames.join(', ')}`);
}

async function tryNative(): Promise<TfRuntime | undefined> {
  const t0 = Date.now();
  try {
    // A variable specifier keeps TypeScript from requiring the optional package's types.
    const specifier = '@tensorflow/tfjs-node';
    const tf = (await import(specifier)) as Tf;
    await tf.ready();
    return { tf, backend: 'tensorflow', loadMs: Date.now() - t0 };
  } catch (err) {
    logger().debug({ err: (err as Error).message }, 'tfjs-node not available');
    return undefined;
  }
}

async function tryWasm(tf: Tf): Promise<TfRuntime | undefined> {
  const t0 = Date.now();
  try {
    const wasm = await import('@tensorflow/tfjs-backend-wasm');
    // In Node the wasm backend would fetch() its .wasm files from a URL: point it at the files
    // on disk instead (a directory path ending with a separator).
    const dist = path.join(path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json')), 'dist') + path.sep;
    wasm.setWasmPaths(dist);
    if (!(await tf.setBackend('wasm'))) return undefined;
    await tf.ready();
    const simd = Boolean(await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT'));
    const threads = Boolean(await tf.env().getAsync('WASM_HAS_MULTITHREAD_SUPPORT'));
    return { tf, backend: 'wasm', simd, threads, loadMs: Date.now() - t0 };
  } catch (err) {
    logger().warn({ err: (err as Error).message }, 'wasm backend failed to start');
    return undefined;
  }
}

async function load(): Promise<TfRuntime> {
  const forced = requestedBackend();
  let runtime: TfRuntime | undefined;
  if (forced === undefined || forced === 'tensorflow') runtime = await tryNative();
  if (runtime === undefined && forced === 'tensorflow') {
    throw new Error(`${backendEnvVar}=tensorflow but @tensorflow/tfjs-node cannot be loaded`);
  }
  if (runtime === undefined) {
    const tf = (await import('@tensorflow/tfjs')) as Tf;
    if (forced === undefined || forced === 'wasm') runtime = await tryWasm(tf);
    if (runtime === undefined && forced === 'wasm') throw new Error(`${backendEnvVar}=wasm but the wasm backend failed`);
    if (runtime === undefined) {
      const t0 = Date.now();
      await tf.setBackend('cpu');
      await tf.ready();
      runtime = { tf, backend: 'cpu', loadMs: Date.now() - t0 };
    }
  }
  loaded = runtime;
  logger().info(
    { backend: runtime.backend, simd: runtime.simd, threads: runtime.threads, loadMs: runtime.loadMs, forced },
    'tensorflow.js backend ready',
  );
  return runtime;
}

/** Loads TensorFlow.js and its backend once; later calls get the same runtime. */
export function loadTf(): Promise<TfRuntime> {
  runtimePromise ??= load().catch((err: unknown) => {
    runtimePromise = undefined; // let a later call retry (e.g. after fixing the env var)
    throw err;
  });
  return runtimePromise;
}

/** The backend in use in this thread, or `undefined` before `loadTf` has resolved. */
export function backendName(): TfBackendName | undefined {
  return loaded?.backend;
}
