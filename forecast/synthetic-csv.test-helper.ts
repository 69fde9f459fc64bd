/** A trace for the forecast CLI's tests: a daily cycle of `season` steps with noise, 5 minutes apart. */

/** `rows` rows as CSV lines (no header). */
export function syntheticCsvRows(rows: number, season: number): string[] {
  const start = Date.UTC(2015, 1, 26, 21, 42, 53);
  return Array.from({ length: rows }, (_, t) => {
    const ts = new Date(start + t * 300_000).toISOString().slice(0, 19).replace('T', ' ');
    return `${ts},${Math.round(60 + 40 * Math.sin((2 * Math.PI * t) / season) + ((t * 7919) % 11))}`;
  });
}
