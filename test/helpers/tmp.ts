export { tempDir, cleanupTempDirs } from '../../src/testing/index.ts';
