export { freePort } from '../../src/testing/index.ts';
