// Proves that no batch acknowledged under the `sync` policy is lost when the appending process is
// SIGKILLed at random moments, that offsets stay contiguous, and that recovery cuts a torn or
// corrupted tail back to the last valid batch, with real processes and real files.
import { afterAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { readdir, readFile, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { FsStorage, PartitionLog, splitBatches, validateBatch, readBatchHeader } from '../../src/log/index.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';
import { randInt, seededRandom, testSeed } from '../helpers/random.ts';

afterAll(cleanupTempDirs);

const HELPER = new URL('../helpers/log-appender.ts', import.meta.url).pathname;
const ROUNDS = 20;

interface Ack {
  base: number;
  last: number;
  crc: number;
}

/** Starts the appender and kills it with SIGKILL after `killAfterAcks` acknowledgements. */
async function runAndKill(dir: string, seed: number, killAfterAcks: number, extraDelayMs: number): Promise<Ack[]> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', HELPER, '--dir', dir, '--seed', String(seed)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const acks: Ack[] = [];
  const lines = createInterface({ input: child.stdout! });
  const closed = new Promise<void>((resolve) => lines.once('close', resolve));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let killed = false;
  lines.on('line', (line) => {
    const msg = JSON.parse(line) as Partial<Ack> & { ready?: boolean; done?: boolean };
    if (msg.base !== undefined) acks.push(msg as Ack);
    if (!killed && (acks.length >= killAfterAcks || msg.done)) {
      killed = true;
      setTimeout(() => child.kill('SIGKILL'), extraDelayMs);
    }
  });
  const code = await exited;
  // Lines written before the kill still count: they were acknowledged.
  await closed;
  expect(killed, `appender exited by itself with code ${code}`).toBe(true);
  return acks;
}

/** Reads every batch of the log through the log's own read path. */
async function readBatches(log: PartitionLog): Promise<Buffer[]> {
  const out: Buffer[] = [];
  let offset = log.logStartOffset;
  while (offset < log.logEndOffset) {
    const r = await log.read(offset, 1 << 20);
    out.push(...splitBatches(r.bytes));
    offset = r.nextOffset;
  }
  return out;
}

/** Batch positions in the last segment file, straight from the bytes. */
async function lastSegmentBatches(dir: string): Promise<{ path: string; batches: { pos: number; base: number; size: number }[] }> {
  const logs = (await readdir(dir)).filter((n) => n.endsWith('.log')).sort();
  const path = join(dir, logs[logs.length - 1]!);
  const bytes = await readFile(path);
  const batches: { pos: number; base: number; size: number }[] = [];
  let pos = 0;
  for (const b of splitBatches(bytes)) {
    batches.push({ pos, base: readBatchHeader(b).baseOffset, size: b.length });
    pos += b.length;
  }
  return { path, batches };
}

async function crashRounds(torn: boolean): Promise<void> {
  const seed = testSeed(torn ? 'log-crash-torn' : 'log-crash');
  const rand = seededRandom(seed);
  const dir = await tempDir('edgeq-crash-');
  const expected = new Map<number, Ack>();
  let totalAcked = 0;
  let damaged = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const roundStart = await (async () => {
      const log = await PartitionLog.open(dir, {}, { storage: new FsStorage() });
      const end = log.logEndOffset;
      await log.close();
      return end;
    })();
    const acks = await runAndKill(dir, randInt(rand, 1, 1e9), randInt(rand, 5, 150), randInt(rand, 0, 15));
    totalAcked += acks.length;
    for (const a of acks) expected.set(a.base, a);

    if (torn) {
      // Damage a batch written in this round in the active segment, as a torn write would.
      const { path, batches } = await lastSegmentBatches(dir);
      const candidates = batches.filter((b) => b.base >= roundStart);
      if (candidates.length > 0) {
        const victim = candidates[randInt(rand, 0, candidates.length - 1)]!;
        const kind = randInt(rand, 0, 2);
        if (kind === 0) {
          await truncate(path, victim.pos + randInt(rand, 1, victim.size - 1));
        } else if (kind === 1) {
          const bytes = await readFile(path);
          const at = victim.pos + randInt(rand, 17, victim.size - 1);
          bytes[at] = bytes[at]! ^ (1 << randInt(rand, 0, 7));
          await writeFile(path, bytes);
        } else {
          const bytes = await readFile(path);
          await writeFile(path, Buffer.concat([bytes.subarray(0, victim.pos), Buffer.alloc(randInt(rand, 1, 200), 0)]));
        }
        damaged++;
        for (const base of [...expected.keys()]) if (base >= victim.base) expected.delete(base);
        const log = await PartitionLog.open(dir, {}, { storage: new FsStorage() });
        expect(log.logEndOffset, `round ${round}: log ends at the damaged batch`).toBe(victim.base);
        await log.close();
      }
    }

    const log = await PartitionLog.open(dir, {}, { storage: new FsStorage() });
    const batches = await readBatches(log);
    let next = log.logStartOffset;
    const byBase = new Map<number, Buffer>();
    for (const b of batches) {
      const h = await validateBatch(b, { messageBytesMax: 1 << 20 });
      expect(h.baseOffset, `round ${round}: offsets contiguous`).toBe(next);
      next = h.baseOffset + h.recordCount;
      byBase.set(h.baseOffset, b);
    }
    expect(next).toBe(log.logEndOffset);
    for (const a of expected.values()) {
      const b = byBase.get(a.base);
      expect(b, `round ${round}: acknowledged batch at ${a.base} present`).toBeDefined();
      const h = readBatchHeader(b!);
      expect(h.crc).toBe(a.crc);
      expect(h.baseOffset + h.lastOffsetDelta).toBe(a.last);
    }
    // Nothing beyond the last valid batch: every segment holds exactly its batches.
    const logs = (await readdir(dir)).filter((n) => n.endsWith('.log'));
    let fileBytes = 0;
    for (const n of logs) fileBytes += (await stat(join(dir, n))).size;
    expect(fileBytes).toBe(batches.reduce((s, b) => s + b.length, 0));
    await log.close();
  }
  expect(totalAcked).toBeGreaterThan(ROUNDS * 5);
  if (torn) expect(damaged).toBeGreaterThan(ROUNDS / 2);
}

describe('crash recovery with real processes', () => {
  it(`keeps every acknowledged batch across ${ROUNDS} SIGKILLs`, async () => {
    await crashRounds(false);
  }, 180_000);

  it(`cuts torn and corrupted tails back to the last valid batch across ${ROUNDS} SIGKILLs`, async () => {
    await crashRounds(true);
  }, 180_000);
});
