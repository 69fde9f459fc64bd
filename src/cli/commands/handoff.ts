/**
 * `edgeq handoff`: hands a running broker's leaderships to the other ISR members of each partition
 * and waits for them to take over (src/cli/handoff.ts): what a broker's Kubernetes preStop runs
 * before the SIGTERM, so a rolling restart moves leaders while the broker still serves as a
 * follower. It reaches the cell's arbiter as the broker does: the same configuration (a JSON file,
 * EDGEQ_* environment, these flags) and the same TLS to etcd. Prints one JSON report; exit 0 when
 * every partition handed off has a new leader, 2 on bad input or when some had none by --wait-ms
 * (TIMEOUT, after the report).
 */
import type { Command } from 'commander';
import { loadConfig } from '../../config/index.ts';
import { EdgeqError } from '../../core/errors.ts';
import { systemClock } from '../../core/index.ts';
import { createLogger } from '../../core/logger.ts';
import { createArbiter } from '../cell-wiring.ts';
import { addEtcdTlsOptions, loadEtcdTls, type EtcdTlsFlags } from '../etcd-tls.ts';
import { HANDOFF_WAIT_MS_DEFAULT, handOffLeaderships } from '../handoff.ts';

interface HandoffFlags extends EtcdTlsFlags {
  config?: string;
  brokerId?: string;
  arbiter?: string;
  arbiterEndpoints?: string;
  cellId?: string;
  waitMs?: string;
}

/** Registers `edgeq handoff`. */
export function registerHandoffCommand(program: Command): void {
  const command = program
    .command('handoff')
    .description('hand a broker\'s partition leaderships to the other ISR members (before stopping it) and wait for them to take over')
    .option('-c, --config <file>', 'JSON configuration file (the broker\'s)')
    .option('--broker-id <n>', 'the broker whose leaderships move (broker.id)')
    .option('--arbiter <kind>', 'embedded or etcd (cell.arbiter)')
    .option('--arbiter-endpoints <list>', 'host:port[,host:port…] of the arbiter (cell.endpoints)')
    .option('--cell-id <id>', 'the broker\'s cell (cell.id)')
    .option('--wait-ms <n>', `how long to wait for the new leaders (default ${HANDOFF_WAIT_MS_DEFAULT})`);
  addEtcdTlsOptions(command);
  command.action(async (flags: HandoffFlags) => {
    const overrides: Record<string, unknown> = {};
    if (flags.brokerId !== undefined) overrides['broker.id'] = Number(flags.brokerId);
    if (flags.arbiter !== undefined) overrides['cell.arbiter'] = flags.arbiter;
    if (flags.arbiterEndpoints !== undefined) overrides['cell.endpoints'] = flags.arbiterEndpoints;
    if (flags.cellId !== undefined) overrides['cell.id'] = flags.cellId;
    const config = loadConfig({ ...(flags.config ? { file: flags.config } : {}), env: process.env, overrides });
    if (config.cell.arbiter === 'none') throw new EdgeqError('INVALID_CONFIG', 'edgeq handoff needs the cell\'s arbiter: --arbiter embedded|etcd and --arbiter-endpoints (or EDGEQ_ARBITER, EDGEQ_ARBITER_ENDPOINTS)', { details: { key: 'cell.arbiter' } });
    const waitMs = flags.waitMs === undefined ? HANDOFF_WAIT_MS_DEFAULT : Number(flags.waitMs);
    if (!Number.isSafeInteger(waitMs) || waitMs < 0 || waitMs > 600_000) throw new EdgeqError('INVALID_CONFIG', `--wait-ms must be an integer in [0, 600000], got ${flags.waitMs}`, { details: { key: 'waitMs' } });
    const logger = createLogger({ level: config.logging.level, name: 'handoff' });
    const etcdTls = await loadEtcdTls(flags);
    const arbiter = createArbiter(config, logger, etcdTls ? { etcdTls } : {});
    try {
      const report = await handOffLeaderships({ arbiter, cellId: config.cell.id, brokerId: config.broker.id, waitMs, clock: systemClock, logger });
      process.stdout.write(`${JSON.stringify(report)}\n`);
      if (!report.complete) throw new EdgeqError('TIMEOUT', `${report.handedOff.filter((h) => h.newLeader < 0).length} partition(s) had no new leader within ${waitMs} ms`, { retriable: true });
    } finally {
      await arbiter.close().catch(() => undefined);
    }
  });
}
