// Plain-JS entry of the planner's retraining worker. A worker thread does not reliably inherit the
// parent's TypeScript loader (vitest's transform never passes on), so register tsx here, then load
// the TypeScript worker (as forecast/lstm/train-worker-bootstrap.mjs does).
import { register } from 'tsx/esm/api';

register();
await import('./retrain-worker.ts');
