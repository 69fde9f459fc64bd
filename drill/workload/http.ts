/**
 * The workload's one way to talk to a gateway: a JSON request under a timeout on the injected
 * clock, answered as data (a response, a timeout, a network error) rather than thrown, so the
 * producer can classify every ending and nothing escapes as an unhandled rejection.
 */
import type { Clock } from '../../src/core/index.ts';

/** `fetch` as the workload uses it; tests pass a Hono app's `request` or a stub. */
export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

/** How one request ended. */
export type HttpAnswer =
  /** The gateway answered; `body` is the parsed JSON, or null when it was not JSON. */
  | { readonly kind: 'response'; readonly status: number; readonly headers: Headers; readonly body: unknown }
  /** No whole answer within the timeout (the request may have reached the gateway). */
  | { readonly kind: 'timeout' }
  /** The caller's signal ended it (the workload is stopping). */
  | { readonly kind: 'aborted' }
  /** The connection failed; `connected` false only when it was refused before anything was sent. */
  | { readonly kind: 'network'; readonly code: string; readonly connected: boolean };

/** Error codes of a connection that never opened: the request cannot have reached a gateway. */
const NOT_CONNECTED_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/** What requests share: the API key, the fetch and the clock their timeouts run on. */
export interface GatewayHttpOptions {
  readonly apiKey?: string | null;
  readonly fetch?: FetchLike;
  readonly clock: Clock;
}

/** One JSON request: method, body (sent as JSON when present), timeout and an optional stop signal. */
export interface JsonRequest {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly body?: unknown;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
}

/** The innermost `code` of an error chain (undici puts the socket's code in `cause`), or its name. */
function errorCode(err: unknown): string {
  let e: unknown = err;
  for (let depth = 0; depth < 4 && e !== null && typeof e === 'object'; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return err instanceof Error ? err.name : 'UNKNOWN';
}

/** Sends `req` to `url` and reads the whole answer, both under `req.timeoutMs`. Never throws. */
export async function requestJson(url: string, req: JsonRequest, o: GatewayHttpOptions): Promise<HttpAnswer> {
  const fetchFn = o.fetch ?? ((u: string, init: RequestInit) => fetch(u, init));
  const ctl = new AbortController();
  let timedOut = false;
  const timer = o.clock.setTimeout(() => {
    timedOut = true;
    ctl.abort();
  }, req.timeoutMs);
  const onStop = () => ctl.abort();
  if (req.signal?.aborted) ctl.abort();
  req.signal?.addEventListener('abort', onStop, { once: true });
  const headers: Record<string, string> = { accept: 'application/json' };
  if (req.body !== undefined) headers['content-type'] = 'application/json';
  if (o.apiKey) headers['authorization'] = `Bearer ${o.apiKey}`;
  try {
    // Raced against the abort too: a fetch that ignores its signal (a stub, an in-process app) still ends.
    const aborted = new Promise<never>((_, reject) => {
      const fail = () => reject(new DOMException('aborted', 'AbortError'));
      if (ctl.signal.aborted) fail();
      else ctl.signal.addEventListener('abort', fail, { once: true });
    });
    aborted.catch(() => {});
    const res = await Promise.race([fetchFn(url, { method: req.method, headers, body: req.body === undefined ? null : JSON.stringify(req.body), signal: ctl.signal }), aborted]);
    const text = await Promise.race([res.text(), aborted]);
    let body: unknown = null;
    try {
      body = text === '' ? null : JSON.parse(text);
    } catch {
      body = null;
    }
    return { kind: 'response', status: res.status, headers: res.headers, body };
  } catch (err) {
    if (timedOut) return { kind: 'timeout' };
    if (req.signal?.aborted) return { kind: 'aborted' };
    const code = errorCode(err);
    return { kind: 'network', code, connected: !NOT_CONNECTED_CODES.has(code) };
  } finally {
    timer.cancel();
    req.signal?.removeEventListener('abort', onStop);
  }
}

/** `ms` on `clock`, cut short by `signal`; resolves false when cut short. */
export function sleepOn(clock: Clock, ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const onStop = () => {
      t.cancel();
      resolve(false);
    };
    const t = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onStop);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', onStop, { once: true });
  });
}

/** The problem code of an error answer (`code` of problem+json), or null. */
export function problemCode(body: unknown): string | null {
  if (body === null || typeof body !== 'object') return null;
  const code = (body as { code?: unknown }).code;
  return typeof code === 'string' && code !== '' ? code : null;
}
