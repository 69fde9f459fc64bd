/**
 * Assertions for programmer errors (broken invariants), never stripped. Operating conditions
 * (bad input, full disk, lost peers) are EdgeqErrors instead.
 */
export class AssertionError extends Error {
  override readonly name = 'AssertionError';
}

/** Throws an AssertionError when `condition` is false. */
export function assert(condition: unknown, message = 'assertion failed'): asserts condition {
  if (!condition) throw new AssertionError(message);
}

/** Marks a branch that the type system proves unreachable. */
export function unreachable(value: never, message = 'unreachable'): never {
  throw new AssertionError(`${message}: ${String(value)}`);
}
