// Proves the supervisor's per-process log file: lines are appended across reopenings, and past
// its bound the file is moved to .1 (replacing an older one) and begun again, so at most twice the
// bound is kept.
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanupTempDirs, tempDir } from '../../test/helpers/tmp.ts';
import { LogFile } from './log-file.ts';

afterAll(cleanupTempDirs);

describe('LogFile', () => {
  it('appends lines, also after a reopen (a restarted child)', async () => {
    const path = join(await tempDir('edgeq-logfile-'), 'logs', 'broker-1.log');
    const a = new LogFile(path);
    a.write('{"msg":"one"}');
    a.close();
    const b = new LogFile(path);
    b.write('{"msg":"two"}');
    b.close();
    expect(await readFile(path, 'utf8')).toBe('{"msg":"one"}\n{"msg":"two"}\n');
  });

  it('rotates past its bound and keeps one older file', async () => {
    const path = join(await tempDir('edgeq-logfile-'), 'gateway.log');
    const log = new LogFile(path, 100);
    const line = (i: number) => `line ${String(i).padStart(3, '0')} ${'x'.repeat(30)}`; // 39 bytes + newline
    for (let i = 0; i < 10; i++) log.write(line(i));
    log.close();
    // 40 bytes a line, 100 bytes a file: lines 0-1 | 2-3 | 4-5 | 6-7 | 8-9; the last two files remain.
    expect(await readFile(path, 'utf8')).toBe(`${line(8)}\n${line(9)}\n`);
    expect(await readFile(`${path}.1`, 'utf8')).toBe(`${line(6)}\n${line(7)}\n`);
    expect((await stat(path)).size).toBeLessThanOrEqual(100);
  });
});
