/** Waiting in tests for states reached in the background (replication, elections, restarts). */

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `cond` until true or `ms` pass (for states reached through background replication). */
export async function eventually(cond: () => boolean | Promise<boolean>, ms = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Polls `fn` until it returns a value other than undefined, at most `timeoutMs`. */
export async function waitFor<T>(what: string, timeoutMs: number, fn: () => Promise<T | undefined> | T | undefined, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown = null;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
      last = v;
    } catch (err) {
      lastErr = err;
    }
    await sleep(everyMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastErr ? ` (last error: ${(lastErr as Error).message})` : ''}${last !== undefined ? ` (last: ${JSON.stringify(last)})` : ''}`);
}
