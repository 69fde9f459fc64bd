// Proves Lifeguard's local health multiplier stays in [0, lhmMax − 1] and scales timeouts by score + 1.
import { describe, expect, it } from 'vitest';
import { Awareness } from './awareness.ts';

describe('Awareness', () => {
  it('rises and falls within its bounds and stretches timeouts', () => {
    const a = new Awareness(8);
    expect(a.scale(500)).toBe(500);
    a.apply(3);
    expect(a.health).toBe(3);
    expect(a.scale(500)).toBe(2000);
    a.apply(100);
    expect(a.health).toBe(7);
    expect(a.multiplier).toBe(8);
    a.apply(-1);
    expect(a.health).toBe(6);
    a.apply(-100);
    expect(a.health).toBe(0);
    expect(() => new Awareness(0)).toThrow();
  });
});
