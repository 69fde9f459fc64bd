#!/usr/bin/env -S node --no-memory-reducer --no-incremental-marking
// The `edgeq` command. The sources are TypeScript run through tsx's loader, so there is no build
// step between a change and a run; the process that runs is this one (no wrapper processes).
import { setFlagsFromString } from 'node:v8';
import { register } from 'tsx/esm/api';

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
register();
await import('../src/cli/main.ts');
