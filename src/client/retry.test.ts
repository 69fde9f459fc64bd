// Proves the backoff is full-jitter exponential with a cap, and that retry() retries only retriable errors within its attempt and time bounds.
import { describe, expect, it } from 'vitest';
import { EdgeqError, FakeClock } from '../core/index.ts';
import { backoffDelayMs, retry } from './retry.ts';

/** Runs `promise` while advancing the fake clock until it settles. */
async function drive<T>(clock: FakeClock, promise: Promise<T>): Promise<T> {
  let settled = false;
  promise.then(() => (settled = true), () => (settled = true));
  for (let i = 0; i < 1000 && !settled; i++) {
    await new Promise((r) => setImmediate(r));
    clock.advance(10);
  }
  return promise;
}

describe('backoffDelayMs', () => {
  it('grows as base * 2^attempt, capped, scaled by the random draw', () => {
    const opts = { retryBackoffMs: 100, retryBackoffMsMax: 1000 };
    expect(backoffDelayMs(0, { ...opts, random: () => 0.999999 })).toBe(99);
    expect(backoffDelayMs(1, { ...opts, random: () => 0.5 })).toBe(100);
    expect(backoffDelayMs(3, { ...opts, random: () => 0.5 })).toBe(400);
    expect(backoffDelayMs(4, { ...opts, random: () => 0.5 })).toBe(500); // capped at 1000
    expect(backoffDelayMs(60, { ...opts, random: () => 0.5 })).toBe(500); // no overflow
    expect(backoffDelayMs(5, { ...opts, random: () => 0 })).toBe(0); // full jitter reaches 0
  });
});

describe('retry', () => {
  it('retries retriable errors until success, waiting the jittered backoff', async () => {
    const clock = new FakeClock();
    const waits: number[] = [];
    let calls = 0;
    const result = await drive(
      clock,
      retry(
        async () => {
          calls++;
          if (calls < 3) throw new EdgeqError('NOT_LEADER', 'moved');
          return 'ok';
        },
        { clock, random: () => 0.5, retryBackoffMs: 100, retryBackoffMsMax: 1000, onRetry: (_e, _a, d) => waits.push(d) },
      ),
    );
    expect(result).toBe('ok');
    expect(calls).toBe(3);
    expect(waits).toEqual([50, 100]);
  });

  it('does not retry a non-retriable error', async () => {
    let calls = 0;
    await expect(
      retry(async () => {
        calls++;
        throw new EdgeqError('MESSAGE_TOO_LARGE', 'big');
      }),
    ).rejects.toMatchObject({ code: 'MESSAGE_TOO_LARGE' });
    expect(calls).toBe(1);
  });

  it('stops after retriesMax retries with the last error', async () => {
    const clock = new FakeClock();
    let calls = 0;
    const p = retry(
      async () => {
        calls++;
        throw new EdgeqError('CONNECTION_CLOSED', `try ${calls}`);
      },
      { clock, retriesMax: 3, random: () => 0.1 },
    );
    await expect(drive(clock, p)).rejects.toThrow('try 4');
    expect(calls).toBe(4);
  });

  it('stops when the next wait would pass retryTimeMsMax', async () => {
    const clock = new FakeClock();
    let calls = 0;
    const p = retry(
      async () => {
        calls++;
        throw new EdgeqError('REQUEST_TIMED_OUT', 'slow');
      },
      { clock, retriesMax: 100, retryBackoffMs: 1000, retryBackoffMsMax: 1000, retryTimeMsMax: 2500, random: () => 0.999 },
    );
    await expect(drive(clock, p)).rejects.toMatchObject({ code: 'REQUEST_TIMED_OUT' });
    // Waits of 499, 998, 998 ms: the third would end past 2500 ms.
    expect(calls).toBe(3);
  });
});
