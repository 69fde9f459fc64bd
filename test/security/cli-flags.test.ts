// Proves the security flags are checked at start-up by the real CLI: a broker without --auth-keys or --auth none, a cell broker with auth but no mTLS, a certificate without its key, an expired certificate, and a gateway key without its certificate each stop start-up with INVALID_CONFIG (exit 2) naming the flag or file, before anything listens.
import { beforeAll, describe, expect, it } from 'vitest';
import { runEdgeq } from '../helpers/cli.ts';
import { TestCa, type Issued } from '../helpers/test-ca.ts';
import { tempDir } from '../helpers/tmp.ts';

const run = (args: string[]) => runEdgeq(args, { env: { EDGEQ_LOG_LEVEL: 'error' } });

let ca: TestCa;
let expired: Issued;
beforeAll(async () => {
  ca = await TestCa.create();
  expired = await ca.server('old', { validDays: -1 });
});

describe('security flags at start-up', () => {
  it('refuses each bad combination with INVALID_CONFIG', async () => {
    const dir = await tempDir();
    const [noAuth, cellNoTls, certNoKey, old, gwKeyOnly] = await Promise.all([
      run(['broker', '--data-dir', dir, '--port', '0']),
      run(['broker', '--data-dir', dir, '--port', '0', '--auth-keys', '/dev/null', '--arbiter', 'embedded', '--arbiter-endpoints', '127.0.0.1:1', '--cell-id', 'x']),
      run(['broker', '--data-dir', dir, '--port', '0', '--auth', 'none', '--tls-cert', ca.caFile]),
      run(['broker', '--data-dir', dir, '--port', '0', '--auth', 'none', '--tls-cert', expired.certFile, '--tls-key', expired.keyFile]),
      run(['gateway', '--brokers', '127.0.0.1:1', '--port', '0', '--no-auth', '--tls-key', ca.caFile]),
    ]);
    expect(noAuth).toMatchObject({ code: 2, stderr: expect.stringContaining('auth is on by default') });
    expect(cellNoTls).toMatchObject({ code: 2, stderr: expect.stringContaining('brokers authenticate each other by certificate') });
    expect(certNoKey).toMatchObject({ code: 2, stderr: expect.stringContaining('--tls-key is needed') });
    expect(old).toMatchObject({ code: 2, stderr: expect.stringMatching(/INVALID_CONFIG.*expired/) });
    expect(gwKeyOnly).toMatchObject({ code: 2, stderr: expect.stringContaining('--tls-cert is needed') });
  }, 60_000);
});
