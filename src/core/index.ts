/** Core building blocks shared by every domain: errors, assertions, time, logging and the CRC32C checksum. */
export * from './errors.ts';
export * from './assert.ts';
export * from './clock.ts';
export * from './logger.ts';
export * from './random.ts';
export * from './abortable.ts';
export * from './crc32c.ts';
export * from './bin-path.ts';
