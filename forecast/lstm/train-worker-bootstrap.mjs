// Plain-JS entry of the training worker. A worker thread does not reliably inherit the parent's
// TypeScript loader (`node --import tsx` may or may not pass it on; vitest's own transform never
// does), so register tsx here explicitly, then load the TypeScript worker.
import { register } from 'tsx/esm/api';

register();
await import('./train-worker.ts');
