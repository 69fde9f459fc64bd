// Proves a full producer buffer makes senders wait (FIFO) until bytes return or maxBlockMs passes, or fail at once under the 'fail' policy.
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.ts';
import { BufferBudget } from './buffer-budget.ts';

describe('BufferBudget', () => {
  it('grants bytes up to the bound', async () => {
    const b = new BufferBudget({ bufferBytesMax: 100, maxBlockMs: 1000, clock: new FakeClock() });
    await b.acquire(60);
    await b.acquire(40);
    expect(b.usedBytes).toBe(100);
  });

  it('waits for released bytes', async () => {
    const b = new BufferBudget({ bufferBytesMax: 100, maxBlockMs: 1000, clock: new FakeClock() });
    await b.acquire(80);
    let granted = false;
    const p = b.acquire(50).then(() => (granted = true));
    await Promise.resolve();
    expect(granted).toBe(false);
    expect(b.waiting).toBe(1);
    b.release(80);
    await p;
    expect(granted).toBe(true);
    expect(b.usedBytes).toBe(50);
  });

  it('fails with BUFFER_FULL after maxBlockMs', async () => {
    const clock = new FakeClock();
    const b = new BufferBudget({ bufferBytesMax: 100, maxBlockMs: 1000, clock });
    await b.acquire(100);
    const p = b.acquire(1);
    clock.advance(999);
    expect(b.waiting).toBe(1);
    clock.advance(1);
    await expect(p).rejects.toMatchObject({ code: 'BUFFER_FULL', retriable: true });
    expect(b.waiting).toBe(0);
  });

  it("fails at once under the 'fail' policy", async () => {
    const b = new BufferBudget({ bufferBytesMax: 100, maxBlockMs: 60_000, policy: 'fail', clock: new FakeClock() });
    await b.acquire(90);
    await expect(b.acquire(20)).rejects.toMatchObject({ code: 'BUFFER_FULL' });
    expect(b.usedBytes).toBe(90);
  });

  it('serves waiters in order: a small request does not overtake a large one', async () => {
    const b = new BufferBudget({ bufferBytesMax: 100, maxBlockMs: 1000, clock: new FakeClock() });
    await b.acquire(100);
    const order: string[] = [];
    const big = b.acquire(90).then(() => order.push('big'));
    const small = b.acquire(10).then(() => order.push('small'));
    b.release(20); // 80 used: small would fit, but big is first
    await Promise.resolve();
    expect(order).toEqual([]);
    b.release(80);
    await Promise.all([big, small]);
    expect(order).toEqual(['big', 'small']);
  });

  it('refuses a request larger than the whole buffer as MESSAGE_TOO_LARGE', async () => {
    const b = new BufferBudget({ bufferBytesMax: 100, maxBlockMs: 1000, clock: new FakeClock() });
    await expect(b.acquire(101)).rejects.toMatchObject({ code: 'MESSAGE_TOO_LARGE' });
  });
});
