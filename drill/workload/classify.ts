/**
 * How a produce answer becomes an outcome. The rule errs towards "indeterminate": calling a
 * record failed that was in fact written would make the checker report a lie that is ours, while
 * an indeterminate record only weakens what it can check.
 *
 * - 200 with an offset: acked.
 * - 429 QUOTA_EXCEEDED / THROTTLED and 503 TEMPORARY_REDUCED_CAPACITY: the quota or the admission
 *   limiter refused before anything was sent to the cell; retried with the same id after Retry-After.
 * - Any other 4xx: failed (the gateway checks a request whole before it sends any record).
 * - A 5xx whose problem says `written: false`: failed. The gateway's producer says so only when
 *   every attempt was refused before an append (ARBITER_UNAVAILABLE while a cell cannot confirm a
 *   leader, LEADER_NOT_AVAILABLE, a leader that could not be reached); the checker then proves it
 *   (a failed record found in a log fails the run).
 * - Any other 5xx: indeterminate. The gateway's producer retries a batch inside the cell, so a
 *   final NOT_LEADER or NOT_ENOUGH_REPLICAS may follow an attempt that was written; 504
 *   TIMEOUT / GEO_TIMEOUT come after the write by definition.
 * - A timeout or a connection lost after it opened: indeterminate. A connection refused: failed.
 */
import type { HttpAnswer } from './http.ts';
import { problemCode } from './http.ts';

/** Codes refused before any record was sent, which the producer retries with the same id. */
export const RETRY_CODES: ReadonlySet<string> = new Set(['QUOTA_EXCEEDED', 'THROTTLED', 'TEMPORARY_REDUCED_CAPACITY']);

/** Retry-After when an answer to retry carries none. */
export const RETRY_AFTER_MS_DEFAULT = 1_000;
/** Longest Retry-After honoured: a longer hint is cut, so one answer cannot park a producer. */
export const RETRY_AFTER_MS_MAX = 10_000;

/** What a produce answer means. */
export type Classified =
  | { readonly kind: 'acked'; readonly offset: number; readonly partition: number }
  | { readonly kind: 'retry'; readonly code: string; readonly retryAfterMs: number }
  | { readonly kind: 'failed'; readonly code: string }
  | { readonly kind: 'indeterminate'; readonly code: string };

/** Retry-After in ms: delta-seconds, or an HTTP date relative to `nowMs`; clamped to [0, RETRY_AFTER_MS_MAX]. */
export function retryAfterMs(raw: string | null, nowMs: number): number {
  if (raw === null || raw.trim() === '') return RETRY_AFTER_MS_DEFAULT;
  const s = raw.trim();
  let ms: number;
  if (/^\d+$/.test(s)) ms = Number(s) * 1000;
  else {
    const at = Date.parse(s);
    if (!Number.isFinite(at)) return RETRY_AFTER_MS_DEFAULT;
    ms = at - nowMs;
  }
  return Math.min(RETRY_AFTER_MS_MAX, Math.max(0, ms));
}

/** The first offset of a produce answer's `offsets`, or null when the body has none. */
function firstOffset(body: unknown): { offset: number; partition: number } | null {
  if (body === null || typeof body !== 'object') return null;
  const offsets = (body as { offsets?: unknown }).offsets;
  if (!Array.isArray(offsets) || offsets.length === 0) return null;
  const o = offsets[0] as { offset?: unknown; partition?: unknown } | null;
  if (o === null || typeof o !== 'object' || typeof o.offset !== 'number' || !Number.isSafeInteger(o.offset) || o.offset < 0) return null;
  return { offset: o.offset, partition: typeof o.partition === 'number' ? o.partition : -1 };
}

/** Classifies one produce answer (see the file comment for the rule). */
export function classifyProduce(answer: HttpAnswer, nowMs: number): Classified {
  switch (answer.kind) {
    case 'timeout':
      return { kind: 'indeterminate', code: 'TIMEOUT' };
    case 'aborted':
      return { kind: 'indeterminate', code: 'ABORTED' };
    case 'network':
      return answer.connected ? { kind: 'indeterminate', code: 'CONNECTION_LOST' } : { kind: 'failed', code: 'CONNECTION_REFUSED' };
    case 'response': {
      const { status, body } = answer;
      if (status >= 200 && status < 300) {
        const first = firstOffset(body);
        // A success without an offset still means the gateway took it: it may be written.
        return first ? { kind: 'acked', ...first } : { kind: 'indeterminate', code: 'BAD_ANSWER' };
      }
      const code = problemCode(body) ?? `HTTP_${status}`;
      if ((status === 429 || status === 503) && RETRY_CODES.has(code)) return { kind: 'retry', code, retryAfterMs: retryAfterMs(answer.headers.get('retry-after'), nowMs) };
      if (status >= 400 && status < 500) return { kind: 'failed', code };
      if ((body as { written?: unknown } | null)?.written === false) return { kind: 'failed', code };
      return { kind: 'indeterminate', code };
    }
  }
}
