/**
 * `edgeq consume <topic>`: prints records of a topic, as a member of `--group` (committing what
 * it printed) or reading every partition without a group. Values print as lines, or as JSON
 * objects with `--json`. Stops after `--max-messages`, after `--idle-timeout-ms` without
 * records, or on SIGINT.
 */
import type { Command } from 'commander';
import type { ConsumerRecord } from '../../client/index.ts';
import { EdgeqError } from '../../core/index.ts';
import { addBrokersOption, withClient } from './topics.ts';

function format(r: ConsumerRecord, json: boolean): string {
  if (!json) return r.value === null ? '' : r.value.toString('utf8');
  return JSON.stringify({
    topic: r.topic,
    partition: r.partition,
    offset: r.offset,
    timestamp: r.timestamp,
    key: r.key === null ? null : r.key.toString('utf8'),
    value: r.value === null ? null : r.value.toString('utf8'),
    headers: Object.fromEntries(r.headers.map((h) => [h.key, h.value === null ? null : h.value.toString('utf8')])),
  });
}

/** Registers `edgeq consume`. */
export function registerConsumeCommand(program: Command): void {
  addBrokersOption(program);
  program
    .command('consume')
    .description('print records of a topic')
    .argument('<topic>', 'topic name')
    .option('-g, --group <id>', 'consume as a member of this group (commits offsets)')
    .option('--from-beginning', 'start at the earliest offset when nothing was committed', false)
    .option('-n, --max-messages <n>', 'exit after this many records')
    .option('--idle-timeout-ms <ms>', 'exit after this long without records')
    .option('--json', 'print records as JSON objects', false)
    .action(
      async (
        topic: string,
        opts: { group?: string; fromBeginning: boolean; maxMessages?: string; idleTimeoutMs?: string; json: boolean },
        cmd: Command,
      ) => {
        const max = opts.maxMessages === undefined ? Infinity : Number(opts.maxMessages);
        if (!(max === Infinity || (Number.isInteger(max) && max > 0))) throw new EdgeqError('INVALID_ARGUMENT', '--max-messages must be a positive integer');
        const idleMs = opts.idleTimeoutMs === undefined ? Infinity : Number(opts.idleTimeoutMs);
        if (!(idleMs === Infinity || (Number.isFinite(idleMs) && idleMs > 0))) throw new EdgeqError('INVALID_ARGUMENT', '--idle-timeout-ms must be positive');
        await withClient(cmd, async (client) => {
          const consumer = client.consumer({ fromBeginning: opts.fromBeginning, ...(opts.group ? { groupId: opts.group } : {}) });
          let stop = false;
          const onSigint = () => (stop = true);
          process.once('SIGINT', onSigint);
          try {
            if (opts.group) consumer.subscribe(topic);
            else {
              const [t] = await client.admin().describeTopics([topic]);
              consumer.assign(t!.partitions.map((p) => ({ topic, partition: p.partition })));
            }
            let printed = 0;
            let lastRecordAt = Date.now();
            while (!stop && printed < max) {
              const records = await consumer.poll({ maxRecords: Math.min(500, max - printed), timeoutMs: 500 });
              for (const r of records) process.stdout.write(`${format(r, opts.json)}\n`);
              printed += records.length;
              if (records.length > 0) lastRecordAt = Date.now();
              else if (Date.now() - lastRecordAt >= idleMs) break;
            }
            if (opts.group) await consumer.commit();
          } finally {
            process.off('SIGINT', onSigint);
            await consumer.close();
          }
        });
      },
    );
}
