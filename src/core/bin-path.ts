/**
 * Where the `edgeq` command is, for the processes that start others (the dev supervisor, the
 * gateway's drill launcher). Found relative to this module, which is src/core/ in the sources and
 * dist/ in the build, so both layouts are tried rather than one relative path assumed.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const CANDIDATES = ['../../bin/edgeq.js', '../bin/edgeq.js'];

/** The absolute path of bin/edgeq.js. */
export function edgeqBinPath(): string {
  for (const rel of CANDIDATES) {
    const path = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(path)) return path;
  }
  throw new Error(`bin/edgeq.js not found from ${import.meta.url}`);
}
