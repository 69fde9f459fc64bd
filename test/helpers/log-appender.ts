/**
 * Child process for the crash tests: opens a partition log and appends random batches from
 * several concurrent appenders, printing one JSON line per acknowledged batch. Stops by itself
 * after `--max-appends` acknowledgements or `--max-ms` milliseconds, closing the log; with
 * `--hold` it prints `{"idle":true}` instead and waits (up to `--max-ms` more) without closing,
 * so a test can kill it while nothing is being written.
 *
 * The storage is the one `EDGEQ_FAULT_STORAGE` selects (`storageFromEnv`): the real file system,
 * or with `power-loss` the power-loss storage over it, so a test can SIGKILL this process and
 * then apply a power loss to the folder.
 */
import { parseArgs } from 'node:util';
import { buildBatch, PartitionLog, readBatchHeader, storageFromEnv, type FlushPolicy } from '../../src/log/index.ts';
import { seededRandom } from './random.ts';

const { values } = parseArgs({
  options: {
    dir: { type: 'string' },
    seed: { type: 'string', default: '1' },
    policy: { type: 'string', default: 'sync' },
    appenders: { type: 'string', default: '4' },
    'segment-bytes': { type: 'string', default: String(64 * 1024) },
    'max-appends': { type: 'string', default: '100000' },
    'max-ms': { type: 'string', default: '20000' },
    hold: { type: 'boolean', default: false },
  },
});

const rand = seededRandom(Number(values.seed));
const log = await PartitionLog.open(
  values.dir!,
  {
    flushPolicy: values.policy as FlushPolicy,
    segmentBytesMax: Number(values['segment-bytes']),
    messageBytesMax: 32 * 1024,
    indexIntervalBytes: 512,
  },
  { storage: storageFromEnv(values.dir!) },
);
process.stdout.write(`${JSON.stringify({ ready: true, logEndOffset: log.logEndOffset })}\n`);

const maxMs = Number(values['max-ms']);
const deadline = Date.now() + maxMs;
const maxAppends = Number(values['max-appends']);
let acked = 0;
let seq = 0;

async function appender(id: number): Promise<void> {
  while (acked < maxAppends && Date.now() < deadline) {
    const n = 1 + Math.floor(rand() * 20);
    const records = Array.from({ length: n }, (_, i) => ({
      key: `a${id}`,
      value: `${id}:${seq++}:${i}:${'v'.repeat(Math.floor(rand() * 300))}`,
    }));
    const batch = await buildBatch(records);
    const crc = readBatchHeader(batch).crc;
    const r = await log.append(batch);
    acked++;
    process.stdout.write(`${JSON.stringify({ base: r.baseOffset, last: r.lastOffset, crc, size: batch.length })}\n`);
  }
}

await Promise.all(Array.from({ length: Number(values.appenders) }, (_, i) => appender(i)));
if (values.hold) {
  process.stdout.write(`${JSON.stringify({ idle: true })}\n`);
  // Bounded: a test that forgets to kill us gets an exit (without a clean close) after max-ms.
  await new Promise((resolve) => setTimeout(resolve, maxMs));
  process.exit(3);
}
await log.close();
process.stdout.write(`${JSON.stringify({ done: true })}\n`);
