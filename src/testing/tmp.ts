/** Temporary folders for tests, removed after the test file. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];

/** Creates a fresh temporary folder. */
export async function tempDir(prefix = 'edgeq-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/**
 * Removes every folder made by `tempDir` in this process; with EDGEQ_TEST_KEEP_DIRS=1 keeps them
 * (data and the deployments' logs, for a diagnosis) and says where they are.
 */
export async function cleanupTempDirs(): Promise<void> {
  const dirs = made.splice(0);
  if (process.env.EDGEQ_TEST_KEEP_DIRS === '1') {
    if (dirs.length > 0) process.stderr.write(`kept for diagnosis (EDGEQ_TEST_KEEP_DIRS=1): ${dirs.join(' ')}\n`);
    return;
  }
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
}
