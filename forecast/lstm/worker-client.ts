/**
 * Runs `train` in a worker thread so that the caller's event loop (a broker or gateway) never
 * blocks on training; only the finished weights come back. The worker is started through a plain
 * `.mjs` bootstrap that registers tsx, which works under `node --import tsx` and under vitest.
 */
import { Worker } from 'node:worker_threads';
import { EdgeqError, type ErrorCode, ERROR_SPECS } from '../../src/core/index.ts';
import type { TrainReply } from './train-worker.ts';
import type { TrainRequest, TrainResult } from './train.ts';

/** Extra time past the training budget before a silent worker is killed (startup, serialisation). */
export const workerGraceMs = 60_000;

const bootstrapUrl = new URL('./train-worker-bootstrap.mjs', import.meta.url);

function asCode(code: string): ErrorCode {
  return code in ERROR_SPECS ? (code as ErrorCode) : 'UNKNOWN';
}

/** Trains in a fresh worker thread and returns its result; the worker is always terminated. */
export function trainInWorker(req: TrainRequest): Promise<TrainResult> {
  return new Promise<TrainResult>((resolve, reject) => {
    // No inherited execArgv: the bootstrap registers tsx itself, and a second registration or a
    // test runner's flags must not leak into the worker.
    const worker = new Worker(bootstrapUrl, { execArgv: [] });
    let settled = false;
    const finish = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void worker.terminate();
      fn();
    };
    const timer = setTimeout(
      () => finish(() => reject(new EdgeqError('TIMEOUT', `LSTM training worker gave no answer within ${req.bounds.trainBudgetMs + workerGraceMs} ms`))),
      req.bounds.trainBudgetMs + workerGraceMs,
    );
    worker.once('message', (reply: TrainReply) =>
      finish(() => (reply.ok ? resolve(reply.result) : reject(new EdgeqError(asCode(reply.code), reply.message)))),
    );
    worker.once('error', (err) => finish(() => reject(new EdgeqError('UNKNOWN', `LSTM training worker failed: ${err.message}`, { cause: err }))));
    worker.once('exit', (code) => finish(() => reject(new EdgeqError('UNKNOWN', `LSTM training worker exited (code ${code}) without a result`))));
    worker.postMessage(req);
  });
}
