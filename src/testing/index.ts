/**
 * Test support shared by unit tests beside the code (src/, region/, …) and the multi-process
 * tests in test/: temporary folders, free ports, waiting for background states, seeds and a raw
 * protocol client. Nothing in src/ imports test/; test/helpers builds on this.
 */
export { tempDir, cleanupTempDirs } from './tmp.ts';
export { freePort } from './ports.ts';
export { RawClient } from './raw-client.ts';
export { testSeed, randInt } from './seed.ts';
export { sleep, eventually, waitFor } from './wait.ts';
