/**
 * The default ModelFactory: retraining in a fresh worker thread per job (retrain-worker.ts), so
 * neither the backtests nor the fits (Holt-Winters' parameter search over weeks of steps, the
 * LSTM's scoring) run on the gateway's event loop. Only the fitted winner comes back.
 */
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { EdgeqError, ERROR_SPECS, type ErrorCode } from '../../src/core/index.ts';
import type { Forecaster } from '../forecaster.ts';
import { defaultLstmOptions, type LstmOptions } from '../lstm/options.ts';
import { fitColdStart, type ModelFactory, type RetrainRequest, type Selected } from './model-choice.ts';
import { reviveBaseline } from './model-snapshot.ts';
import type { RetrainJob, RetrainReply } from './retrain-worker.ts';

/**
 * A silent worker is killed after this long past the LSTM's budget, counted twice (its backtest
 * fit and the winner's fit): the baselines' backtests on 28 days of 1-minute steps take seconds.
 */
export const RETRAIN_GRACE_MS = 120_000;

const bootstrapUrl = new URL('./retrain-worker-bootstrap.mjs', import.meta.url);

/** Options of the default factory. */
export interface WorkerModelFactoryOptions {
  /** LSTM options, or false to select among the baselines only (default: the LSTM's defaults). */
  readonly lstm?: Partial<LstmOptions> | false;
  /** Folder under which an LSTM winner is saved for loading (default: the OS temp folder). */
  readonly modelDir?: string;
  readonly seed?: number;
}

function asCode(code: string): ErrorCode {
  return code in ERROR_SPECS ? (code as ErrorCode) : 'UNKNOWN';
}

/** Runs one job in a fresh worker; the worker is always terminated (also on abort). */
export function retrainInWorker(job: RetrainJob, signal: AbortSignal, timeoutMs: number): Promise<Extract<RetrainReply, { ok: true }>> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(new EdgeqError('UNKNOWN', 'retraining aborted before it started', { details: { aborted: true } }));
      return;
    }
    // No inherited execArgv: the bootstrap registers tsx itself (see forecast/lstm/worker-client.ts).
    const worker = new Worker(bootstrapUrl, { execArgv: [] });
    let settled = false;
    const finish = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      void worker.terminate();
      fn();
    };
    const onAbort = (): void => finish(() => reject(new EdgeqError('UNKNOWN', 'retraining aborted: the planner closed', { details: { aborted: true } })));
    signal.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => finish(() => reject(new EdgeqError('TIMEOUT', `retraining worker gave no answer within ${timeoutMs} ms`))), timeoutMs);
    worker.once('message', (reply: RetrainReply) => finish(() => (reply.ok ? resolve(reply) : reject(new EdgeqError(asCode(reply.code), reply.message)))));
    worker.once('error', (err) => finish(() => reject(new EdgeqError('UNKNOWN', `retraining worker failed: ${err.message}`, { cause: err }))));
    worker.once('exit', (code) => finish(() => reject(new EdgeqError('UNKNOWN', `retraining worker exited (code ${code}) without a result`))));
    // The history is the planner's own copy: transferred, not copied again.
    worker.postMessage(job, [job.values.buffer as ArrayBuffer, job.timestamps.buffer as ArrayBuffer]);
  });
}

/** The default factory: baselines (and the LSTM) selected and fitted in a worker thread. */
export function workerModelFactory(options: WorkerModelFactoryOptions = {}): ModelFactory {
  const lstm = options.lstm === false ? undefined : (options.lstm ?? {});
  const budgetMs = lstm?.trainBudgetMs ?? defaultLstmOptions.trainBudgetMs;
  return {
    lstm: lstm !== undefined,
    coldStart: fitColdStart,
    async retrain(request: RetrainRequest): Promise<Selected> {
      const modelDir = path.join(options.modelDir ?? tmpdir(), `edgeq-planner-${process.pid}-${randomUUID()}`);
      const job: RetrainJob = {
        values: request.values,
        timestamps: request.timestamps,
        season: request.season,
        horizon: request.horizon,
        candidates: request.candidates.filter((c) => lstm !== undefined || c !== 'lstm'),
        lstm: lstm ?? {},
        modelDir,
        ...(options.seed === undefined ? {} : { seed: options.seed }),
      };
      const reply = await retrainInWorker(job, request.signal, 2 * budgetMs + RETRAIN_GRACE_MS);
      let forecaster: Forecaster;
      if (reply.snapshot.kind === 'lstm') {
        const { LstmForecaster } = await import('../lstm/index.ts');
        try {
          forecaster = await LstmForecaster.load(reply.snapshot.dir, lstm ?? {});
        } finally {
          // Loaded into memory: the folder was only the way across threads.
          await rm(reply.snapshot.dir, { recursive: true, force: true });
        }
      } else {
        forecaster = reviveBaseline(reply.snapshot);
      }
      return { method: reply.method, forecaster, backtestMase: reply.backtestMase, ranking: reply.ranking, skipped: reply.skipped };
    },
  };
}
