/**
 * Entry point of the planner's retraining worker thread: receives one `RetrainJob`, runs the
 * selection backtests and the winner's fit (model-choice.ts `selectModel`), posts back the fitted
 * winner as a snapshot (model-snapshot.ts) or an error, then lets the thread end. The LSTM, when
 * it is a candidate, trains in its own nested worker (forecast/lstm) and is scored here.
 */
import { parentPort } from 'node:worker_threads';
import { isEdgeqError } from '../../src/core/index.ts';
import type { LstmOptions } from '../lstm/options.ts';
import type { Candidate } from '../select.ts';
import { selectModel } from './model-choice.ts';
import { snapshotBaseline, type ModelSnapshot } from './model-snapshot.ts';

/** What the worker receives. */
export interface RetrainJob {
  readonly values: Float64Array;
  /** Every step's start (epoch ms) and the `horizon` steps after the last. */
  readonly timestamps: Float64Array;
  readonly season: number;
  readonly horizon: number;
  readonly candidates: readonly string[];
  /** Options of the LSTM candidate. */
  readonly lstm: Partial<LstmOptions>;
  /** Where the LSTM winner is saved for the planner's thread to load. */
  readonly modelDir: string;
  readonly seed?: number;
  readonly budgetMs?: number;
}

/** What the worker posts back. */
export type RetrainReply =
  | {
      readonly ok: true;
      readonly method: string;
      readonly backtestMase: number;
      readonly ranking: readonly Candidate[];
      readonly skipped: readonly { readonly method: string; readonly reason: string }[];
      readonly snapshot: ModelSnapshot;
    }
  | { readonly ok: false; readonly code: string; readonly message: string };

/** Runs one job in this thread (the worker's body; exported for the in-thread test). */
export async function runRetrainJob(job: RetrainJob): Promise<Extract<RetrainReply, { ok: true }>> {
  const build = async (method: string) => {
    if (method !== 'lstm') throw new Error(`unknown candidate "${method}"`);
    const { LstmForecaster } = await import('../lstm/index.ts');
    return new LstmForecaster(job.lstm);
  };
  const series = { name: 'planner history', values: job.values, timestamps: job.timestamps };
  const selected = await selectModel(series, job.candidates, {
    season: job.season,
    horizon: job.horizon,
    build,
    ...(job.seed === undefined ? {} : { seed: job.seed }),
    ...(job.budgetMs === undefined ? {} : { budgetMs: job.budgetMs }),
  });
  let snapshot: ModelSnapshot;
  if (selected.method === 'lstm') {
    await (selected.forecaster as unknown as { save(dir: string): Promise<void> }).save(job.modelDir);
    snapshot = { kind: 'lstm', dir: job.modelDir };
  } else {
    snapshot = snapshotBaseline(selected.forecaster);
  }
  return { ok: true, method: selected.method, backtestMase: selected.backtestMase, ranking: selected.ranking, skipped: selected.skipped, snapshot };
}

if (parentPort !== null) {
  const port = parentPort;
  port.once('message', (job: RetrainJob) => {
    runRetrainJob(job).then(
      (reply) => port.postMessage(reply satisfies RetrainReply),
      (err: unknown) => {
        const code = isEdgeqError(err) ? err.code : 'UNKNOWN';
        port.postMessage({ ok: false, code, message: err instanceof Error ? err.message : String(err) } satisfies RetrainReply);
      },
    );
  });
}
