/**
 * The page's requests: the key (asked once, kept in session storage) on every call, a 401 or 403
 * asks for it again, and the stream read with fetch (EventSource cannot send a header) with its
 * own reconnect.
 */
const KEY = 'edgeq.dashboard.key';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    detail: string,
  ) {
    super(detail);
  }
}

export function storedKey(): string | null {
  return sessionStorage.getItem(KEY);
}

export function setKey(key: string | null): void {
  if (key) sessionStorage.setItem(KEY, key);
  else sessionStorage.removeItem(KEY);
}

function headers(extra: Record<string, string> = {}): Record<string, string> {
  const key = storedKey();
  return key ? { ...extra, authorization: `Bearer ${key}` } : extra;
}

async function problem(res: Response): Promise<ApiError> {
  let code = `HTTP_${res.status}`;
  let detail = res.statusText;
  try {
    const body = (await res.json()) as { code?: string; detail?: string };
    code = body.code ?? code;
    detail = body.detail ?? detail;
  } catch {
    // not problem+json
  }
  return new ApiError(res.status, code, detail);
}

export async function getJson<T>(path: string): Promise<T> {
  const res = await fetch(path, { headers: headers() });
  if (!res.ok) throw await problem(res);
  return (await res.json()) as T;
}

export async function postJson<T>(path: string, body: unknown): Promise<T> {
  const res = await fetch(path, { method: 'POST', headers: headers({ 'content-type': 'application/json' }), body: JSON.stringify(body) });
  if (!res.ok) throw await problem(res);
  return (await res.json()) as T;
}

/**
 * Reads `path` as Server-Sent Events until `signal` aborts, calling `onEvent` per `data` and
 * `onState` on each connect and loss; reconnects after a second (a 401/403 stops it and says so).
 */
export async function readStream(path: string, signal: AbortSignal, onEvent: (data: string) => void, onState: (s: 'open' | 'retrying' | ApiError) => void): Promise<void> {
  while (!signal.aborted) {
    try {
      const res = await fetch(path, { headers: headers({ accept: 'text/event-stream' }), signal });
      if (!res.ok || !res.body) {
        const err = await problem(res);
        onState(err);
        if (res.status === 401 || res.status === 403) return;
        throw err;
      }
      onState('open');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let cut: number;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const data = block
            .split('\n')
            .filter((l) => l.startsWith('data:'))
            .map((l) => l.slice(5).replace(/^ /, ''))
            .join('\n');
          if (data) onEvent(data);
        }
      }
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof ApiError && (err.status === 401 || err.status === 403)) return;
    }
    if (signal.aborted) return;
    onState('retrying');
    await new Promise((r) => setTimeout(r, 1_000));
  }
}
