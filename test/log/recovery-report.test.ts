// Proves, with real processes and real files, that the log's recovery report tells a SIGKILL on
// the same boot (page cache kept, nothing cut: no lost writes) from a power loss after unsynced
// writes (may have lost writes), and reports a torn tail it cut.
import { afterAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { applyPowerLoss, FAULT_STORAGE_ENV, FsStorage, PartitionLog, PowerLossStorage, type Storage } from '../../src/log/index.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

afterAll(cleanupTempDirs);

const HELPER = new URL('../helpers/log-appender.ts', import.meta.url).pathname;
const APPENDS = 20;

/**
 * Runs the appender (one appender, so each write is one batch) until it has `APPENDS`
 * acknowledgements and is idle, then SIGKILLs it. Returns the acknowledged end offset.
 */
async function appendThenKill(dir: string, policy: string, powerLoss: boolean): Promise<number> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', HELPER, '--dir', dir, '--policy', policy, '--appenders', '1', '--max-appends', String(APPENDS), '--hold'],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, [FAULT_STORAGE_ENV]: powerLoss ? 'power-loss' : '' } },
  );
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  let end = 0;
  let idle = false;
  for await (const line of createInterface({ input: child.stdout })) {
    const msg = JSON.parse(line) as { last?: number; idle?: boolean };
    if (msg.last !== undefined) end = msg.last + 1;
    if (msg.idle) {
      idle = true;
      child.kill('SIGKILL');
    }
  }
  const code = await exited;
  expect(idle, `appender exited by itself with code ${code}`).toBe(true);
  return end;
}

async function reopen(dir: string, storage: Storage): Promise<{ end: number; report: PartitionLog['recovery'] }> {
  const log = await PartitionLog.open(dir, {}, { storage });
  const out = { end: log.logEndOffset, report: log.recovery };
  await log.close();
  return out;
}

describe('the recovery report after a real process dies', () => {
  it('a SIGKILL on the same boot, with nothing synced since open, lost nothing', async () => {
    const dir = await tempDir('edgeq-kill-');
    const acked = await appendThenKill(dir, 'os', false);
    expect(acked).toBeGreaterThan(0);
    const { end, report } = await reopen(dir, new FsStorage());
    expect(end).toBe(acked);
    expect(report).toEqual({ cleanShutdown: false, sameBoot: true, truncatedBytes: 0, corruptSegments: [], shortOfCheckpoint: false, mayHaveLostWrites: false });
  });

  it('a SIGKILL followed by a power loss after unsynced writes may have lost them', async () => {
    const dir = await tempDir('edgeq-power-');
    const acked = await appendThenKill(dir, 'os', true);
    const cut = await applyPowerLoss(dir);
    expect(cut.rewound.length).toBeGreaterThan(0);
    const { end, report } = await reopen(dir, new PowerLossStorage(new FsStorage(), { root: dir }));
    // Under `os` nothing was synced after the open, so every acknowledged batch went.
    expect(end).toBe(0);
    expect(acked).toBeGreaterThan(0);
    expect(report).toMatchObject({ cleanShutdown: false, sameBoot: false, mayHaveLostWrites: true });
  });

  it('a power loss that tears the first unsynced write leaves a torn tail, which recovery cuts and reports', async () => {
    const dir = await tempDir('edgeq-torn-');
    await appendThenKill(dir, 'os', true);
    const cut = await applyPowerLoss(dir, { tear: true, seed: 5 });
    expect(cut.torn).toHaveLength(1);
    const { end, report } = await reopen(dir, new PowerLossStorage(new FsStorage(), { root: dir }));
    expect(end).toBe(0);
    // One appender: the first write is one batch, and a prefix shorter than it is a torn batch.
    expect(report.truncatedBytes).toBe(cut.torn[0]!.keptBytes);
    expect(report).toMatchObject({ sameBoot: false, mayHaveLostWrites: true });
  });
});
