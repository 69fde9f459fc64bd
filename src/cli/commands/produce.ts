/**
 * `edgeq produce <topic>`: sends one record per stdin line (or the `--value` given), waiting for
 * every acknowledgement before exiting, and prints where each landed with `--print-offsets`.
 */
import { createInterface } from 'node:readline';
import type { Command } from 'commander';
import type { AcksOption, RecordMetadata } from '../../client/index.ts';
import { EdgeqError } from '../../core/index.ts';
import { COMPRESSION_NAMES, type CompressionName } from '../../log/index.ts';
import { addBrokersOption, withClient } from './topics.ts';

/** Sends awaited together from stdin before more lines are read: bounds memory on huge inputs. */
const PENDING_SENDS_MAX = 1_000;

function parseAcks(text: string): AcksOption {
  if (text === '0') return 0;
  if (text === '1') return 1;
  if (text === 'all' || text === '-1') return 'all';
  throw new EdgeqError('INVALID_ARGUMENT', `--acks must be 0, 1 or all, got "${text}"`);
}

/** Registers `edgeq produce`. */
export function registerProduceCommand(program: Command): void {
  addBrokersOption(program);
  program
    .command('produce')
    .description('send records to a topic: one per stdin line, or --value')
    .argument('<topic>', 'topic name')
    .option('--value <value>', 'send this one value instead of reading stdin')
    .option('--key <key>', 'record key (for every record)')
    .option('--partition <n>', 'send to this partition instead of partitioning by key')
    .option('--acks <acks>', '0, 1 or all', 'all')
    .option('--compression <codec>', `one of ${COMPRESSION_NAMES.join(', ')}`, 'none')
    .option('--print-offsets', 'print partition and offset of each record (JSON)', false)
    .action(
      async (
        topic: string,
        opts: { value?: string; key?: string; partition?: string; acks: string; compression: string; printOffsets: boolean },
        cmd: Command,
      ) => {
        if (!COMPRESSION_NAMES.includes(opts.compression as CompressionName)) {
          throw new EdgeqError('INVALID_ARGUMENT', `--compression must be one of ${COMPRESSION_NAMES.join(', ')}`);
        }
        const partition = opts.partition === undefined ? undefined : Number(opts.partition);
        if (partition !== undefined && !(Number.isInteger(partition) && partition >= 0)) {
          throw new EdgeqError('INVALID_ARGUMENT', `--partition must be a partition number, got "${opts.partition}"`);
        }
        await withClient(cmd, async (client) => {
          const producer = client.producer({ acks: parseAcks(opts.acks), compression: opts.compression as CompressionName });
          const report = (metas: RecordMetadata[]) => {
            if (opts.printOffsets) for (const m of metas) process.stdout.write(`${JSON.stringify(m)}\n`);
          };
          const sendOne = (value: string) =>
            producer.send(topic, { key: opts.key ?? null, value }, partition === undefined ? {} : { partition }).then(report);
          if (opts.value !== undefined) {
            await sendOne(opts.value);
          } else {
            let pending: Promise<void>[] = [];
            for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
              pending.push(sendOne(line));
              if (pending.length >= PENDING_SENDS_MAX) {
                await Promise.all(pending);
                pending = [];
              }
            }
            await Promise.all(pending);
          }
          await producer.close();
        });
      },
    );
}
