/**
 * `edgeq broker`: runs one broker process from the typed configuration (defaults, a JSON file,
 * EDGEQ_* environment variables, then these flags). SIGTERM and SIGINT stop it cleanly: the
 * listener closes, logs are flushed and producer state is snapshotted before the process exits.
 */
import type { Command } from 'commander';
import { Broker } from '../../broker/index.ts';
import { loadConfig } from '../../config/index.ts';
import { createLogger } from '../../core/logger.ts';
import { storageFromEnv, type LogConfig } from '../../log/index.ts';
import { createCellController } from '../cell-wiring.ts';

interface BrokerFlags {
  config?: string;
  arbiter?: string;
  arbiterEndpoints?: string;
  cellId?: string;
  id?: string;
  host?: string;
  port?: string;
  adminPort?: string;
  dataDir?: string;
  region?: string;
}

/** Registers `edgeq broker`. */
export function registerBrokerCommand(program: Command): void {
  program
    .command('broker')
    .description('run a broker: serves topics over the binary protocol')
    .option('-c, --config <file>', 'JSON configuration file')
    .option('--id <n>', 'broker id (broker.id)')
    .option('--host <addr>', 'address to listen on (broker.host), 127.0.0.1 by default')
    .option('--port <n>', 'binary protocol port (broker.port); 0 picks a free one')
    .option('--admin-port <n>', 'port of GET /metrics on 127.0.0.1 (broker.adminPort); 0, the default, turns it off')
    .option('--data-dir <dir>', 'data folder (broker.dataDir)')
    .option('--region <name>', 'region this broker serves (broker.region)')
    .option('--arbiter <kind>', 'none (a lone broker), embedded or etcd (cell.arbiter)')
    .option('--arbiter-endpoints <list>', 'host:port[,host:port…] of the arbiter (cell.endpoints)')
    .option('--cell-id <id>', 'the cell this broker joins (cell.id)')
    .action(async (flags: BrokerFlags) => {
      const overrides: Record<string, unknown> = {};
      if (flags.id !== undefined) overrides['broker.id'] = Number(flags.id);
      if (flags.host !== undefined) overrides['broker.host'] = flags.host;
      if (flags.port !== undefined) overrides['broker.port'] = Number(flags.port);
      if (flags.adminPort !== undefined) overrides['broker.adminPort'] = Number(flags.adminPort);
      if (flags.dataDir !== undefined) overrides['broker.dataDir'] = flags.dataDir;
      if (flags.region !== undefined) overrides['broker.region'] = flags.region;
      if (flags.arbiter !== undefined) overrides['cell.arbiter'] = flags.arbiter;
      if (flags.arbiterEndpoints !== undefined) overrides['cell.endpoints'] = flags.arbiterEndpoints;
      if (flags.cellId !== undefined) overrides['cell.id'] = flags.cellId;
      const config = loadConfig({ ...(flags.config ? { file: flags.config } : {}), env: process.env, overrides });
      const logger = createLogger({ level: config.logging.level, name: `broker-${config.broker.id}` });
      const cell = config.cell.arbiter === 'none' ? undefined : await createCellController(config, logger);
      const broker = await Broker.start({
        dataDir: config.broker.dataDir,
        // The real file system; EDGEQ_FAULT_STORAGE=power-loss selects the test facility that
        // lets a test discard, after a SIGKILL, what a power cut would have (src/log/fault-storage.ts).
        storage: storageFromEnv(config.broker.dataDir),
        host: config.broker.host,
        port: config.broker.port,
        // In the config 0 means off; to Broker.start an absent port does.
        ...(config.broker.adminPort > 0 ? { adminPort: config.broker.adminPort } : {}),
        brokerId: config.broker.id,
        region: config.broker.region,
        openFilesMax: config.broker.openFilesMax,
        retentionCheckIntervalMs: config.broker.retentionCheckIntervalMs,
        logDefaults: config.log as Partial<LogConfig>,
        replicaLagTimeMaxMs: config.cell.replicaLagTimeMaxMs,
        ...(cell ? { cell } : {}),
        logger,
      });
      // One machine-readable line for supervisors and tests: where the broker listens.
      process.stdout.write(`${JSON.stringify({ event: 'listening', brokerId: broker.brokerId, host: broker.host, port: broker.port, adminPort: broker.adminPort, pid: process.pid })}\n`);
      await new Promise<void>((resolve) => {
        const stop = (signal: string) => {
          logger.info({ signal }, 'stopping');
          void broker.close().then(resolve, (err: unknown) => {
            logger.error({ err }, 'clean stop failed');
            resolve();
          });
        };
        process.once('SIGTERM', () => stop('SIGTERM'));
        process.once('SIGINT', () => stop('SIGINT'));
      });
    });
}
