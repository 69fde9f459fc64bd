/** Settings of a benchmark from its environment variables (BENCH_*). */
/** A positive number from the environment variable `name`, or `fallback` when unset or empty; anything else stops the bench naming the variable. */
export function envNumber(name: string, fallback: number): number {
  const v = process.env[name];
  const n = v === undefined || v === '' ? fallback : Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name}: expected a positive number, got "${v}"`);
  return n;
}
