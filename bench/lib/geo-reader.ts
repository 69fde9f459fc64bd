/**
 * The parent's end of the remote reader (bench/lib/geo-reader-process.ts): starts it, feeds the
 * arrivals it reports into the arrival log, and stops it. Ready means the reader's consumer is
 * set up, so the first publish after it is read.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { EdgeqError } from '../../src/core/errors.ts';
import type { ArrivalLog } from './geo-measure.ts';
import type { ReaderSpec } from './geo-reader-process.ts';

const ENTRY = fileURLToPath(new URL('./geo-reader-process.ts', import.meta.url));
/** The reader compiles under tsx and connects: 30 s is generous on 2 loaded cores. */
const READY_WAIT_MS = 30_000;
/** How long a stopped reader gets to exit before SIGKILL. */
const STOP_WAIT_MS = 5_000;

/** A running remote reader. */
export interface RemoteReader {
  /** The reader's fatal error, if it stopped on one. */
  error(): string | null;
  stop(): Promise<void>;
}

/** Starts a reader for `spec` that records every arrival in `log`; resolves once it reads. */
export async function startRemoteReader(spec: ReaderSpec, log: ArrivalLog): Promise<RemoteReader> {
  const child: ChildProcess = fork(ENTRY, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let failure: string | null = null;
  let readyResolve: (() => void) | null = null;
  const ready = new Promise<void>((resolve) => (readyResolve = resolve));
  child.on('message', (m: { t: string; d?: number[]; m?: string }) => {
    if (m.t === 'a' && m.d) {
      const d = m.d;
      for (let i = 0; i + 2 < d.length; i += 3) log.recordId(d[i]!, d[i + 1]!, d[i + 2]!);
    } else if (m.t === 'ready') readyResolve?.();
    else if (m.t === 'err') failure = m.m ?? 'unknown error';
  });
  child.send(spec);
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    if (child.connected) child.send('stop');
    const t = setTimeout(() => child.kill('SIGKILL'), STOP_WAIT_MS);
    await exited;
    clearTimeout(t);
  };
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    ready.then(() => 'ready' as const),
    exited.then(() => 'exited' as const),
    new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), READY_WAIT_MS))),
  ]);
  clearTimeout(timer);
  if (outcome !== 'ready') {
    await stop();
    throw new EdgeqError('TIMEOUT', `the remote reader (${spec.kind}) did not start reading${outcome === 'timeout' ? ` within ${READY_WAIT_MS} ms` : ''}: ${failure ?? 'it exited'}`, { details: { kind: spec.kind } });
  }
  return { error: () => failure, stop };
}
