/**
 * `edgeq arbiter`: runs the embedded arbiter, the single-machine stand-in for etcd that a cell
 * uses to agree on membership and leaders. Its state lives in `--data-dir` and survives restarts
 * (leases do not: their owners re-register). SIGTERM and SIGINT stop it cleanly after the last
 * state write.
 */
import type { Command } from 'commander';
import { EmbeddedArbiterServer } from '../../../region/arbiter/index.ts';
import { EdgeqError } from '../../core/errors.ts';
import { createLogger } from '../../core/logger.ts';

interface ArbiterFlags {
  port?: string;
  dataDir?: string;
}

/** Registers `edgeq arbiter`. */
export function registerArbiterCommand(program: Command): void {
  program
    .command('arbiter')
    .description('run the embedded arbiter (leases, compare-and-set, watches) on 127.0.0.1')
    .option('--port <n>', 'port on 127.0.0.1; 0 picks a free one', '0')
    .option('--data-dir <dir>', 'folder of the arbiter state; without it the state is lost on exit')
    .action(async (flags: ArbiterFlags) => {
      const port = Number(flags.port ?? '0');
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new EdgeqError('INVALID_CONFIG', `--port must be an integer in [0, 65535], got ${flags.port}`);
      const logger = createLogger({ level: process.env.EDGEQ_LOG_LEVEL ?? 'info', name: 'arbiter' });
      const server = await EmbeddedArbiterServer.start({ port, ...(flags.dataDir ? { dataDir: flags.dataDir } : {}), logger });
      // One machine-readable line for supervisors and tests: where the arbiter listens.
      process.stdout.write(`${JSON.stringify({ event: 'listening', host: '127.0.0.1', port: server.port, pid: process.pid })}\n`);
      await new Promise<void>((resolve) => {
        const stop = (signal: string) => {
          logger.info({ signal }, 'stopping');
          void server.close().then(resolve, (err: unknown) => {
            logger.error({ err }, 'clean stop failed');
            resolve();
          });
        };
        process.once('SIGTERM', () => stop('SIGTERM'));
        process.once('SIGINT', () => stop('SIGINT'));
      });
    });
}
