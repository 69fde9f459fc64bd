/**
 * Hands out producer ids and epochs (InitProducerId): the one allocator of a lone broker and of a
 * cell. Ids are reserved in blocks made durable before use, so an id is never handed out twice,
 * even across crashes; a restart skips the rest of the block it was in. Epoch bumps are durable
 * and conditional on the epoch read, so an instance fenced before a restart stays fenced after it
 * and two concurrent bumps of one id cannot both win.
 *
 * Where the state lives is a `ProducerIdStore`: a file in the data folder (`FileProducerIdStore`,
 * here) for a lone broker, the arbiter for a cell (region/cell/producer-id-blocks.ts).
 */
import { join } from 'node:path';
import { EdgeqError } from '../core/index.ts';
import type { Storage } from '../log/index.ts';
import type { ProducerIdSource } from './controller.ts';

export const PRODUCER_IDS_FILE = 'producer-ids.json';
/** Ids reserved per durable write: one write per 1000 producers started. */
export const PRODUCER_ID_BLOCK_SIZE = 1000;
/** Largest epoch (int16 in the batch header); the next bump gets a new id instead. */
export const PRODUCER_EPOCH_MAX = 32767;

/** The durable state behind a ProducerIds allocator. */
export interface ProducerIdStore {
  /** Reserves the next `count` ids durably for this allocator; resolves with the first. */
  reserveIds(count: number): Promise<number>;
  /** End (exclusive) of every id reserved so far by anyone: an id at or past it was never handed out. */
  reservedEnd(): Promise<number>;
  /** The id's current epoch (0 if never bumped) and a version for the conditional write. */
  readEpoch(producerId: number): Promise<{ epoch: number; version: number }>;
  /** Writes `epoch` for the id if it is still at `version`; false when another bump got there first. */
  writeEpoch(producerId: number, epoch: number, version: number): Promise<boolean>;
  /** The latest epoch known here without a read (the produce path's fencing check). */
  knownEpoch(producerId: number): number | undefined;
}

/** The producer-id allocator. */
export class ProducerIds implements ProducerIdSource {
  private next = 0;
  private blockEnd = 0;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly store: ProducerIdStore) {}

  /** A lone broker's allocator, its state in `<dataDir>/producer-ids.json`. */
  static async open(storage: Storage, dataDir: string, options: FileProducerIdStoreOptions = {}): Promise<ProducerIds> {
    return new ProducerIds(await FileProducerIdStore.open(storage, dataDir, options));
  }

  /** The latest epoch handed out for `producerId`, when it was ever bumped. */
  currentEpoch(producerId: number): number | undefined {
    return this.store.knownEpoch(producerId);
  }

  /**
   * A new producer (`producerId` -1) gets a fresh id at epoch 0. A producer passing the id and
   * epoch it holds gets the next epoch, which fences older instances of the same id. One call at
   * a time, so a block is never reserved twice by this allocator.
   */
  init(producerId: number, producerEpoch: number): Promise<{ producerId: number; producerEpoch: number }> {
    const run = this.chain.then(() => this.initNow(producerId, producerEpoch));
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async initNow(producerId: number, producerEpoch: number): Promise<{ producerId: number; producerEpoch: number }> {
    if (producerId < 0) return { producerId: await this.allocate(), producerEpoch: 0 };
    if (!Number.isSafeInteger(producerId) || producerId >= (await this.store.reservedEnd())) {
      throw new EdgeqError('UNKNOWN_PRODUCER_ID', `producer id ${producerId} was never handed out`, { details: { producerId } });
    }
    const { epoch: current, version } = await this.store.readEpoch(producerId);
    if (producerEpoch !== current) {
      throw new EdgeqError('INVALID_PRODUCER_EPOCH', `producer ${producerId} epoch ${producerEpoch} is not the current epoch ${current}`, {
        details: { producerId, producerEpoch, currentEpoch: current },
      });
    }
    if (current >= PRODUCER_EPOCH_MAX) return { producerId: await this.allocate(), producerEpoch: 0 };
    if (!(await this.store.writeEpoch(producerId, current + 1, version))) {
      throw new EdgeqError('INVALID_PRODUCER_EPOCH', `producer ${producerId} was bumped concurrently`, { details: { producerId } });
    }
    return { producerId, producerEpoch: current + 1 };
  }

  private async allocate(): Promise<number> {
    if (this.next >= this.blockEnd) {
      const start = await this.store.reserveIds(PRODUCER_ID_BLOCK_SIZE);
      this.next = start;
      this.blockEnd = start + PRODUCER_ID_BLOCK_SIZE;
    }
    return this.next++;
  }
}

interface IdsFile {
  nextBlockStart: number;
  /** Producer id → latest epoch, for ids whose epoch was bumped. */
  epochs: Record<string, number>;
}

/** Limits of the file store. */
export interface FileProducerIdStoreOptions {
  /** Bumped epochs remembered; the oldest is forgotten first (its producer gets a new id). */
  epochsMax?: number;
}

/** Producer-id state of a lone broker: one JSON file, rewritten atomically on every change. */
export class FileProducerIdStore implements ProducerIdStore {
  private nextBlockStart: number;
  private readonly epochs: Map<number, number>;

  private constructor(
    private readonly storage: Storage,
    private readonly path: string,
    file: IdsFile,
    private readonly epochsMax: number,
  ) {
    this.nextBlockStart = file.nextBlockStart;
    this.epochs = new Map(Object.entries(file.epochs).map(([k, v]) => [Number(k), v]));
  }

  static async open(storage: Storage, dataDir: string, options: FileProducerIdStoreOptions = {}): Promise<FileProducerIdStore> {
    const path = join(dataDir, PRODUCER_IDS_FILE);
    let file: IdsFile = { nextBlockStart: 0, epochs: {} };
    if (await storage.exists(path)) {
      try {
        file = JSON.parse((await storage.readFile(path)).toString('utf8')) as IdsFile;
      } catch (err) {
        throw new EdgeqError('CORRUPT_LOG', `${path} is not valid JSON`, { cause: err });
      }
    }
    return new FileProducerIdStore(storage, path, file, options.epochsMax ?? 100_000);
  }

  async reserveIds(count: number): Promise<number> {
    const start = this.nextBlockStart;
    await this.save(start + count);
    this.nextBlockStart = start + count;
    return start;
  }

  async reservedEnd(): Promise<number> {
    return this.nextBlockStart;
  }

  /** One writer (the allocator's chain): the epoch itself is the version. */
  async readEpoch(producerId: number): Promise<{ epoch: number; version: number }> {
    const epoch = this.epochs.get(producerId) ?? 0;
    return { epoch, version: epoch };
  }

  async writeEpoch(producerId: number, epoch: number, version: number): Promise<boolean> {
    const previous = this.epochs.get(producerId);
    if ((previous ?? 0) !== version) return false;
    // Re-inserted so the map's order is recency order and the oldest is forgotten first.
    this.epochs.delete(producerId);
    this.epochs.set(producerId, epoch);
    const forgotten: [number, number][] = [];
    while (this.epochs.size > this.epochsMax) {
      const oldest = this.epochs.entries().next().value as [number, number];
      this.epochs.delete(oldest[0]);
      forgotten.push(oldest);
    }
    try {
      await this.save(this.nextBlockStart);
    } catch (err) {
      // Not durable, so not handed out: the map goes back to what the file says.
      this.epochs.delete(producerId);
      if (previous !== undefined) this.epochs.set(producerId, previous);
      for (const [id, e] of forgotten) this.epochs.set(id, e);
      throw err;
    }
    return true;
  }

  knownEpoch(producerId: number): number | undefined {
    return this.epochs.get(producerId);
  }

  private async save(nextBlockStart: number): Promise<void> {
    const file: IdsFile = { nextBlockStart, epochs: Object.fromEntries(this.epochs) };
    await this.storage.writeFileAtomic(this.path, Buffer.from(JSON.stringify(file)));
  }
}
