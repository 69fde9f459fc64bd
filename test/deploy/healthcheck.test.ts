// Proves the image's HEALTHCHECK script (deploy/docker/healthcheck.mjs) probes what each role serves, read from the edgeq process's command line and environment: the gateway's /healthz (over HTTPS when it serves TLS, as in compose), the broker admin's /healthz (or its protocol port without an admin port), the arbiter's port; and that run as a process it exits 0 against a live endpoint and 1 against a dead one.
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { freePort } from '../helpers/ports.ts';
import { TestCa } from '../helpers/test-ca.ts';
// @ts-expect-error plain JavaScript shipped in the image, no declarations
import { probeTarget } from '../../deploy/docker/healthcheck.mjs';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('../../deploy/docker/healthcheck.mjs', import.meta.url));
const target = probeTarget as (found: { args: string[]; env: Record<string, string> } | null, env?: Record<string, string>) => string;

describe('the image healthcheck', () => {
  it('picks the probe from the role and its flags', () => {
    expect(target({ args: ['gateway', '--brokers', 'b:9092', '--host', '0.0.0.0', '--port', '8081'], env: {} }, {})).toBe('http://127.0.0.1:8081/healthz');
    expect(target({ args: ['gateway'], env: {} }, {})).toBe('http://127.0.0.1:8080/healthz');
    expect(target({ args: ['gateway', '--host', '0.0.0.0', '--port', '8080', '--tls-cert', '/certs/g.crt'], env: {} }, {})).toBe('https://127.0.0.1:8080/healthz');
    expect(target({ args: ['gateway', '--port=8443'], env: { EDGEQ_TLS_CERT: '/etc/edgeq/https/tls.crt' } }, {})).toBe('https://127.0.0.1:8443/healthz');
    // A broker's TLS is on its protocol port; the admin port it is probed on stays plain HTTP.
    expect(target({ args: ['broker', '--admin-port', '9192', '--tls-cert', '/certs/b.crt'], env: {} }, {})).toBe('http://127.0.0.1:9192/healthz');
    expect(target({ args: ['broker', '--id', '1', '--admin-port', '9192', '--admin-host', '0.0.0.0'], env: {} }, {})).toBe('http://127.0.0.1:9192/healthz');
    expect(target({ args: ['broker', '--id', '1'], env: { EDGEQ_BROKER__ADMIN_PORT: '9300' } }, {})).toBe('http://127.0.0.1:9300/healthz');
    expect(target({ args: ['broker', '--host', 'broker-1', '--port=9093'], env: {} }, {})).toBe('tcp://broker-1:9093');
    expect(target({ args: ['arbiter', '--port', '7090'], env: {} }, {})).toBe('tcp://127.0.0.1:7090');
    expect(target(null, { EDGEQ_HEALTHCHECK_URL: 'http://x:1/y' })).toBe('http://x:1/y');
    expect(() => target({ args: ['topics', 'list'], env: {} }, {})).toThrow(/no health probe/);
    expect(() => target(null, {})).toThrow(/no edgeq process/);
  });

  it('exits 0 when the endpoint answers 200 and 1 when nothing listens', async () => {
    const server = createServer((_req, res) => res.writeHead(200).end('{"status":"ok"}'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    try {
      const ok = await run(process.execPath, [SCRIPT], { env: { ...process.env, EDGEQ_HEALTHCHECK_URL: `http://127.0.0.1:${port}/healthz` }, timeout: 10_000 });
      expect(ok.stderr).toBe('');
      const dead = await freePort();
      const err = await run(process.execPath, [SCRIPT], { env: { ...process.env, EDGEQ_HEALTHCHECK_URL: `tcp://127.0.0.1:${dead}` }, timeout: 10_000 }).then(
        () => null,
        (e: { code: number; stderr: string }) => e,
      );
      expect(err?.code).toBe(1);
      expect(err?.stderr).toMatch(/^unhealthy: /);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('probes an HTTPS gateway whose certificate it does not trust: 0 when it answers 200, 1 on 503', async () => {
    const ca = await TestCa.create('healthcheck test CA');
    const issued = await ca.server('edgeq-gateway');
    let status = 200;
    const server = createHttpsServer({ cert: issued.cert, key: issued.key }, (_req, res) => res.writeHead(status).end('{}'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const url = `https://127.0.0.1:${(server.address() as { port: number }).port}/healthz`;
    try {
      const ok = await run(process.execPath, [SCRIPT], { env: { ...process.env, EDGEQ_HEALTHCHECK_URL: url }, timeout: 10_000 });
      expect(ok.stderr).toBe('');
      status = 503;
      const err = await run(process.execPath, [SCRIPT], { env: { ...process.env, EDGEQ_HEALTHCHECK_URL: url }, timeout: 10_000 }).then(
        () => null,
        (e: { code: number; stderr: string }) => e,
      );
      expect(err?.code).toBe(1);
      expect(err?.stderr).toMatch(/HTTP 503/);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
