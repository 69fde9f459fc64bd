/**
 * A CLI command's call to a gateway's HTTP API, for what only a gateway does (global topics and
 * global quotas go through its mesh catalogue): the API key from $EDGEQ_API_KEY, a refusal turned
 * into the typed error its problem+json names.
 */
import { EdgeqError, ERROR_SPECS, type ErrorCode } from '../../core/index.ts';

export const GATEWAY_DEFAULT = 'http://127.0.0.1:8080';
/** Bound on one call (a global create waits for the catalogue to settle). */
const GATEWAY_CALL_TIMEOUT_MS = 60_000;

/** The gateway of a command: --gateway, else $EDGEQ_GATEWAY, else the local default. */
export function gatewayOf(flag: string | undefined): string {
  return (flag ?? process.env.EDGEQ_GATEWAY ?? GATEWAY_DEFAULT).replace(/\/$/, '');
}

/** Calls `method path` with a JSON body; returns the parsed answer (null for 204). */
export async function gatewayCall(gateway: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const key = process.env.EDGEQ_API_KEY;
  let res: Response;
  try {
    res = await fetch(`${gateway}${path}`, {
      method,
      headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(key ? { authorization: `Bearer ${key}` } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(GATEWAY_CALL_TIMEOUT_MS),
    });
  } catch (err) {
    throw new EdgeqError('CONNECTION_CLOSED', `gateway ${gateway} did not answer: ${(err as Error).message}`);
  }
  if (res.status === 204) return null;
  const doc = (await res.json().catch(() => ({}))) as { code?: string; detail?: string; field?: string };
  if (res.ok) return doc;
  const code = (doc.code && doc.code in ERROR_SPECS ? doc.code : 'UNKNOWN') as ErrorCode;
  throw new EdgeqError(code, `gateway ${gateway}: ${doc.detail ?? `HTTP ${res.status}`}`, { details: doc.field ? { field: doc.field } : {} });
}
