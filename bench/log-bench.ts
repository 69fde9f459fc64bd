/**
 * Segment-log benchmark (`npm run bench:log`): append throughput for 100 B and 1 KiB records in
 * batches of 1, 100 and 1000, under the `interval` and `sync` flush policies, with 1, 16 and 64
 * concurrent appenders; read throughput; and, as the peer measured in the same run, the disk's raw
 * sequential write bandwidth (the same kind of bytes written with one fdatasync at the end).
 *
 * Every row is bounded by time and by bytes, and the whole run stays within 5 minutes. Results go
 * to bench/results/log.json.
 */
import { mkdir, mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildBatch, FsStorage, PartitionLog, type FlushPolicy } from '../src/log/index.ts';

const { values: args } = parseArgs({
  options: {
    dir: { type: 'string' },
    'row-ms': { type: 'string', default: '2500' },
    'row-bytes-max': { type: 'string', default: String(384 * 1024 * 1024) },
    out: { type: 'string', default: new URL('./results/log.json', import.meta.url).pathname },
  },
});
const ROW_MS = Number(args['row-ms']);
const ROW_BYTES_MAX = Number(args['row-bytes-max']);
const RECORD_BYTES = [100, 1024];
const BATCH_RECORDS = [1, 100, 1000];
const MODES: FlushPolicy[] = ['interval', 'sync'];
const APPENDERS = [1, 16, 64];
const MB = 1024 * 1024;

interface Row {
  mode: FlushPolicy;
  recordBytes: number;
  batchRecords: number;
  appenders: number;
  recordsPerSec: number;
  mbPerSec: number;
  batches: number;
  seconds: number;
}

interface ReadRow {
  recordBytes: number;
  batchRecords: number;
  recordsPerSec: number;
  mbPerSec: number;
}

const root = args.dir ?? (await mkdtemp(join(tmpdir(), 'edgeq-bench-log-')));
await mkdir(root, { recursive: true });

/** Raw sequential write: `bytes` in 1 MiB writes, one fdatasync at the end. */
async function rawDiskMBps(bytes: number): Promise<number> {
  const path = join(root, 'raw.bin');
  const chunk = Buffer.alloc(MB, 0x5a);
  const fh = await open(path, 'w');
  const t0 = performance.now();
  for (let written = 0; written < bytes; written += chunk.length) await fh.write(chunk, 0, chunk.length, written);
  await fh.datasync();
  const seconds = (performance.now() - t0) / 1000;
  await fh.close();
  await rm(path);
  return bytes / MB / seconds;
}

async function makeBatch(recordBytes: number, batchRecords: number, salt: number): Promise<Buffer> {
  const value = Buffer.alloc(recordBytes, 97 + (salt % 26));
  return buildBatch(Array.from({ length: batchRecords }, () => ({ value })));
}

async function appendRow(mode: FlushPolicy, recordBytes: number, batchRecords: number, appenders: number, keep: boolean): Promise<{ row: Row; dir: string }> {
  const dir = join(root, `${mode}-${recordBytes}-${batchRecords}-${appenders}`);
  const log = await PartitionLog.open(dir, { flushPolicy: mode, messageBytesMax: 8 * MB }, { storage: new FsStorage() });
  // One buffer per appender: the log writes the base offset into a batch, so a buffer is reused
  // only after its previous append has been answered.
  const buffers = await Promise.all(Array.from({ length: appenders }, (_, i) => makeBatch(recordBytes, batchRecords, i)));
  const batchBytes = buffers[0]!.length;
  let batches = 0;
  let bytes = 0;
  const t0 = performance.now();
  const deadline = t0 + ROW_MS;
  await Promise.all(
    buffers.map(async (buf) => {
      while (performance.now() < deadline && bytes < ROW_BYTES_MAX) {
        bytes += batchBytes;
        await log.append(buf);
        batches++;
      }
    }),
  );
  await log.flush(); // count the final sync in both modes, as the raw peer does
  const seconds = (performance.now() - t0) / 1000;
  await log.close();
  if (!keep) await rm(dir, { recursive: true, force: true });
  const records = batches * batchRecords;
  return {
    dir,
    row: {
      mode,
      recordBytes,
      batchRecords,
      appenders,
      recordsPerSec: Math.round(records / seconds),
      mbPerSec: Number(((batches * batchBytes) / MB / seconds).toFixed(1)),
      batches,
      seconds: Number(seconds.toFixed(2)),
    },
  };
}

async function readRow(dir: string, recordBytes: number, batchRecords: number): Promise<ReadRow> {
  const log = await PartitionLog.open(dir, {}, { storage: new FsStorage() });
  let offset = log.logStartOffset;
  let bytes = 0;
  const t0 = performance.now();
  while (offset < log.logEndOffset) {
    const r = await log.read(offset, MB);
    bytes += r.bytes.length;
    offset = r.nextOffset;
  }
  const seconds = (performance.now() - t0) / 1000;
  const records = log.logEndOffset - log.logStartOffset;
  await log.close();
  await rm(dir, { recursive: true, force: true });
  return { recordBytes, batchRecords, recordsPerSec: Math.round(records / seconds), mbPerSec: Number((bytes / MB / seconds).toFixed(1)) };
}

const started = performance.now();
const rawRuns = [await rawDiskMBps(256 * MB), await rawDiskMBps(256 * MB)];
const diskMBps = Number(Math.max(...rawRuns).toFixed(1));
console.log(`raw sequential write with one fdatasync: ${rawRuns.map((r) => r.toFixed(0)).join(', ')} MB/s (using ${diskMBps})`);

const rows: Row[] = [];
const reads: ReadRow[] = [];
for (const mode of MODES) {
  for (const recordBytes of RECORD_BYTES) {
    for (const batchRecords of BATCH_RECORDS) {
      for (const appenders of APPENDERS) {
        const keep = mode === 'interval' && appenders === 1;
        const { row, dir } = await appendRow(mode, recordBytes, batchRecords, appenders, keep);
        rows.push(row);
        console.log(
          `${mode.padEnd(8)} ${String(recordBytes).padStart(5)} B x ${String(batchRecords).padStart(4)}/batch, ${String(appenders).padStart(2)} appenders: ` +
            `${row.recordsPerSec.toLocaleString('en-US').padStart(11)} rec/s ${String(row.mbPerSec).padStart(7)} MB/s`,
        );
        if (keep) reads.push(await readRow(dir, recordBytes, batchRecords));
      }
    }
  }
}

const find = (mode: FlushPolicy, recordBytes: number, batchRecords: number, appenders: number) =>
  rows.find((r) => r.mode === mode && r.recordBytes === recordBytes && r.batchRecords === batchRecords && r.appenders === appenders)!;
const intervalBest = Math.max(...APPENDERS.map((a) => find('interval', 1024, 1000, a).mbPerSec));
const syncRatio = find('sync', 1024, 1, 64).recordsPerSec / find('sync', 1024, 1, 1).recordsPerSec;
const targets = {
  intervalOfRawPercent: Number(((intervalBest / diskMBps) * 100).toFixed(1)),
  intervalOfRawTargetPercent: 70,
  intervalMet: intervalBest >= 0.7 * diskMBps,
  syncGroupCommitSpeedup: Number(syncRatio.toFixed(1)),
  syncGroupCommitTarget: 10,
  syncMet: syncRatio >= 10,
};

console.log('\nread (interval logs, 1 appender, 1 MiB reads):');
for (const r of reads) console.log(`  ${r.recordBytes} B x ${r.batchRecords}/batch: ${r.recordsPerSec.toLocaleString('en-US')} rec/s, ${r.mbPerSec} MB/s`);
console.log(`\ninterval, 1 KiB x 1000: ${intervalBest} MB/s = ${targets.intervalOfRawPercent}% of raw ${diskMBps} MB/s (target 70%): ${targets.intervalMet ? 'met' : 'NOT met'}`);
console.log(`sync, 1 KiB x 1, 64 vs 1 appenders: ${targets.syncGroupCommitSpeedup}x (target 10x): ${targets.syncMet ? 'met' : 'NOT met'}`);

const result = {
  benchmark: 'log',
  date: new Date().toISOString(),
  machine: { cpus: (await import('node:os')).cpus().length, node: process.version },
  rowMs: ROW_MS,
  diskMBps,
  rawRunsMBps: rawRuns.map((r) => Number(r.toFixed(1))),
  rows,
  reads,
  targets,
  totalSeconds: Number(((performance.now() - started) / 1000).toFixed(1)),
};
await mkdir(new URL('./results/', import.meta.url).pathname, { recursive: true });
await writeFile(args.out!, `${JSON.stringify(result, null, 2)}\n`);
console.log(`\nwrote ${args.out} in ${result.totalSeconds} s`);
if (!args.dir) await rm(root, { recursive: true, force: true });
