#!/usr/bin/env -S node --no-memory-reducer --no-incremental-marking
// The `edgeq` command. It runs the build in dist/ (scripts/build.mjs: `npm run build`, which
// `npm start` and `npm test` run first) when no source that went into it is newer than it, and
// otherwise the TypeScript sources through tsx's loader, so an edit is never run stale and needs
// no build step to be tried. EDGEQ_FROM_SOURCE=1 always runs the sources. The process that runs
// is this one either way (no wrapper processes).
import { buildIsCurrent } from './build-current.js';
import { setFlagsFromString } from 'node:v8';

// V8's allocation-site pretenuring learns from one traffic pattern and keeps what it learned: after
// a stretch of small batches it allocated the short-lived buffers of large batches straight into
// the old generation, and the brokers spent a third of their CPU in garbage collection (protobuf
// batches after 24 s of single records: 1,200-1,530 req/s with it, 1,800-2,100 without; a fresh
// deployment was also faster without it on every case of the gateway benchmark). Set before any
// of our code runs, so no allocation site has feedback yet.
setFlagsFromString('--no-allocation-site-pretenuring');
// V8's memory reducer and incremental marking cannot be turned off from here (V8 decides them when
// it sets up the heap), so those flags are on the shebang line above and `edgeq dev` passes them
// to every service it starts; run a service by hand as
// `node --no-memory-reducer --no-incremental-marking bin/edgeq.js broker …`
// (src/cli/supervisor.ts, serviceNodeFlags, says why).

const root = new URL('../', import.meta.url);

if (buildIsCurrent(root)) {
  await import(new URL('dist/edgeq.mjs', root).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
