/**
 * Hands out producer ids and epochs (InitProducerId). Ids are reserved in blocks written to disk
 * before use, so an id is never handed out twice, even across crashes; a restart skips the rest
 * of the block it was in. Epoch bumps are persisted, so an instance fenced before a restart stays
 * fenced after it.
 */
import { join } from 'node:path';
import { EdgeqError } from '../core/index.ts';
import type { Storage } from '../log/index.ts';

export const PRODUCER_IDS_FILE = 'producer-ids.json';
/** Ids reserved per disk write: one write per 1000 producers started. */
const ID_BLOCK = 1000;
/** Largest epoch (int16 in the batch header); the next bump gets a new id instead. */
const EPOCH_MAX = 32767;

interface IdsFile {
  nextBlockStart: number;
  /** Producer id → latest epoch, for ids whose epoch was bumped. */
  epochs: Record<string, number>;
}

/** Limits of the allocator. */
export interface ProducerIdsOptions {
  /** Bumped epochs remembered; the oldest is forgotten first (its producer gets a new id). */
  epochsMax?: number;
}

/** The broker's producer-id allocator. */
export class ProducerIds {
  private next: number;
  private blockEnd: number;
  private readonly epochs: Map<number, number>;
  private chain: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly storage: Storage,
    private readonly path: string,
    file: IdsFile,
    private readonly epochsMax: number,
  ) {
    this.next = file.nextBlockStart;
    this.blockEnd = file.nextBlockStart;
    this.epochs = new Map(Object.entries(file.epochs).map(([k, v]) => [Number(k), v]));
  }

  static async open(storage: Storage, dataDir: string, options: ProducerIdsOptions = {}): Promise<ProducerIds> {
    const path = join(dataDir, PRODUCER_IDS_FILE);
    let file: IdsFile = { nextBlockStart: 0, epochs: {} };
    if (await storage.exists(path)) {
      try {
        file = JSON.parse((await storage.readFile(path)).toString('utf8')) as IdsFile;
      } catch (err) {
        throw new EdgeqError('CORRUPT_LOG', `${path} is not valid JSON`, { cause: err });
      }
    }
    return new ProducerIds(storage, path, file, options.epochsMax ?? 100_000);
  }

  /** The latest epoch handed out for `producerId`, when it was ever bumped. */
  currentEpoch(producerId: number): number | undefined {
    return this.epochs.get(producerId);
  }

  /**
   * A new producer (`producerId` -1) gets a fresh id at epoch 0. A producer passing the id and
   * epoch it holds gets the next epoch, which fences older instances of the same id.
   */
  init(producerId: number, producerEpoch: number): Promise<{ producerId: number; producerEpoch: number }> {
    const run = this.chain.then(() => this.initNow(producerId, producerEpoch));
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async initNow(producerId: number, producerEpoch: number): Promise<{ producerId: number; producerEpoch: number }> {
    if (producerId < 0) return { producerId: await this.allocate(), producerEpoch: 0 };
    if (!Number.isSafeInteger(producerId) || producerId >= this.blockEnd) {
      throw new EdgeqError('UNKNOWN_PRODUCER_ID', `producer id ${producerId} was never handed out by this broker`, {
        details: { producerId },
      });
    }
    const current = this.epochs.get(producerId) ?? 0;
    if (producerEpoch !== current) {
      throw new EdgeqError('INVALID_PRODUCER_EPOCH', `producer ${producerId} epoch ${producerEpoch} is not the current epoch ${current}`, {
        details: { producerId, producerEpoch, currentEpoch: current },
      });
    }
    if (current >= EPOCH_MAX) return { producerId: await this.allocate(), producerEpoch: 0 };
    this.epochs.delete(producerId);
    this.epochs.set(producerId, current + 1);
    while (this.epochs.size > this.epochsMax) this.epochs.delete(this.epochs.keys().next().value as number);
    await this.save(this.blockEnd);
    return { producerId, producerEpoch: current + 1 };
  }

  private async allocate(): Promise<number> {
    if (this.next >= this.blockEnd) {
      await this.save(this.blockEnd + ID_BLOCK);
      this.blockEnd += ID_BLOCK;
    }
    return this.next++;
  }

  private async save(nextBlockStart: number): Promise<void> {
    const file: IdsFile = { nextBlockStart, epochs: Object.fromEntries(this.epochs) };
    await this.storage.writeFileAtomic(this.path, Buffer.from(JSON.stringify(file)));
  }
}
