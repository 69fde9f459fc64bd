/**
 * `edgeq dev` (what `npm start` runs): the local deployment on one machine, as separate OS
 * processes: the embedded arbiter and a cell of brokers, supervised (a broker that dies is
 * restarted and rejoins). Everything binds 127.0.0.1. Ctrl-C or SIGTERM stops the brokers (they
 * flush and leave the cell), then the arbiter; starting again on the same data folder brings every
 * topic and record back.
 */
import type { Command } from 'commander';
import { join } from 'node:path';
import { mkdir } from 'node:fs/promises';
import { EdgeqError } from '../../core/errors.ts';
import { createLogger } from '../../core/logger.ts';
import { Supervisor } from '../supervisor.ts';

interface DevFlags {
  dataDir?: string;
  port?: string;
  brokers?: string;
  brokerPort?: string;
  arbiterPort?: string;
}

function portOf(value: string | undefined, fallback: number, name: string): number {
  const n = Number(value ?? fallback);
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new EdgeqError('INVALID_CONFIG', `${name} must be a port in [1, 65535], got ${value}`, { details: { key: name } });
  return n;
}

/** Registers `edgeq dev`. */
export function registerDevCommand(program: Command): void {
  program
    .command('dev')
    .description('run the local deployment: embedded arbiter + a cell of brokers, supervised, on 127.0.0.1')
    .option('--data-dir <dir>', 'data folder (EDGEQ_DATA_DIR, default ./data)')
    .option('--port <n>', 'gateway HTTP port (EDGEQ_PORT, default 8080)')
    .option('--brokers <n>', 'brokers in the cell (default 3)')
    .option('--broker-port <n>', 'first broker port; broker i listens on port + i - 1 (EDGEQ_BROKER_PORT, default 9092)')
    .option('--arbiter-port <n>', 'arbiter port (EDGEQ_ARBITER_PORT, default 7090)')
    .action(async (flags: DevFlags) => {
      const logger = createLogger({ level: process.env.EDGEQ_LOG_LEVEL ?? 'info', name: 'dev' });
      const dataDir = flags.dataDir ?? process.env.EDGEQ_DATA_DIR ?? './data';
      const count = Number(flags.brokers ?? '3');
      if (!Number.isInteger(count) || count < 1 || count > 9) throw new EdgeqError('INVALID_CONFIG', `--brokers must be 1..9, got ${flags.brokers}`, { details: { key: 'brokers' } });
      const brokerPort = portOf(flags.brokerPort ?? process.env.EDGEQ_BROKER_PORT, 9092, 'EDGEQ_BROKER_PORT');
      const arbiterPort = portOf(flags.arbiterPort ?? process.env.EDGEQ_ARBITER_PORT, 7090, 'EDGEQ_ARBITER_PORT');
      const gatewayPort = portOf(flags.port ?? process.env.EDGEQ_PORT, 8080, 'EDGEQ_PORT');
      // Each broker serves Prometheus /metrics on its own admin port: broker i on adminPort + i - 1.
      const adminPort = portOf(process.env.EDGEQ_ADMIN_PORT, brokerPort + 100, 'EDGEQ_ADMIN_PORT');
      await mkdir(dataDir, { recursive: true });
      const sup = new Supervisor({ logger });
      const stopAll = async () => {
        // The gateway first (no new requests), then the brokers (they flush), then the arbiter.
        await sup.stop(['gateway', ...Array.from({ length: count }, (_, i) => `broker-${i + 1}`), 'arbiter']);
      };
      try {
        await sup.start({ name: 'arbiter', args: ['arbiter', '--port', String(arbiterPort), '--data-dir', join(dataDir, 'arbiter')] });
        await Promise.all(
          Array.from({ length: count }, (_, i) =>
            sup.start({
              name: `broker-${i + 1}`,
              args: [
                'broker',
                '--id', String(i + 1),
                '--host', '127.0.0.1',
                '--port', String(brokerPort + i),
                '--data-dir', join(dataDir, `broker-${i + 1}`),
                '--arbiter', 'embedded',
                '--arbiter-endpoints', `127.0.0.1:${arbiterPort}`,
                '--cell-id', 'local',
                '--admin-port', String(adminPort + i),
              ],
              env: { EDGEQ_CELL__SIZE: String(count), EDGEQ_LOG_LEVEL: process.env.EDGEQ_LOG_LEVEL ?? 'warn' },
            }),
          ),
        );
        // The local deployment runs without API keys; the gateway's listening line says so.
        await sup.start({
          name: 'gateway',
          args: ['gateway', '--brokers', Array.from({ length: count }, (_, i) => `127.0.0.1:${brokerPort + i}`).join(','), '--host', '127.0.0.1', '--port', String(gatewayPort), '--no-auth'],
          env: { EDGEQ_LOG_LEVEL: process.env.EDGEQ_LOG_LEVEL ?? 'warn' },
        });
      } catch (err) {
        await stopAll();
        throw err;
      }
      const brokers = Array.from({ length: count }, (_, i) => `127.0.0.1:${brokerPort + i}`).join(',');
      const gateway = `http://127.0.0.1:${gatewayPort}`;
      process.stdout.write(
        `${JSON.stringify({ event: 'ready', gateway, arbiter: `127.0.0.1:${arbiterPort}`, brokers, metrics: Array.from({ length: count }, (_, i) => `http://127.0.0.1:${adminPort + i}/metrics`), dataDir, auth: false, processes: sup.status().map((s) => ({ name: s.name, pid: s.pid })) })}\n`,
      );
      process.stderr.write(
        `edgeq dev: gateway at ${gateway} (auth: off, local deployment), cell of ${count} brokers at ${brokers}, arbiter 127.0.0.1:${arbiterPort}, data in ${dataDir}; Ctrl-C stops everything\n`,
      );
      await new Promise<void>((resolve) => {
        const stop = (signal: string) => {
          logger.info({ signal }, 'stopping the local deployment');
          void stopAll().then(resolve);
        };
        process.once('SIGTERM', () => stop('SIGTERM'));
        process.once('SIGINT', () => stop('SIGINT'));
      });
    });
}
