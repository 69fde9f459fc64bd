// Proves that a broker process killed with SIGKILL loses no acknowledged record of a `sync` topic:
// after each restart every acknowledged batch is at the offset it was acknowledged at, offsets are
// contiguous, and re-sending the batches whose answer was lost (idempotent producer) writes each
// of them exactly once.
import { afterAll, describe, expect, it } from 'vitest';
import { buildBatch, decodeBatches } from '../../src/log/index.ts';
import { errorOf } from '../../src/protocol/index.ts';
import { spawnBroker, type BrokerProcess } from '../helpers/broker-process.ts';
import { RawClient } from '../helpers/raw-client.ts';
import { randInt, seededRandom, testSeed } from '../helpers/random.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

afterAll(cleanupTempDirs);

const ROUNDS = 5;
// The idempotent producer's contract: at most 5 requests in flight per partition (the broker
// remembers the last 5 batches of each producer to recognise retries).
const WINDOW = 5;

describe('broker crash', () => {
  it(`keeps every acknowledged record across ${ROUNDS} SIGKILLs`, async () => {
    const rand = seededRandom(testSeed('broker-kill'));
    const dir = await tempDir();
    let proc: BrokerProcess = await spawnBroker({ dataDir: dir });
    let c = await RawClient.connect(proc.port);
    await c.call('CreateTopics', { topics: [{ name: 'k', partitions: 1, config: { 'flush.policy': 'sync' } }] });
    const { producerId } = await c.call('InitProducerId', { producerId: -1 });
    /** offset → value for every acknowledged record. */
    const acked = new Map<number, string>();
    let seq = 0;
    let unanswered: { seq: number; value: string }[] = [];

    for (let round = 0; round < ROUNDS; round++) {
      const target = randInt(rand, 20, 200);
      let answered = 0;
      const inflight = new Map<number, { seq: number; value: string }>();
      // Pipeline WINDOW produces at a time; kill once `target` answers came back.
      const killed = (async () => {
        while (answered < target) {
          while (inflight.size < WINDOW) {
            const value = `r${round}-s${seq}`;
            const batch = await buildBatch([{ value }], { producerId, producerEpoch: 0, baseSequence: seq });
            const id = c.send('Produce', { acks: 3, timeoutMs: 10_000, topics: [{ name: 'k', partitions: [{ partition: 0, records: batch }] }] });
            inflight.set(id, { seq, value });
            seq++;
          }
          const f = await c.next();
          const sent = inflight.get(f.correlationId)!;
          inflight.delete(f.correlationId);
          const { decodeResponse } = await import('../../src/protocol/index.ts');
          const r = decodeResponse('Produce', f).topics[0]!.partitions[0]!;
          expect(errorOf(r.error)).toBeNull();
          acked.set(r.baseOffset, sent.value);
          answered++;
        }
        proc.child.kill('SIGKILL');
        await proc.exited;
      })();
      await killed;
      unanswered = [...inflight.values()].sort((a, b) => a.seq - b.seq);
      c.close();

      proc = await spawnBroker({ dataDir: dir });
      c = await RawClient.connect(proc.port);
      // Re-send what got no answer, in order: each lands exactly once (new or duplicate).
      for (const u of unanswered) {
        const batch = await buildBatch([{ value: u.value }], { producerId, producerEpoch: 0, baseSequence: u.seq });
        const r = (await c.call('Produce', { acks: 3, topics: [{ name: 'k', partitions: [{ partition: 0, records: batch }] }] })).topics[0]!.partitions[0]!;
        expect(errorOf(r.error)).toBeNull();
        acked.set(r.baseOffset, u.value);
      }
      // Read everything back.
      const seen: string[] = [];
      let offset = 0;
      for (;;) {
        const f = await c.call('Fetch', { maxWaitMs: 0, topics: [{ name: 'k', partitions: [{ partition: 0, fetchOffset: offset, maxBytes: 1 << 20 }] }] });
        const p = f.topics[0]!.partitions[0]!;
        const recs = await decodeBatches(Buffer.from(p.records), offset);
        if (recs.length === 0) break;
        for (const r of recs) {
          expect(r.offset).toBe(seen.length);
          seen.push(r.value!.toString());
        }
        offset = recs[recs.length - 1]!.offset + 1;
      }
      for (const [off, value] of acked) expect(seen[off], `offset ${off}`).toBe(value);
      // Exactly once: every sequence sent appears once, in order.
      expect(seen.length).toBe(seq);
      expect(new Set(seen).size).toBe(seen.length);
    }
    c.close();
    await proc.kill('SIGTERM');
  }, 180_000);
});
