// Proves the broker's recent-fsync p99: nearest rank over the samples of the window only, 0 without samples, and a bounded ring that forgets the oldest.
import { describe, expect, it } from 'vitest';
import { RECENT_SAMPLES_MAX, RECENT_WINDOW_MS, RecentP99 } from './recent-p99.ts';

describe('RecentP99', () => {
  it('counts only the samples of the window', () => {
    let now = 0;
    const r = new RecentP99(() => now);
    expect(r.p99()).toBe(0);
    r.record(500); // old and slow
    now += RECENT_WINDOW_MS + 1;
    for (let i = 1; i <= 100; i++) r.record(i);
    expect(r.p99()).toBe(99);
    now += RECENT_WINDOW_MS + 1;
    expect(r.p99()).toBe(0);
  });

  it('keeps the last RECENT_SAMPLES_MAX samples', () => {
    const r = new RecentP99(() => 0);
    for (let i = 0; i < RECENT_SAMPLES_MAX; i++) r.record(1000);
    for (let i = 0; i < RECENT_SAMPLES_MAX; i++) r.record(1);
    expect(r.p99()).toBe(1);
  });
});
