// Proves, against a real broker, that a consumer commits only records it handed out: `commit()` and `close()` in the middle of a `for await` batch, a `break`, `poll()` and auto-commit never commit a record that was fetched but not yet yielded or returned.
import { describe, expect, it } from 'vitest';
import type { Consumer } from './index.ts';
import { useBrokerAndClient } from './test-support.ts';

/** Records in each topic: all of them arrive in one fetch, so the iterator holds them as one batch. */
const RECORDS = 10;
/** Records the loop body handles before it commits, closes or breaks: well inside the batch. */
const HANDLED = 3;

const rig = useBrokerAndClient();

const fast = { sessionTimeoutMs: 3_000, heartbeatIntervalMs: 100, rebalanceTimeoutMs: 5_000, maxWaitMs: 100, fromBeginning: true };

/** A one-partition topic holding RECORDS records, offsets 0..RECORDS-1. */
async function topicWithRecords(name: string): Promise<void> {
  await rig.client.admin().createTopics([{ name, partitions: 1 }]);
  const producer = rig.client.producer({ lingerMs: 20 });
  await producer.send(name, Array.from({ length: RECORDS }, (_, i) => ({ value: `v${i}` })), { partition: 0 });
  await producer.close();
}

async function committedOffset(group: string): Promise<number | undefined> {
  const offsets = await rig.client.admin().fetchGroupOffsets(group);
  return offsets[0]?.offset;
}

/** The offset a fresh member of `group` hands out first (where a restarted application resumes). */
async function firstOffsetAfterRestart(group: string, topic: string): Promise<number> {
  const c = rig.client.consumer({ groupId: group, ...fast, autoCommit: false });
  c.subscribe(topic);
  try {
    for (let i = 0; i < 100; i++) {
      const records = await c.poll({ timeoutMs: 100 });
      if (records.length > 0) return records[0]!.offset;
    }
    throw new Error(`no record handed out to a new member of ${group}`);
  } finally {
    await c.close();
  }
}

/** Iterates `c` and runs `atHandled` inside the body of the HANDLED-th record; returns the offsets yielded. */
async function iterate(c: Consumer, atHandled: () => Promise<'break' | 'continue'>): Promise<number[]> {
  const yielded: number[] = [];
  for await (const r of c) {
    yielded.push(r.offset);
    if (yielded.length === HANDLED && (await atHandled()) === 'break') break;
    if (yielded.length >= RECORDS) break;
  }
  return yielded;
}

describe('the consumer commits only what it handed out', () => {
  it('commit() in the middle of a for-await batch commits the records yielded so far', async () => {
    await topicWithRecords('mid-commit');
    const c = rig.client.consumer({ groupId: 'mid-commit-g', ...fast, autoCommit: false });
    c.subscribe('mid-commit');
    let committedInBody: number | undefined;
    const yielded = await iterate(c, async () => {
      await c.commit();
      committedInBody = await committedOffset('mid-commit-g');
      return 'break';
    });
    expect(yielded).toEqual([0, 1, 2]);
    expect(committedInBody).toBe(HANDLED);
    await c.close();
    expect(await firstOffsetAfterRestart('mid-commit-g', 'mid-commit')).toBe(HANDLED);
  });

  it('close() in the middle of a for-await batch commits the records yielded so far, and the loop ends', async () => {
    await topicWithRecords('mid-close');
    const c = rig.client.consumer({ groupId: 'mid-close-g', ...fast });
    c.subscribe('mid-close');
    let committedAtClose: number | undefined;
    const yielded = await iterate(c, async () => {
      await c.close();
      committedAtClose = await committedOffset('mid-close-g');
      return 'continue';
    });
    expect(committedAtClose).toBe(HANDLED);
    // The loop did not go on handing out the rest of the batch after close().
    expect(yielded).toEqual([0, 1, 2]);
    expect(await firstOffsetAfterRestart('mid-close-g', 'mid-close')).toBe(HANDLED);
  });

  it('break in the middle of a batch, then close(), commits the records yielded, and the rest are handed out again', async () => {
    await topicWithRecords('mid-break');
    const c = rig.client.consumer({ groupId: 'mid-break-g', ...fast, autoCommit: false });
    c.subscribe('mid-break');
    const yielded = await iterate(c, async () => 'break');
    expect(yielded).toEqual([0, 1, 2]);
    // The records taken but not yielded went back: the next poll starts right after the last yielded.
    let next: number | undefined;
    for (let i = 0; i < 100 && next === undefined; i++) next = (await c.poll({ timeoutMs: 100, maxRecords: 1 }))[0]?.offset;
    expect(next).toBe(HANDLED);
    await c.commit();
    expect(await committedOffset('mid-break-g')).toBe(HANDLED + 1);
    await c.close();
  });

  it('a seek in the middle of a batch: the rest of the batch is not handed out, and commit() commits the seek position', async () => {
    await topicWithRecords('mid-seek');
    const c = rig.client.consumer({ groupId: 'mid-seek-g', ...fast, autoCommit: false });
    c.subscribe('mid-seek');
    const yielded: number[] = [];
    for await (const r of c) {
      yielded.push(r.offset);
      if (yielded.length === HANDLED) {
        c.seek('mid-seek', 0, 7);
        await c.commit();
        expect(await committedOffset('mid-seek-g')).toBe(7);
      }
      if (r.offset === RECORDS - 1) break;
    }
    expect(yielded).toEqual([0, 1, 2, 7, 8, 9]);
    await c.close();
  });

  it('poll() with auto-commit commits only what earlier polls returned', async () => {
    await topicWithRecords('poll-auto');
    // Interval 0: every poll auto-commits what the polls before it returned.
    const c = rig.client.consumer({ groupId: 'poll-auto-g', ...fast, autoCommitIntervalMs: 0 });
    c.subscribe('poll-auto');
    const got: number[] = [];
    for (let i = 0; i < 100 && got.length === 0; i++) got.push(...(await c.poll({ timeoutMs: 100, maxRecords: HANDLED })).map((r) => r.offset));
    expect(got).toEqual([0, 1, 2]);
    // This poll counts the first three as processed and commits them, not the seven still buffered.
    const second = await c.poll({ timeoutMs: 100, maxRecords: 1 });
    expect(second.map((r) => r.offset)).toEqual([HANDLED]);
    expect(await committedOffset('poll-auto-g')).toBe(HANDLED);
    await c.close(); // closing counts the record of the last poll as processed too
    expect(await committedOffset('poll-auto-g')).toBe(HANDLED + 1);
  });

  it('auto-commit in a for-await loop commits only records whose loop body finished', async () => {
    await topicWithRecords('iter-auto');
    const c = rig.client.consumer({ groupId: 'iter-auto-g', ...fast, autoCommitIntervalMs: 0 });
    c.subscribe('iter-auto');
    let seenInBody: number | undefined;
    const yielded = await iterate(c, async () => {
      // A rebalance here would commit through onRevoke: the same committable positions.
      seenInBody = await committedOffset('iter-auto-g');
      return 'break';
    });
    expect(yielded).toEqual([0, 1, 2]);
    expect(seenInBody === undefined || seenInBody <= HANDLED - 1).toBe(true);
    await c.close();
    expect(await committedOffset('iter-auto-g')).toBe(HANDLED);
  });
});
