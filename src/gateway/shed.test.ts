// Proves the shedding before the framework: a produce the limiter refuses is answered 503
// problem+json with the limiter's headers from the raw request (the app is not called, the
// body is drained and the keep-alive connection serves the next request); every other request,
// and a produce whose tenant only the app can establish (no key, a bad key), goes to the app.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { EdgeqError } from '../core/index.ts';
import type { AdmissionLimiter } from '../../ratelimit/index.ts';
import { Authenticator, hashApiKey } from './auth.ts';
import { shedding } from './shed.ts';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

/** A limiter that refuses tenant `full` (and `anonymous` when asked to). */
function fakeLimiter(refuse: Set<string>): AdmissionLimiter {
  return {
    precheck(tenant: string) {
      if (refuse.has(tenant)) throw new EdgeqError('TEMPORARY_REDUCED_CAPACITY', 'cut', { details: { throttleMs: 1500, headers: { 'Retry-After': '2', 'RateLimit-Policy': '"capacity";q=10;w=1', RateLimit: '"capacity";r=0;t=2' } } });
    },
  } as unknown as AdmissionLimiter;
}

async function serve(refuse: Set<string>, auth: Authenticator | null): Promise<{ url: URL; appCalls: string[] }> {
  const appCalls: string[] = [];
  const app = (req: IncomingMessage, res: ServerResponse) => {
    appCalls.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () => res.end('app'));
  };
  const server = createServer(shedding(app, { limiter: fakeLimiter(refuse), auth }));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(() => new Promise((r) => server.close(() => r())));
  return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`), appCalls };
}

function post(url: URL, path: string, body: string, agent: Agent, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, unknown>; body: string; socket: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, url), { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text, socket: req.socket }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('shedding before the framework', () => {
  it('answers a refused produce itself, with the problem and headers, and the connection goes on', async () => {
    const { url, appCalls } = await serve(new Set(['anonymous']), null);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    closers.push(async () => agent.destroy());
    const big = JSON.stringify({ records: Array.from({ length: 200 }, () => ({ value: 'x'.repeat(100) })) });
    const r = await post(url, '/v1/topics/orders/records?acks=all', big, agent);
    expect(r.status).toBe(503);
    expect(r.headers['retry-after']).toBe('2');
    expect(r.headers['ratelimit-policy']).toBe('"capacity";q=10;w=1');
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(r.body)).toMatchObject({ status: 503, code: 'TEMPORARY_REDUCED_CAPACITY', type: 'https://iana.org/assignments/http-problem-types#temporary-reduced-capacity' });
    // The same socket serves the next request (its unread body was drained).
    const again = await post(url, '/v1/topics/orders/records', big, agent);
    expect(again.status).toBe(503);
    expect(again.socket).toBe(r.socket);
    // Not a produce: the app's.
    const other = await post(url, '/v1/topics', '{}', agent);
    expect(other.body).toBe('app');
    expect(appCalls).toEqual(['POST /v1/topics']);
  });

  it('with auth on, only a tenant known from a valid key is shed; the rest goes to the app', async () => {
    const auth = Authenticator.fromJson({ keys: [{ sha256: hashApiKey('full-key').toString('hex'), tenant: 'full', grants: [{ topic: '*', actions: ['write'] }] }, { sha256: hashApiKey('ok-key').toString('hex'), tenant: 'ok', grants: [{ topic: '*', actions: ['write'] }] }] });
    const { url, appCalls } = await serve(new Set(['full', 'anonymous']), auth);
    const agent = new Agent({ keepAlive: true });
    closers.push(async () => agent.destroy());
    expect((await post(url, '/v1/topics/t/records', '{}', agent, { authorization: 'Bearer full-key' })).status).toBe(503);
    expect((await post(url, '/v1/topics/t/records', '{}', agent, { 'x-api-key': 'full-key' })).status).toBe(503);
    expect((await post(url, '/v1/topics/t/records', '{}', agent, { authorization: 'Bearer ok-key' })).body).toBe('app');
    expect((await post(url, '/v1/topics/t/records', '{}', agent, { authorization: 'Bearer wrong' })).body).toBe('app');
    expect((await post(url, '/v1/topics/t/records', '{}', agent)).body).toBe('app');
    expect(appCalls).toHaveLength(3);
  });
});
