/**
 * Builds a broker's cell controller from the configuration: the arbiter client the config names
 * (the embedded `edgeq arbiter` process, or an etcd cluster) and the controller around it. Lives
 * with the CLI because it is where the process is composed; the broker itself only sees the
 * controller interface.
 */
import { EdgeqError, type Logger } from '../core/index.ts';
import type { Config } from '../config/index.ts';
import { EmbeddedArbiter, EtcdArbiter, type Arbiter, type EtcdTlsOptions } from '../../region/arbiter/index.ts';
import { ArbiterCellController } from '../../region/cell/index.ts';
import { parseAddress } from '../client/index.ts';

/** How the arbiter is reached beyond the config: TLS to etcd (src/cli/etcd-tls.ts). */
export interface ArbiterSecurity {
  etcdTls?: EtcdTlsOptions;
}

/** The arbiter client for `config.cell`. */
export function createArbiter(config: Config, logger: Logger, security: ArbiterSecurity = {}): Arbiter {
  const endpoints = config.cell.endpoints
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (endpoints.length === 0) {
    throw new EdgeqError('INVALID_CONFIG', `cell.arbiter is ${config.cell.arbiter} but cell.endpoints is empty`, { details: { key: 'cell.endpoints' } });
  }
  if (config.cell.arbiter === 'embedded') {
    const { host, port } = parseAddress(endpoints[0]!);
    return new EmbeddedArbiter({ host, port, logger });
  }
  const scheme = security.etcdTls ? 'https' : 'http';
  return new EtcdArbiter({ hosts: endpoints.map((e) => `${scheme}://${e}`), logger, ...(security.etcdTls ? { tls: security.etcdTls } : {}) });
}

/** The controller through which the broker joins its cell. */
export async function createCellController(config: Config, logger: Logger, security: ArbiterSecurity = {}): Promise<ArbiterCellController> {
  return new ArbiterCellController({
    arbiter: createArbiter(config, logger, security),
    cellId: config.cell.id,
    leaseTtlMs: config.cell.leaseTtlMs,
    cellSize: config.cell.size,
    logger,
  });
}
