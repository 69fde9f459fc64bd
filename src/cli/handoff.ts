/**
 * Hands a broker's leaderships to the other members of each partition's ISR before the broker
 * stops (a Kubernetes preStop, a rolling restart): Kafka's controlled shutdown, done through the
 * arbiter. For every partition the broker leads, one transaction writes the state the cell's
 * resign already uses (docs/cell.md, Elections): no leader, the same epoch, the ISR without the
 * broker, compared on the partition key's revision and the topic's creation, so it changes
 * nothing if the state moved meanwhile. Every broker's watch sees it: the old leader becomes a
 * follower at once (it stops taking writes), and the first live ISR member elects itself in the
 * next epoch without waiting for any lease to run out. The old leader, now a follower outside the
 * ISR, fetches and is taken back into it once caught up.
 *
 * A partition whose ISR has no other live member is left alone (handing it off would leave it
 * without a leader): it is reported, and the broker's clean stop then leaves it as today. Records
 * acknowledged with acks=all are on every ISR member, the new leader included; acks=1 records the
 * followers had not fetched yet can be lost, as in any leader change.
 */
import { EdgeqError, type Clock, type Logger } from '../core/index.ts';
import type { Arbiter, KeyValue } from '../../region/arbiter/index.ts';
import { CellKeys } from '../../region/cell/index.ts';

/** How long `handOffLeaderships` waits for new leaders by default: elections start at once, so seconds. */
export const HANDOFF_WAIT_MS_DEFAULT = 30_000;
/** Poll interval while waiting for the new leaders (a read of the cell's partition keys). */
export const HANDOFF_POLL_MS = 100;
/** Transaction attempts per partition when its state moves under us (an ISR change racing). */
export const HANDOFF_ATTEMPTS_MAX = 5;

interface PartitionState {
  leader: number;
  leaderEpoch: number;
  isr: number[];
  replicas: number[];
}

/** What a handoff did. */
export interface HandoffReport {
  brokerId: number;
  /** Partitions this broker led, as `topic/partition`. */
  led: string[];
  /** Handed off, with the leader that took over (-1 if none had by the deadline). */
  handedOff: { partition: string; newLeader: number; epoch: number }[];
  /** Left alone, with why. */
  kept: { partition: string; reason: string }[];
  /** True when every handed-off partition has a new leader. */
  complete: boolean;
  elapsedMs: number;
}

interface TopicEntry {
  name: string;
  createRevision: number;
  partitions: number;
  leaderEpoch: number;
  assignments: number[][];
}

/** The cell's topics, live brokers and partition states, read now. */
async function readCell(arbiter: Arbiter, keys: CellKeys) {
  const [topicKvs, brokerKvs, stateKvs] = await Promise.all([arbiter.getPrefix(`${keys.root}topics/`), arbiter.getPrefix(`${keys.root}brokers/`), arbiter.getPrefix(`${keys.root}partitions/`)]);
  const topics: TopicEntry[] = topicKvs.map((kv) => {
    const rec = JSON.parse(kv.value.toString('utf8')) as { name: string; partitions: number; leaderEpoch: number; assignments?: number[][] };
    return { name: rec.name, createRevision: kv.createRevision, partitions: rec.partitions, leaderEpoch: rec.leaderEpoch, assignments: rec.assignments ?? [] };
  });
  const live = new Set(brokerKvs.map((kv) => Number(kv.key.slice(`${keys.root}brokers/`.length))));
  const stored = new Map<string, KeyValue>(stateKvs.map((kv) => [kv.key, kv]));
  return { topics, live, stored };
}

/** A partition's state as the cell's view has it (region/cell/cell-view.ts): its key, or the topic's initial state. */
function stateOf(t: TopicEntry, p: number, stored: Map<string, KeyValue>, keys: CellKeys): { state: PartitionState; modRevision: number } {
  const kv = stored.get(keys.partition(t.name, p));
  if (kv && kv.modRevision > t.createRevision) return { state: JSON.parse(kv.value.toString('utf8')) as PartitionState, modRevision: kv.modRevision };
  const replicas = t.assignments[p] ?? [];
  return { state: { leader: replicas[0] ?? -1, leaderEpoch: t.leaderEpoch, isr: [...replicas], replicas: [...replicas] }, modRevision: kv?.modRevision ?? 0 };
}

/** Hands broker `brokerId`'s leaderships in cell `cellId` to other ISR members and waits (up to `waitMs`) for them to take over. */
export async function handOffLeaderships(o: { arbiter: Arbiter; cellId: string; brokerId: number; waitMs?: number; clock: Clock; logger: Logger }): Promise<HandoffReport> {
  const started = o.clock.monotonicMs();
  const keys = new CellKeys(o.cellId);
  const led = new Set<string>();
  const kept = new Map<string, string>();
  const handed = new Map<string, { topic: string; partition: number; epoch: number }>();
  for (let attempt = 0; attempt < HANDOFF_ATTEMPTS_MAX; attempt++) {
    const { topics, live, stored } = await readCell(o.arbiter, keys);
    if (attempt === 0 && !live.has(o.brokerId)) throw new EdgeqError('INVALID_ARGUMENT', `broker ${o.brokerId} is not a live member of cell ${o.cellId}`, { details: { brokerId: o.brokerId, cellId: o.cellId } });
    let raced = false;
    for (const t of topics) {
      for (let p = 0; p < t.partitions; p++) {
        const name = `${t.name}/${p}`;
        const { state, modRevision } = stateOf(t, p, stored, keys);
        if (state.leader !== o.brokerId || handed.has(name)) continue;
        led.add(name);
        const others = state.isr.filter((id) => id !== o.brokerId && live.has(id));
        if (others.length === 0) {
          kept.set(name, 'no other live ISR member');
          continue;
        }
        const next: PartitionState = { ...state, leader: -1, isr: others };
        const r = await o.arbiter.txn({
          compares: [
            { key: keys.partition(t.name, p), target: 'mod', revision: modRevision },
            { key: keys.topic(t.name), target: 'create', revision: t.createRevision },
          ],
          ops: [{ type: 'put', key: keys.partition(t.name, p), value: Buffer.from(JSON.stringify(next)) }],
        });
        if (r.ok) {
          kept.delete(name);
          handed.set(name, { topic: t.name, partition: p, epoch: state.leaderEpoch });
          o.logger.info({ topic: t.name, partition: p, epoch: state.leaderEpoch, isr: others }, 'handed leadership to the other ISR members');
        } else {
          raced = true;
        }
      }
    }
    if (!raced) break;
  }
  // Wait for the others to elect (the first live ISR member does so at once).
  const newLeaders = new Map<string, { leader: number; epoch: number }>();
  const waitMs = o.waitMs ?? HANDOFF_WAIT_MS_DEFAULT;
  while (newLeaders.size < handed.size && o.clock.monotonicMs() - started < waitMs) {
    const { topics, stored } = await readCell(o.arbiter, keys);
    for (const [name, h] of handed) {
      const t = topics.find((x) => x.name === h.topic);
      if (!t) {
        newLeaders.set(name, { leader: -1, epoch: h.epoch }); // deleted meanwhile: nothing left to lead
        continue;
      }
      const { state } = stateOf(t, h.partition, stored, keys);
      if (state.leader >= 0 && state.leader !== o.brokerId) newLeaders.set(name, { leader: state.leader, epoch: state.leaderEpoch });
    }
    if (newLeaders.size < handed.size) await new Promise<void>((resolve) => o.clock.setTimeout(resolve, HANDOFF_POLL_MS));
  }
  const handedOff = [...handed.keys()].map((partition) => ({ partition, newLeader: newLeaders.get(partition)?.leader ?? -1, epoch: newLeaders.get(partition)?.epoch ?? handed.get(partition)!.epoch }));
  return {
    brokerId: o.brokerId,
    led: [...led].sort(),
    handedOff,
    kept: [...kept].map(([partition, reason]) => ({ partition, reason })),
    complete: newLeaders.size === handed.size,
    elapsedMs: Math.round(o.clock.monotonicMs() - started),
  };
}
