// Proves orAborted: the value when the promise wins, null when the signal wins (or had already
// aborted), the rejection when the promise fails, and no listener left on the signal after any of
// them (racing against a promise instead would leave one reaction per call).
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { orAborted } from './abortable.ts';

describe('orAborted', () => {
  it('gives the value, and leaves no listener after many calls', async () => {
    const ac = new AbortController();
    for (let i = 0; i < 1000; i++) expect(await orAborted(Promise.resolve(i), ac.signal)).toBe(i);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  });

  it('gives null when the signal aborts first, and at once when it already has', async () => {
    const ac = new AbortController();
    const pending = new Promise<number>(() => undefined);
    const raced = orAborted(pending, ac.signal);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(1);
    ac.abort();
    expect(await raced).toBeNull();
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
    expect(await orAborted(Promise.reject(new Error('ignored after abort')), ac.signal)).toBeNull();
  });

  it('passes a rejection through and removes its listener', async () => {
    const ac = new AbortController();
    await expect(orAborted(Promise.reject(new Error('boom')), ac.signal)).rejects.toThrow('boom');
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  });
});
