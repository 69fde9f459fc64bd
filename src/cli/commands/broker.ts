/**
 * `edgeq broker`: runs one broker process from the typed configuration (defaults, a JSON file,
 * EDGEQ_* environment variables, then these flags). SIGTERM and SIGINT stop it cleanly: the
 * listener closes, logs are flushed and producer state is snapshotted before the process exits.
 */
import type { Command } from 'commander';
import { Broker } from '../../broker/index.ts';
import { loadConfig } from '../../config/index.ts';
import { createLogger } from '../../core/logger.ts';
import type { Logger } from '../../core/index.ts';
import { storageFromEnv, type LogConfig } from '../../log/index.ts';
import { createCellController } from '../cell-wiring.ts';
import { addEtcdTlsOptions, loadEtcdTls, type EtcdTlsFlags } from '../etcd-tls.ts';
import { EdgeqError } from '../../core/index.ts';
import { addServerTlsOptions, loadServerTls, type ServerTlsFlags } from '../tls-flags.ts';
import { shutdownTracing, tracingFromFlags, TRACING_OPTIONS, type TracingFlags } from '../../tracing/index.ts';

interface BrokerFlags extends TracingFlags {
  config?: string;
  arbiter?: string;
  arbiterEndpoints?: string;
  cellId?: string;
  id?: string;
  host?: string;
  port?: string;
  adminPort?: string;
  adminHost?: string;
  dataDir?: string;
  region?: string;
  auth?: string;
  authKeys?: string;
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  tlsClientAuth?: string;
  tlsMinVersion?: string;
}

/** Registers `edgeq broker`. */
export function registerBrokerCommand(program: Command): void {
  const command = program
    .command('broker')
    .description('run a broker: serves topics over the binary protocol')
    .option('-c, --config <file>', 'JSON configuration file')
    .option('--id <n>', 'broker id (broker.id)')
    .option('--host <addr>', 'address to listen on (broker.host), 127.0.0.1 by default')
    .option('--port <n>', 'binary protocol port (broker.port); 0 picks a free one')
    .option('--admin-port <n>', 'port of GET /metrics, /healthz and /readyz (broker.adminPort); 0, the default, turns it off')
    .option('--admin-host <addr>', 'address the admin port binds (broker.adminHost), 127.0.0.1 by default; a container gives 0.0.0.0 so probes and Prometheus reach it')
    .option('--data-dir <dir>', 'data folder (broker.dataDir)')
    .option('--region <name>', 'region this broker serves (broker.region)')
    .option('--arbiter <kind>', 'none (a lone broker), embedded or etcd (cell.arbiter)')
    .option('--arbiter-endpoints <list>', 'host:port[,host:port…] of the arbiter (cell.endpoints)')
    .option('--cell-id <id>', 'the cell this broker joins (cell.id)')
    .option('--auth-keys <file>', 'keys file (API keys and certificate identities → tenants, grants, roles; docs/security.md) binary clients authenticate against (EDGEQ_AUTH_KEYS)')
    .option('--auth <mode>', 'none: serve unauthenticated clients (the local deployment only; EDGEQ_AUTH). Without it a broker needs --auth-keys')
    .option(TRACING_OPTIONS[0]![0], TRACING_OPTIONS[0]![1])
    .option(TRACING_OPTIONS[1]![0], TRACING_OPTIONS[1]![1])
  addServerTlsOptions(command, 'binary protocol listener');
  addEtcdTlsOptions(command);
  command.action(async (flags: BrokerFlags & ServerTlsFlags & EtcdTlsFlags) => {
      const overrides: Record<string, unknown> = {};
      if (flags.id !== undefined) overrides['broker.id'] = Number(flags.id);
      if (flags.host !== undefined) overrides['broker.host'] = flags.host;
      if (flags.port !== undefined) overrides['broker.port'] = Number(flags.port);
      if (flags.adminPort !== undefined) overrides['broker.adminPort'] = Number(flags.adminPort);
      if (flags.adminHost !== undefined) overrides['broker.adminHost'] = flags.adminHost;
      if (flags.dataDir !== undefined) overrides['broker.dataDir'] = flags.dataDir;
      if (flags.region !== undefined) overrides['broker.region'] = flags.region;
      if (flags.arbiter !== undefined) overrides['cell.arbiter'] = flags.arbiter;
      if (flags.arbiterEndpoints !== undefined) overrides['cell.endpoints'] = flags.arbiterEndpoints;
      if (flags.cellId !== undefined) overrides['cell.id'] = flags.cellId;
      const config = loadConfig({ ...(flags.config ? { file: flags.config } : {}), env: process.env, overrides });
      const logger = createLogger({ level: config.logging.level, name: `broker-${config.broker.id}` });
      await tracingFromFlags(flags, { service: 'edgeq-broker', region: config.broker.region, instance: String(config.broker.id) }, { logger });
      const security = await brokerSecurity(flags, config.cell.arbiter !== 'none', logger);
      // TLS to etcd (--etcd-ca, --etcd-cert, --etcd-key), read and checked before anything opens.
      const etcdTls = await loadEtcdTls(flags);
      if (etcdTls && config.cell.arbiter !== 'etcd') throw new EdgeqError('INVALID_CONFIG', `--etcd-ca/--etcd-cert/--etcd-key are for --arbiter etcd (the arbiter is ${config.cell.arbiter})`, { details: { key: '--etcd-ca' } });
      const cell = config.cell.arbiter === 'none' ? undefined : await createCellController(config, logger, etcdTls ? { etcdTls } : {});
      const broker = await Broker.start({
        dataDir: config.broker.dataDir,
        // The real file system; EDGEQ_FAULT_STORAGE=power-loss selects the test facility that
        // lets a test discard, after a SIGKILL, what a power cut would have (src/log/fault-storage.ts).
        storage: storageFromEnv(config.broker.dataDir),
        host: config.broker.host,
        port: config.broker.port,
        // In the config 0 means off; to Broker.start an absent port does.
        ...(config.broker.adminPort > 0 ? { adminPort: config.broker.adminPort, adminHost: config.broker.adminHost } : {}),
        brokerId: config.broker.id,
        region: config.broker.region,
        openFilesMax: config.broker.openFilesMax,
        retentionCheckIntervalMs: config.broker.retentionCheckIntervalMs,
        logDefaults: config.log as Partial<LogConfig>,
        replicaLagTimeMaxMs: config.cell.replicaLagTimeMaxMs,
        ...(cell ? { cell } : {}),
        ...(security.tls ? { tls: security.tls } : {}),
        ...(security.authKeys !== undefined ? { auth: { keys: security.authKeys } } : {}),
        logger,
      });
      // One machine-readable line for supervisors and tests: where the broker listens.
      process.stdout.write(`${JSON.stringify({ event: 'listening', brokerId: broker.brokerId, host: broker.host, port: broker.port, adminPort: broker.adminPort, pid: process.pid, tls: security.tls ? security.tls.clientAuth : false, auth: security.authKeys !== undefined })}\n`);
      await new Promise<void>((resolve) => {
        const stop = (signal: string) => {
          logger.info({ signal }, 'stopping');
          security.tls?.material.close();
          void broker.close().then(() => shutdownTracing()).then(resolve, (err: unknown) => {
            logger.error({ err }, 'clean stop failed');
            resolve();
          });
        };
        process.once('SIGTERM', () => stop('SIGTERM'));
        process.once('SIGINT', () => stop('SIGINT'));
      });
    });
}

/**
 * The broker's TLS and auth from its flags (then EDGEQ_AUTH, EDGEQ_AUTH_KEYS, EDGEQ_TLS_*),
 * checked before anything opens. Auth is on by default: without a keys file the broker refuses
 * to start unless told `--auth none` (what `edgeq dev` passes, and says at start).
 */
async function brokerSecurity(flags: BrokerFlags & ServerTlsFlags, inCell: boolean, logger: Logger) {
  const authMode = flags.auth ?? (process.env.EDGEQ_AUTH || undefined);
  const authKeys = flags.authKeys ?? (process.env.EDGEQ_AUTH_KEYS || undefined);
  if (authMode !== undefined && authMode !== 'none' && authMode !== 'keys') throw new EdgeqError('INVALID_CONFIG', `--auth must be none or keys, got ${authMode}`, { details: { key: '--auth' } });
  if (authMode === 'none' && authKeys !== undefined) throw new EdgeqError('INVALID_CONFIG', '--auth none and --auth-keys contradict each other', { details: { key: '--auth' } });
  if (authMode !== 'none' && authKeys === undefined) {
    throw new EdgeqError('INVALID_CONFIG', 'auth is on by default: give --auth-keys FILE (docs/security.md), or --auth none to serve unauthenticated clients (the local deployment only)', {
      details: { key: '--auth-keys' },
    });
  }
  const tls = await loadServerTls(flags, logger);
  if (authKeys !== undefined && inCell && (!tls || tls.clientAuth === 'none')) {
    tls?.material.close();
    throw new EdgeqError('INVALID_CONFIG', 'a broker of a cell with auth on needs --tls-cert, --tls-key and --tls-ca with client certificates (brokers authenticate each other by certificate)', {
      details: { key: '--tls-client-auth' },
    });
  }
  if (authKeys === undefined) logger.warn('auth is off (--auth none): anyone who reaches the broker port may produce, consume and administer every topic');
  return { tls, authKeys };
}
