/**
 * Errors as RFC 9457 problem details. Every route throws EdgeqError; this file is the one place
 * where an error becomes a response. The status comes from the code's entry in ERROR_SPECS (core),
 * so the gateway never keeps a second code→status table.
 */
import type { Context } from 'hono';
import { EdgeqError, ERROR_SPECS, type ErrorCode } from '../core/index.ts';

/** Media type of every error body. */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** Seconds a throttled client is told to wait when the error carries no better hint. */
export const RETRY_AFTER_SECONDS_DEFAULT = 1;

/** The body of an error response. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  code: ErrorCode;
  detail: string;
  retriable: boolean;
  /** OFFSET_OUT_OF_RANGE of a read below the log start: where the log starts now. */
  logStartOffset?: number;
  /** A refused input: the request field or parameter at fault, when the error names one. */
  field?: string;
  /** QUOTA_EXCEEDED: the names of the policies that had no room (the draft's extension member). */
  'violated-policies'?: string[];
  /**
   * A failed produce whose records none can have been written (the producer's every attempt was
   * refused before an append): a retry cannot duplicate them. Absent on a 5xx that may follow a write.
   */
  written?: false;
}

/**
 * The two answers over a limit use the problem types draft-ietf-httpapi-ratelimit-headers-11
 * registers (§ Problem Types), so generic clients recognise them; every other code has its URN.
 */
const REGISTERED_TYPES: Partial<Record<ErrorCode, string>> = {
  QUOTA_EXCEEDED: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
  TEMPORARY_REDUCED_CAPACITY: 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity',
};

/** Stable type URI for a code (a URN: there is no page to dereference, and the code is the contract). */
export function problemType(code: ErrorCode): string {
  return REGISTERED_TYPES[code] ?? `urn:edgeq:error:${code}`;
}

function titleOf(code: ErrorCode): string {
  const words = code.toLowerCase().split('_').join(' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/**
 * The problem for any thrown value. Anything that is not an EdgeqError is a bug or an unexpected
 * failure: it is reported as UNKNOWN without its message, which could leak internals.
 */
export function toProblem(err: unknown): Problem {
  const e = err instanceof EdgeqError ? err : new EdgeqError('UNKNOWN', 'internal error', { cause: err });
  const problem: Problem = { type: problemType(e.code), title: titleOf(e.code), status: ERROR_SPECS[e.code].http, code: e.code, detail: e.message, retriable: e.retriable };
  // A read below the log start says where the log starts now, so a reader can go on from there.
  if (e.code === 'OFFSET_OUT_OF_RANGE' && typeof e.details['logStartOffset'] === 'number') problem.logStartOffset = e.details['logStartOffset'];
  if (typeof e.details['field'] === 'string') problem.field = e.details['field'];
  const violated = e.details['violatedPolicies'];
  if (e.code === 'QUOTA_EXCEEDED' && Array.isArray(violated)) problem['violated-policies'] = violated.map(String);
  if (e.details['written'] === false) problem.written = false;
  return problem;
}

/** The realm of the gateway's `WWW-Authenticate` challenges. */
export const AUTH_REALM = 'edgeq';

/**
 * The challenge of a 401 (RFC 9110 §11.6.1 requires one): Bearer (RFC 6750), whose token is the
 * API key; `error="invalid_token"` when a key was presented and matched none.
 */
function challenge(err: unknown): string {
  const invalid = err instanceof EdgeqError && err.details['presented'] === true;
  return `Bearer realm="${AUTH_REALM}"${invalid ? ', error="invalid_token", error_description="the API key is not valid"' : ''}`;
}

/**
 * Builds the problem+json response for `err`: 401 answers carry WWW-Authenticate; 429 answers, and
 * retriable errors with a `retryAfterMs` hint, carry Retry-After. An error may carry its own
 * response headers in `details.headers` (the limiter's Retry-After with jitter and RateLimit
 * fields); they win over the defaults.
 */
export function problemResponse(err: unknown): Response {
  const { status, headers, body } = problemParts(err);
  return new Response(body, { status, headers });
}

/** The status, headers and body of the problem+json answer for `err` (problemResponse's parts). */
export function problemParts(err: unknown): { status: number; headers: Record<string, string>; body: string } {
  const problem = toProblem(err);
  const headers: Record<string, string> = { 'content-type': PROBLEM_CONTENT_TYPE };
  if (problem.status === 401) headers['www-authenticate'] = challenge(err);
  const hintMs = err instanceof EdgeqError ? err.details['retryAfterMs'] : undefined;
  if (problem.status === 429 || (problem.retriable && typeof hintMs === 'number')) {
    const seconds = typeof hintMs === 'number' && hintMs > 0 ? Math.ceil(hintMs / 1000) : RETRY_AFTER_SECONDS_DEFAULT;
    headers['retry-after'] = String(seconds);
  }
  const own = err instanceof EdgeqError ? err.details['headers'] : undefined;
  if (own !== null && typeof own === 'object') for (const [k, v] of Object.entries(own)) if (typeof v === 'string') headers[k.toLowerCase()] = v;
  return { status: problem.status, headers, body: JSON.stringify(problem) };
}

/** The app's `onError` handler. */
export function onGatewayError(err: Error, _c: Context): Response {
  return problemResponse(err);
}

/** The app's `notFound` handler: unknown routes are problems too. */
export function onGatewayNotFound(c: Context): Response {
  return problemResponse(new EdgeqError('NOT_FOUND', `no route for ${c.req.method} ${c.req.path}`));
}
