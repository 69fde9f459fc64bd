// Proves `edgeq broker --admin-port` (and EDGEQ_BROKER__ADMIN_PORT) serves GET /metrics from a real
// broker process and reports the port on its listening line, and that the admin port is off by default.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, loadConfig } from '../config/index.ts';
import { cleanupTempDirs, tempDir, freePort } from '../testing/index.ts';

afterAll(cleanupTempDirs);

const BIN = fileURLToPath(new URL('../../bin/edgeq.js', import.meta.url));
/** tsx compiles the sources on the first run: a few seconds on 2 cores. */
const START_TIMEOUT_MS = 20_000;

describe('edgeq broker --admin-port', () => {
  it('is off by default and read from EDGEQ_BROKER__ADMIN_PORT', () => {
    expect(DEFAULT_CONFIG.broker.adminPort).toBe(0);
    expect(loadConfig({ env: { EDGEQ_BROKER__ADMIN_PORT: '9464' } }).broker.adminPort).toBe(9464);
    expect(() => loadConfig({ env: { EDGEQ_BROKER__ADMIN_PORT: '70000' } })).toThrow(/broker\.adminPort/);
  });

  it('serves /metrics from a broker process and prints the port on the listening line', async () => {
    const adminPort = await freePort();
    const child = spawn(process.execPath, [BIN, 'broker', '--auth', 'none', '--port', '0', '--admin-port', String(adminPort), '--data-dir', await tempDir()], {
      env: { ...process.env, EDGEQ_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise<unknown>((resolve) => child.on('exit', resolve));
    try {
      const line = await new Promise<Record<string, unknown>>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('the broker did not start')), START_TIMEOUT_MS);
        createInterface({ input: child.stdout }).on('line', (l) => {
          if (!l.startsWith('{')) return;
          const ev = JSON.parse(l) as Record<string, unknown>;
          if (ev['event'] !== 'listening') return;
          clearTimeout(timer);
          resolve(ev);
        });
        void exited.then((code) => reject(new Error(`the broker exited with ${String(code)}`)));
      });
      expect(line['adminPort']).toBe(adminPort);
      const res = await fetch(`http://127.0.0.1:${adminPort}/metrics`);
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toMatch(/^edgeq_partition_leader\{topic="__consumer_offsets",partition="0",broker="1"\} 1$/m);
      expect(text).toMatch(/^process_resident_memory_bytes\{broker="1"\} \d+$/m);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  }, 30_000);
});
