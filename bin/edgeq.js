#!/usr/bin/env node
// The `edgeq` command. The sources are TypeScript run through tsx's loader, so there is no build
// step between a change and a run; the process that runs is this one (no wrapper processes).
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
