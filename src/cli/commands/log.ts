/**
 * `edgeq log …`: tools for a partition log folder on disk (inspect, verify, append). They open
 * the log the way the broker does, so `verify` also runs crash recovery.
 */
import type { Command } from 'commander';
import { FsStorage, PartitionLog, decodeBatch, splitBatches, validateBatch, buildBatch, readBatchHeader } from '../../log/index.ts';
import { createLogger } from '../../core/logger.ts';

function print(line: unknown): void {
  process.stdout.write(`${typeof line === 'string' ? line : JSON.stringify(line)}\n`);
}

export function registerLogCommands(program: Command): void {
  const log = program.command('log').description('inspect and verify a partition log folder');

  log
    .command('dump')
    .description('print every batch (and with --records every record) of a log')
    .argument('<dir>', 'partition log folder')
    .option('--from <offset>', 'first offset', '0')
    .option('--records', 'decode and print records too', false)
    .action(async (dir: string, opts: { from: string; records: boolean }) => {
      const l = await PartitionLog.open(dir, {}, { storage: new FsStorage(), logger: createLogger({ level: 'warn' }) });
      try {
        let offset = Math.max(Number(opts.from), l.logStartOffset);
        while (offset < l.logEndOffset) {
          const r = await l.read(offset, 1 << 20);
          for (const b of splitBatches(r.bytes)) {
            const { header, records } = await decodeBatch(b);
            print({ ...header, codec: header.codec });
            if (opts.records) {
              for (const rec of records) print({ offset: rec.offset, timestamp: rec.timestamp, key: rec.key?.toString() ?? null, value: rec.value?.toString() ?? null });
            }
          }
          offset = r.nextOffset;
        }
      } finally {
        await l.close();
      }
    });

  log
    .command('verify')
    .description('open the log (running recovery), then check the CRC and framing of every batch')
    .argument('<dir>', 'partition log folder')
    .action(async (dir: string) => {
      const l = await PartitionLog.open(dir, {}, { storage: new FsStorage(), logger: createLogger({ level: 'info' }) });
      let batches = 0;
      let records = 0;
      try {
        let offset = l.logStartOffset;
        while (offset < l.logEndOffset) {
          const r = await l.read(offset, 1 << 20);
          for (const b of splitBatches(r.bytes)) {
            const h = await validateBatch(b, { messageBytesMax: 2 ** 31 - 1 });
            batches++;
            records += h.recordCount;
          }
          offset = r.nextOffset;
        }
        print({ ok: true, batches, records, logStartOffset: l.logStartOffset, logEndOffset: l.logEndOffset, segments: l.segmentCount });
      } finally {
        await l.close();
      }
    });

  log
    .command('append')
    .description('append one batch of records given as arguments')
    .argument('<dir>', 'partition log folder')
    .argument('<values...>', 'record values')
    .option('--key <key>', 'record key')
    .action(async (dir: string, values: string[], opts: { key?: string }) => {
      const l = await PartitionLog.open(dir, { flushPolicy: 'sync' }, { storage: new FsStorage() });
      try {
        const batch = await buildBatch(values.map((v) => ({ key: opts.key ?? null, value: v })));
        const r = await l.append(batch);
        print({ baseOffset: r.baseOffset, lastOffset: r.lastOffset, crc: readBatchHeader(batch).crc });
      } finally {
        await l.close();
      }
    });
}
