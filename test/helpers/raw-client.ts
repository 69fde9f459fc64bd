export { RawClient } from '../../src/testing/index.ts';
