/**
 * Waiting for a promise or an abort, whichever comes first, without leaving anything behind.
 * `Promise.race([p, gone])` against a promise that settles only at the end (a client going away)
 * adds a reaction to it on every call, and those reactions stay until it settles: a loop racing
 * each poll against it grows without bound for as long as the stream lives. An AbortSignal
 * listener is removed as soon as the race is decided.
 */

/** `p`'s value, or null as soon as `signal` aborts (at once if it already has). */
export function orAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T | null> {
  if (signal.aborted) {
    p.catch(() => undefined);
    return Promise.resolve(null);
  }
  return new Promise<T | null>((resolve, reject) => {
    const onAbort = () => resolve(null);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
