/**
 * One producer of the overload bench: single records POSTed to the gateway over a keep-alive
 * `node:http` Agent with a bounded number of sockets, each answer sorted into admitted (2xx),
 * throttled (429, or 503 `TEMPORARY_REDUCED_CAPACITY`) or other (any other status, a socket error,
 * a timeout). A request that finds every socket busy waits in the Agent's queue: that wait is the
 * client's lateness, and it counts in the latency the caller measures from the due time.
 */
import http from 'node:http';

/** Keep-alive sockets one sender opens at most (the bench:gateway bench runs 50 connections). */
export const SENDER_SOCKETS_DEFAULT = 64;
/** A request unanswered this long, from the moment it was handed to the Agent, is a timeout. */
export const REQUEST_TIMEOUT_MS = 10_000;
/** Bytes of an error body read to find its `code` (a problem+json body is a few hundred bytes). */
const ERROR_BODY_BYTES_MAX = 4096;

/** How an answer counts. */
export type Outcome = 'ok' | 'throttled' | 'other';

/** One request's result. */
export interface Answer {
  outcome: Outcome;
  /** HTTP status, or 0 when no answer came. */
  status: number;
  /** The problem+json `code` of an error answer, or `TIMEOUT` / `SOCKET_ERROR` when no answer came. */
  code: string | null;
}

/** What a sender needs. */
export interface SenderOptions {
  /** e.g. `http://127.0.0.1:8080`. */
  gateway: string;
  topic: string;
  /** Bearer key (auth on), or null. */
  apiKey: string | null;
  /** Bytes of each record's value. */
  valueBytes: number;
  sockets?: number;
  timeoutMs?: number;
}

/** Something that sends one record and says how it went (the gateway sender, or a fake in tests). */
export interface Sender {
  send(): Promise<Answer>;
  close(): void;
}

/**
 * The answer's class. 503 counts as throttled only with the load controller's code: a 503 for a
 * missing leader or too few replicas is a failure, not admission control.
 */
export function classify(status: number, code: string | null): Outcome {
  if (status >= 200 && status < 300) return 'ok';
  if (status === 429) return 'throttled';
  if (status === 503 && code === 'TEMPORARY_REDUCED_CAPACITY') return 'throttled';
  return 'other';
}

/** The `code` member of a problem+json body, or null. */
function problemCode(body: string): string | null {
  try {
    const v = (JSON.parse(body) as { code?: unknown }).code;
    return typeof v === 'string' ? v : null;
  } catch {
    return null;
  }
}

/** Sends single JSON records, `acks=all`, through one Agent. */
export class GatewaySender implements Sender {
  private readonly agent: http.Agent;
  private readonly url: URL;
  private readonly body: Buffer;
  private readonly headers: Record<string, string | number>;
  private readonly timeoutMs: number;

  constructor(o: SenderOptions) {
    this.url = new URL(`/v1/topics/${encodeURIComponent(o.topic)}/records?acks=all`, o.gateway);
    // One body for every request: no key and no partition, so the gateway's partitioner spreads them.
    this.body = Buffer.from(JSON.stringify({ records: [{ value: 'v'.repeat(o.valueBytes) }] }));
    this.headers = { 'content-type': 'application/json', 'content-length': this.body.length, ...(o.apiKey !== null ? { authorization: `Bearer ${o.apiKey}` } : {}) };
    this.agent = new http.Agent({ keepAlive: true, maxSockets: o.sockets ?? SENDER_SOCKETS_DEFAULT, scheduling: 'fifo' });
    this.timeoutMs = o.timeoutMs ?? REQUEST_TIMEOUT_MS;
  }

  send(): Promise<Answer> {
    return new Promise<Answer>((resolve) => {
      let settled = false;
      const done = (a: Answer) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(a);
      };
      const req = http.request(
        { agent: this.agent, hostname: this.url.hostname, port: this.url.port, path: `${this.url.pathname}${this.url.search}`, method: 'POST', headers: this.headers },
        (res) => {
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) {
            res.resume();
            res.once('end', () => done({ outcome: 'ok', status, code: null }));
          } else {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => {
              if (text.length < ERROR_BODY_BYTES_MAX) text += chunk;
            });
            res.once('end', () => {
              const code = problemCode(text);
              done({ outcome: classify(status, code), status, code });
            });
          }
          res.once('error', () => done({ outcome: 'other', status, code: 'SOCKET_ERROR' }));
        },
      );
      // The timer covers the wait for a socket too: a request stuck in the Agent's queue is late.
      const timer = setTimeout(() => {
        done({ outcome: 'other', status: 0, code: 'TIMEOUT' });
        req.destroy();
      }, this.timeoutMs);
      req.once('error', () => done({ outcome: 'other', status: 0, code: 'SOCKET_ERROR' }));
      req.end(this.body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
