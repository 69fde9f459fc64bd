// Proves auth is on by default outside the local deployment: `edgeq gateway` refuses to start
// with neither a keys file nor an explicit --no-auth (a typed config error, exit code 2); and that
// bad producer bounds are refused the same way before anything starts.
import { describe, expect, it } from 'vitest';
import { runCliCaptured } from './test-support.ts';

describe('edgeq gateway auth default', () => {
  it('refuses to start without --keys or --no-auth', async () => {
    const run = await runCliCaptured(['gateway', '--brokers', '127.0.0.1:1', '--port', '0']);
    expect(run.code).toBe(2);
    const errors = [run.stderr];
    expect(errors.join('')).toContain('INVALID_CONFIG');
    expect(errors.join('')).toContain('--no-auth');
  });

  for (const [flag, value] of [['--produce-inflight', '9'], ['--produce-inflight', '0'], ['--produce-linger-ms', '-1'], ['--produce-linger-ms', 'soon'], ['--produce-batch-bytes', '512'], ['--produce-batch-bytes', '1e9'], ['--produce-timeout-ms', '50'], ['--produce-timeout-ms', '9999999'], ['--produce-timeout-ms', '2s']] as const) {
    it(`refuses ${flag} ${value} with INVALID_CONFIG naming the bound`, async () => {
      const run = await runCliCaptured(['gateway', '--brokers', '127.0.0.1:1', '--port', '0', '--no-auth', flag, value]);
      expect(run.code).toBe(2);
      const errors = [run.stderr];
      expect(errors.join('')).toMatch(/INVALID_CONFIG: .*(produceInflightPerPartitionMax|--produce-linger-ms|produceBatchBytesMax|--produce-batch-bytes|produceTimeoutMs|--produce-timeout-ms)/);
    });
  }
});
