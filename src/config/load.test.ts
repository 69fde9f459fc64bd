// Proves configuration loading: defaults, file, environment and flag precedence, type coercion
// from the environment, and INVALID_CONFIG errors that name the bad key and its source.
import { afterAll, describe, expect, it } from 'vitest';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EdgeqError } from '../core/errors.ts';
import { loadConfig } from './load.ts';
import { DEFAULT_CONFIG } from './schema.ts';
import { cleanupTempDirs, tempDir } from '../testing/index.ts';

afterAll(cleanupTempDirs);

function issuesOf(fn: () => unknown): { key: string; source: string; message: string }[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(EdgeqError);
    expect((err as EdgeqError).code).toBe('INVALID_CONFIG');
    return (err as EdgeqError).details.issues as { key: string; source: string; message: string }[];
  }
  throw new Error('expected INVALID_CONFIG');
}

describe('loadConfig', () => {
  it('returns the defaults when nothing is given', () => {
    expect(loadConfig({ env: {} })).toEqual(DEFAULT_CONFIG);
  });

  it('applies file, then environment, then flags', async () => {
    const dir = await tempDir();
    const file = join(dir, 'edgeq.json');
    await writeFile(file, JSON.stringify({ broker: { port: 9100, id: 3 }, log: { flushPolicy: 'os' } }));
    const c = loadConfig({
      file,
      env: { EDGEQ_BROKER__PORT: '9200', EDGEQ_LOG__VALIDATE_RECORDS: 'false', EDGEQ_DATA_DIR: '/var/edgeq', HOME: '/x' },
      overrides: { 'broker.port': 9300 },
    });
    expect(c.broker.port).toBe(9300);
    expect(c.broker.id).toBe(3);
    expect(c.log.flushPolicy).toBe('os');
    expect(c.log.validateRecords).toBe(false);
    expect(c.broker.dataDir).toBe('/var/edgeq');
  });

  it('names the bad key and where it came from', async () => {
    const dir = await tempDir();
    const file = join(dir, 'bad.json');
    await writeFile(file, JSON.stringify({ broker: { port: 70000, colour: 'red' }, log: { flushPolicy: 'sometimes' } }));
    const issues = issuesOf(() => loadConfig({ file, env: { EDGEQ_LOG__SEGMENT_BYTES_MAX: 'lots' } }));
    const keys = issues.map((i) => i.key).sort();
    expect(keys).toEqual(['broker.colour', 'broker.port', 'log.flushPolicy', 'log.segmentBytesMax']);
    expect(issues.find((i) => i.key === 'broker.port')!.source).toBe(`file ${file}`);
    expect(issues.find((i) => i.key === 'log.segmentBytesMax')!.source).toBe('env EDGEQ_LOG__SEGMENT_BYTES_MAX');
  });

  it('refuses unknown variables and flags, and relations between limits', () => {
    expect(issuesOf(() => loadConfig({ env: { EDGEQ_BROKER__PROT: '1' } }))[0]!.key).toBe('EDGEQ_BROKER__PROT');
    expect(issuesOf(() => loadConfig({ env: {}, overrides: { 'broker.nope': 1 } }))[0]!.key).toBe('broker.nope');
    const rel = issuesOf(() => loadConfig({ env: { EDGEQ_LOG__MESSAGE_BYTES_MAX: String(2 ** 30) } }));
    expect(rel[0]!.key).toBe('log.messageBytesMax');
  });

  it('reports an unreadable file', () => {
    expect(() => loadConfig({ file: '/nonexistent/edgeq.json', env: {} })).toThrow(/cannot read config file/);
  });
});
