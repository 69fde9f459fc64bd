/**
 * `edgeq quotas …`: set, delete and list tenants' quotas (docs/flow-control.md). Local quotas are
 * written to the cell over the binary protocol (AlterQuotas, any broker); a global one goes
 * through a gateway (`--gateway`), whose mesh catalogue carries it to every region, as
 * `edgeq topics create --scope global` does. Values are checked here as the gateway and the
 * broker check them (parseQuota): a bad one is refused naming the flag, and nothing is written.
 */
import type { Command } from 'commander';
import { EdgeqError } from '../../core/index.ts';
import { parseQuota, type Quota } from '../../../ratelimit/index.ts';
import { gatewayCall, gatewayOf } from './gateway-call.ts';
import { addBrokersOption, withClient } from './topics.ts';

function print(line: unknown): void {
  process.stdout.write(`${typeof line === 'string' ? line : JSON.stringify(line)}\n`);
}

/** The flag each body field comes from, so a refusal names what the user typed. */
const FLAG_OF: Record<string, string> = {
  recordsPerSec: '--records-per-sec',
  bytesPerSec: '--bytes-per-sec',
  burstRecords: '--burst-records',
  burstBytes: '--burst-bytes',
  scope: '--scope',
};

function num(text: string | undefined): number | undefined {
  // Number('') is 0 and Number('1e3') is 1000: parseQuota then refuses what is not an integer in range.
  return text === undefined ? undefined : text.trim() === '' ? Number.NaN : Number(text);
}

interface SetFlags {
  recordsPerSec?: string;
  bytesPerSec?: string;
  burstRecords?: string;
  burstBytes?: string;
  scope: string;
  gateway?: string;
}

function quotaFrom(tenant: string, topic: string, f: SetFlags): Quota {
  const body: Record<string, unknown> = { scope: f.scope };
  for (const [field, v] of [['recordsPerSec', f.recordsPerSec], ['bytesPerSec', f.bytesPerSec], ['burstRecords', f.burstRecords], ['burstBytes', f.burstBytes]] as const) {
    if (v !== undefined) body[field] = num(v);
  }
  try {
    return parseQuota(tenant, topic, body);
  } catch (err) {
    const field = err instanceof EdgeqError ? String(err.details['field'] ?? '') : '';
    if (err instanceof EdgeqError && FLAG_OF[field]) throw new EdgeqError('INVALID_ARGUMENT', `${FLAG_OF[field]}: ${err.message}`, { details: err.details });
    throw err;
  }
}

/** Registers `edgeq quotas`. */
export function registerQuotasCommands(program: Command): void {
  addBrokersOption(program);
  const quotas = program.command('quotas').description('set, delete and list tenant quotas (records/s and bytes/s)');

  quotas
    .command('set')
    .description('set or replace the quota of a tenant on a topic (`*` for either: every tenant, all topics)')
    .argument('<tenant>', 'tenant name, or *')
    .argument('<topic>', 'topic name, or * (the tenant\'s total)')
    .option('--records-per-sec <n>', 'records per second (required)')
    .option('--bytes-per-sec <n>', 'bytes per second (required)')
    .option('--burst-records <n>', 'records the bucket holds (default a tenth of a second of the rate)')
    .option('--burst-bytes <n>', 'bytes the bucket holds (default a tenth of a second of the rate)')
    .option('--scope <scope>', 'local (this region) or global (all regions together, through a gateway)', 'local')
    .option('--gateway <url>', 'gateway for --scope global (default $EDGEQ_GATEWAY or http://127.0.0.1:8080; API key from $EDGEQ_API_KEY)')
    .action(async (tenant: string, topic: string, flags: SetFlags, cmd: Command) => {
      const q = quotaFrom(tenant, topic, flags);
      if (q.scope === 'global') {
        const { tenant: _t, topic: _p, ...body } = q;
        print(await gatewayCall(gatewayOf(flags.gateway), 'PUT', `/v1/quotas/${encodeURIComponent(tenant)}/${encodeURIComponent(topic)}`, body));
        return;
      }
      await withClient(cmd, async (client) => {
        await client.admin().putQuota(q);
        print(q);
      });
    });

  quotas
    .command('delete')
    .description('delete the quota of a tenant on a topic (a global one through a gateway, so every region deletes it)')
    .argument('<tenant>', 'tenant name, or *')
    .argument('<topic>', 'topic name, or *')
    .option('--if-exists', 'succeed when there is no such quota', false)
    .option('--gateway <url>', 'gateway for a global quota (default $EDGEQ_GATEWAY or http://127.0.0.1:8080)')
    .action(async (tenant: string, topic: string, flags: { ifExists: boolean; gateway?: string }, cmd: Command) => {
      await withClient(cmd, async (client) => {
        const admin = client.admin();
        const found = (await admin.listQuotas()).find((q) => q.tenant === tenant && q.topic === topic);
        if (!found) {
          if (flags.ifExists) return print({ deleted: null });
          throw new EdgeqError('NOT_FOUND', `no quota for tenant "${tenant}" on ${topic === '*' ? 'all its topics' : `topic "${topic}"`}`, { details: { tenant, topic } });
        }
        if (found.scope === 'global') await gatewayCall(gatewayOf(flags.gateway), 'DELETE', `/v1/quotas/${encodeURIComponent(tenant)}/${encodeURIComponent(topic)}`);
        else await admin.deleteQuota(tenant, topic);
        print({ deleted: { tenant, topic, scope: found.scope } });
      });
    });

  quotas
    .command('list')
    .description('print every quota of the cell (JSON, one line each)')
    .action(async (_opts: unknown, cmd: Command) => {
      await withClient(cmd, async (client) => {
        for (const q of await client.admin().listQuotas()) print(q);
      });
    });
}
