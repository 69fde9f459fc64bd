/**
 * Structured logging with pino: one root logger per process, child loggers per component.
 */
import { pino, type Logger, type LoggerOptions, type DestinationStream } from 'pino';

export type { Logger } from 'pino';

/** Options for the root logger. */
export interface LoggerConfig {
  level?: string;
  /** Name of the process role, e.g. `broker-1`. */
  name?: string;
  destination?: DestinationStream;
}

/** Creates the root logger of a process. */
export function createLogger(config: LoggerConfig = {}): Logger {
  const options: LoggerOptions = {
    level: config.level ?? process.env.EDGEQ_LOG_LEVEL ?? 'info',
    base: { pid: process.pid, ...(config.name ? { name: config.name } : {}) },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return config.destination ? pino(options, config.destination) : pino(options);
}

/** A logger that drops everything: the default for library code and unit tests. */
export const silentLogger: Logger = pino({ level: 'silent' });
