/** Numbers with their units, times in the browser's own zone. */
export function rate(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  if (v >= 1e6) return `${(v / 1e6).toFixed(2)} M rec/s`;
  if (v >= 1e3) return `${(v / 1e3).toFixed(1)} k rec/s`;
  return `${v.toFixed(v < 10 ? 1 : 0)} rec/s`;
}

export function ms(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  return v >= 10_000 ? `${(v / 1000).toFixed(1)} s` : `${Math.round(v)} ms`;
}

export function count(v: number | null | undefined, unit = ''): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  return `${Math.round(v).toLocaleString()}${unit ? ` ${unit}` : ''}`;
}

export function time(t: number | string | null | undefined): string {
  if (t === null || t === undefined) return '–';
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? '–' : d.toLocaleTimeString();
}

/** Escapes text for innerHTML. */
export function esc(s: unknown): string {
  return String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
