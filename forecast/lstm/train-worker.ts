/**
 * Entry point of the training worker thread: receives one `TrainRequest`, trains, posts back the
 * weights (transferred, not copied) or an error, then lets the thread end.
 */
import { parentPort } from 'node:worker_threads';
import { isEdgeqError } from '../../src/core/index.ts';
import { train, type TrainRequest } from './train.ts';

/** Message the worker posts back. */
export type TrainReply =
  | { readonly ok: true; readonly result: Awaited<ReturnType<typeof train>> }
  | { readonly ok: false; readonly code: string; readonly message: string };

if (parentPort !== null) {
  const port = parentPort;
  port.once('message', (req: TrainRequest) => {
    train(req).then(
      (result) => port.postMessage({ ok: true, result } satisfies TrainReply, [result.artifacts.weightData]),
      (err: unknown) => {
        const code = isEdgeqError(err) ? err.code : 'UNKNOWN';
        port.postMessage({ ok: false, code, message: err instanceof Error ? err.message : String(err) } satisfies TrainReply);
      },
    );
  });
}
