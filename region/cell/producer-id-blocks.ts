/**
 * The cell's producer-id state in the arbiter, behind the broker's one allocator (ProducerIds in
 * src/broker/producer-ids.ts): id blocks are taken by compare-and-set on `producer-ids` (the next
 * free id), so no two brokers of the cell hand out the same id, and each bumped epoch is a key
 * `producer-epochs/<id>` changed by compare-and-set on its revision, so two brokers bumping the
 * same producer cannot both win. Epochs other brokers bumped reach `knownEpoch` through the
 * controller's watch.
 */
import { EdgeqError } from '../../src/core/index.ts';
import type { ProducerIdStore } from '../../src/broker/index.ts';
import type { Arbiter } from '../arbiter/index.ts';
import type { CellKeys } from './cell-keys.ts';

/**
 * Compare-and-set attempts to take one block before giving up: each loses only to another
 * broker's block taken meanwhile, and blocks are taken once per 1000 producers.
 */
export const PRODUCER_ID_RESERVE_ATTEMPTS_MAX = 20;

/** Producer-id state of a cell. */
export class ArbiterProducerIdStore implements ProducerIdStore {
  /**
   * Latest epoch per bumped producer id, as the watch and our own bumps say. It mirrors keys of
   * the arbiter, so it is bounded by the arbiter's key limit.
   */
  private readonly epochs = new Map<number, number>();

  constructor(
    private readonly arbiter: Arbiter,
    private readonly keys: CellKeys,
  ) {}

  /** Takes in an epoch seen through the watch (never lowers one already known). */
  observe(producerId: number, epoch: number): void {
    if (epoch > (this.epochs.get(producerId) ?? -1)) this.epochs.set(producerId, epoch);
  }

  async reserveIds(count: number): Promise<number> {
    for (let attempt = 0; attempt < PRODUCER_ID_RESERVE_ATTEMPTS_MAX; attempt++) {
      const cur = await this.arbiter.get(this.keys.producerIds);
      const next = cur ? (JSON.parse(cur.value.toString('utf8')) as { next: number }).next : 0;
      const r = await this.arbiter.compareAndSet(this.keys.producerIds, Buffer.from(JSON.stringify({ next: next + count })), { expectedModRevision: cur?.modRevision ?? 0 });
      if (r.ok) return next;
    }
    throw new EdgeqError('CAS_FAILED', `could not reserve producer ids: lost ${PRODUCER_ID_RESERVE_ATTEMPTS_MAX} compare-and-sets in a row`);
  }

  async reservedEnd(): Promise<number> {
    const cur = await this.arbiter.get(this.keys.producerIds);
    return cur ? (JSON.parse(cur.value.toString('utf8')) as { next: number }).next : 0;
  }

  async readEpoch(producerId: number): Promise<{ epoch: number; version: number }> {
    const cur = await this.arbiter.get(this.keys.producerEpoch(producerId));
    return { epoch: cur ? (JSON.parse(cur.value.toString('utf8')) as { epoch: number }).epoch : 0, version: cur?.modRevision ?? 0 };
  }

  async writeEpoch(producerId: number, epoch: number, version: number): Promise<boolean> {
    const r = await this.arbiter.compareAndSet(this.keys.producerEpoch(producerId), Buffer.from(JSON.stringify({ epoch })), { expectedModRevision: version });
    if (r.ok) this.observe(producerId, epoch);
    return r.ok;
  }

  knownEpoch(producerId: number): number | undefined {
    return this.epochs.get(producerId);
  }
}
