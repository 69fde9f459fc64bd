// Whether dist/ may be run instead of the sources (bin/edgeq.js): plain JavaScript, since it
// decides whether the TypeScript loader is needed at all.
import { readFileSync, statSync } from 'node:fs';

/**
 * True when `<root>/dist` holds a build that no source is newer than. A source that is gone counts
 * as changed, unless the sources are not there at all (an install of dist/ alone, as in the
 * container image). `EDGEQ_FROM_SOURCE=1` in `env` always says no.
 */
export function buildIsCurrent(root, env = process.env) {
  if (env.EDGEQ_FROM_SOURCE === '1') return false;
  let build;
  try {
    build = JSON.parse(readFileSync(new URL('dist/build.json', root), 'utf8'));
  } catch {
    return false;
  }
  if (!Array.isArray(build.inputs) || typeof build.builtAtMs !== 'number') return false;
  try {
    statSync(new URL('src/cli/main.ts', root));
  } catch {
    return true;
  }
  for (const input of build.inputs) {
    try {
      if (statSync(new URL(input, root)).mtimeMs > build.builtAtMs) return false;
    } catch {
      return false;
    }
  }
  return true;
}
