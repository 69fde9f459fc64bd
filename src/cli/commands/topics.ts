/**
 * `edgeq topics …`: create, delete, list and describe topics on a running cluster. Also home of
 * the global `--brokers` option the cluster commands share (default: EDGEQ_BROKERS, else
 * 127.0.0.1:9092).
 */
import type { Command } from 'commander';
import { createClient, type EdgeqClient } from '../../client/index.ts';
import { silentLogger } from '../../core/index.ts';
import { loadBrokerClientSecurity } from '../tls-flags.ts';
import { EdgeqError } from '../../core/index.ts';
import { gatewayCall, gatewayOf } from './gateway-call.ts';

const BROKERS_DEFAULT = '127.0.0.1:9092';

function print(line: unknown): void {
  process.stdout.write(`${typeof line === 'string' ? line : JSON.stringify(line)}\n`);
}

/** Adds the global `--brokers` option once, whichever cluster command registers first. */
export function addBrokersOption(program: Command): void {
  if (program.options.some((o) => o.long === '--brokers')) return;
  program.option('--brokers <list>', 'comma-separated bootstrap brokers (host:port); default $EDGEQ_BROKERS or 127.0.0.1:9092');
}

/** The bootstrap brokers for a command: --brokers, else EDGEQ_BROKERS, else the local default. */
export function brokersOf(cmd: Command): string[] {
  const flag = (cmd.optsWithGlobals() as { brokers?: string }).brokers;
  const text = flag ?? process.env.EDGEQ_BROKERS ?? BROKERS_DEFAULT;
  return text.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
}

/**
 * A client for a command, closed by `withClient` when the action ends. TLS brokers and auth are
 * reached through EDGEQ_BROKERS_TLS_CA / _CERT / _KEY and EDGEQ_API_KEY (docs/security.md).
 */
export async function withClient<T>(cmd: Command, fn: (client: EdgeqClient) => Promise<T>): Promise<T> {
  const security = await loadBrokerClientSecurity({}, silentLogger, { watch: false });
  const client = createClient({ brokers: brokersOf(cmd), clientId: 'edgeq-cli', retry: { retriesMax: 3 }, ...security });
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

function parseConfig(pairs: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of pairs) {
    const i = p.indexOf('=');
    if (i <= 0) throw new EdgeqError('INVALID_ARGUMENT', `--config "${p}" is not key=value`);
    out[p.slice(0, i)] = p.slice(i + 1);
  }
  return out;
}

/** POST /v1/topics at a gateway (a global topic); with ifNotExists an existing one is fine. */
async function createGlobal(gateway: string, body: Record<string, unknown>, ifNotExists: boolean): Promise<void> {
  try {
    await gatewayCall(gateway, 'POST', '/v1/topics', body);
  } catch (err) {
    if (ifNotExists && err instanceof EdgeqError && err.code === 'TOPIC_ALREADY_EXISTS') return;
    throw err;
  }
}

function positiveInt(name: string, text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new EdgeqError('INVALID_ARGUMENT', `${name} must be a positive integer, got "${text}"`);
  return n;
}

/** Registers `edgeq topics`. */
export function registerTopicsCommands(program: Command): void {
  addBrokersOption(program);
  const topics = program.command('topics').description('create, delete, list and describe topics');

  topics
    .command('create')
    .description('create a topic')
    .argument('<name>', 'topic name')
    .option('-p, --partitions <n>', 'number of partitions', '1')
    .option('-r, --replication-factor <n>', 'replicas per partition (default: min(3, brokers in the cell), 1 on a lone broker)')
    .option('-c, --config <key=value...>', 'topic config overrides, e.g. retention.ms=60000', [])
    .option('--if-not-exists', 'succeed when the topic already exists', false)
    .option('--scope <scope>', 'local (this region only) or global (every region, through a gateway\'s mesh catalogue)', 'local')
    .option('--gateway <url>', 'gateway for --scope global (default $EDGEQ_GATEWAY or http://127.0.0.1:8080; API key from $EDGEQ_API_KEY)')
    .action(async (name: string, opts: { partitions: string; replicationFactor?: string; config: string[]; ifNotExists: boolean; scope: string; gateway?: string }, cmd: Command) => {
      if (opts.scope !== 'local' && opts.scope !== 'global') throw new EdgeqError('INVALID_ARGUMENT', `--scope must be local or global, got "${opts.scope}"`);
      if (opts.scope === 'global') {
        // A global topic is created in every region by the mesh's catalogue, which the gateways run.
        await createGlobal(gatewayOf(opts.gateway), {
          name,
          partitions: positiveInt('--partitions', opts.partitions),
          ...(opts.replicationFactor !== undefined ? { replicationFactor: positiveInt('--replication-factor', opts.replicationFactor) } : {}),
          config: parseConfig(opts.config),
          scope: 'global',
        }, opts.ifNotExists);
        print({ created: name, scope: 'global' });
        return;
      }
      await withClient(cmd, async (client) => {
        await client.admin().createTopics(
          [
            {
              name,
              partitions: positiveInt('--partitions', opts.partitions),
              ...(opts.replicationFactor !== undefined ? { replicationFactor: positiveInt('--replication-factor', opts.replicationFactor) } : {}),
              config: parseConfig(opts.config),
            },
          ],
          { ifNotExists: opts.ifNotExists },
        );
        print({ created: name });
      });
    });

  topics
    .command('delete')
    .description('delete topics')
    .argument('<names...>', 'topic names')
    .option('--if-exists', 'succeed when a topic does not exist', false)
    .action(async (names: string[], opts: { ifExists: boolean }, cmd: Command) => {
      await withClient(cmd, async (client) => {
        await client.admin().deleteTopics(names, { ifExists: opts.ifExists });
        print({ deleted: names });
      });
    });

  topics
    .command('list')
    .description('list topic names')
    .option('--internal', 'include internal topics', false)
    .action(async (opts: { internal: boolean }, cmd: Command) => {
      await withClient(cmd, async (client) => {
        for (const name of await client.admin().listTopics({ includeInternal: opts.internal })) print(name);
      });
    });

  topics
    .command('describe')
    .description('print partitions, leaders and configuration of topics (JSON, one line each)')
    .argument('<names...>', 'topic names')
    .action(async (names: string[], _opts: unknown, cmd: Command) => {
      await withClient(cmd, async (client) => {
        for (const t of await client.admin().describeTopics(names)) print(t);
      });
    });
}
