/**
 * Applying a power loss: every file with a journal goes back to its state at its last fdatasync
 * (length, and the bytes overwrites replaced), a file whose folder entry was never made durable
 * vanishes, and with `tear` the first unsynced write of each file survives in part (a random
 * prefix, shorter than the write), as a write cut off by the power would.
 *
 * `applyPowerLoss` does it to a data folder after the process that wrote it through a
 * `PowerLossStorage` was SIGKILLed: the test's stand-in for pulling the plug.
 */
import { seededRandom } from '../core/random.ts';
import { FsStorage } from './fs-storage.ts';
import { DiskJournalStore, type FileJournal } from './power-loss-journal.ts';
import type { Storage, StorageFile } from './storage.ts';

/** How a power loss is simulated. */
export interface PowerLossOptions {
  /** Keep a random prefix of each file's first unsynced write (a torn write). Default false. */
  tear?: boolean;
  /** Seed of the tear's random prefixes, so a run repeats. Default 1. */
  seed?: number;
}

/** What a power loss did. */
export interface PowerLossReport {
  /** Files put back to their last synced state, sorted. */
  rewound: string[];
  /** Files created since their folder was last synced: gone. */
  vanished: string[];
  /** Files whose first unsynced write survived in part: bytes kept of the write's bytes. */
  torn: { path: string; keptBytes: number; writeBytes: number }[];
}

/**
 * Puts every file of `journals` on `storage` back to its last synced state. Files are handled in
 * path order and the tear's prefixes drawn in that order, so a seed gives the same result.
 */
export async function rewindToSynced(storage: Storage, journals: Map<string, FileJournal>, options: PowerLossOptions = {}): Promise<PowerLossReport> {
  const rand = seededRandom(options.seed ?? 1);
  const report: PowerLossReport = { rewound: [], vanished: [], torn: [] };
  for (const path of [...journals.keys()].sort()) {
    const j = journals.get(path)!;
    // A journal whose file is gone: the process died between removing the file and its journal.
    if (!(await storage.exists(path))) continue;
    if (!j.entryDurable) {
      await storage.unlink(path);
      report.vanished.push(path);
      continue;
    }
    const file = await storage.open(path);
    try {
      await file.truncate(j.syncedLength);
      // Newest first: where one region was overwritten twice, the oldest bytes (the synced ones) win.
      for (const r of j.records.filter((x) => x.kind === 'undo').reverse()) await writeAll(file, r.bytes, r.position);
      const first = j.records.find((x) => x.kind === 'first');
      if (options.tear && first && first.bytes.length >= 2 && first.position <= j.syncedLength) {
        const keptBytes = 1 + Math.floor(rand() * (first.bytes.length - 1));
        await writeAll(file, first.bytes.subarray(0, keptBytes), first.position);
        report.torn.push({ path, keptBytes, writeBytes: first.bytes.length });
      }
      // The rewound state is what the disk holds; make it so on a real disk too.
      await file.datasync();
    } finally {
      await file.close();
    }
    report.rewound.push(path);
  }
  return report;
}

/**
 * Applies a power loss to `dataDir`, which a process wrote through a `PowerLossStorage` with
 * `root: dataDir` and which no process has open any more (it was SIGKILLed): every file goes back
 * to its last synced state, the journals are cleared and the next simulated boot begins, so logs
 * opened afterwards see another boot id. `storage` is the one under the power-loss storage
 * (default: the real file system).
 */
export async function applyPowerLoss(dataDir: string, options: PowerLossOptions & { storage?: Storage } = {}): Promise<PowerLossReport> {
  const storage = options.storage ?? new FsStorage();
  const store = new DiskJournalStore(storage, dataDir);
  const report = await rewindToSynced(storage, await store.loadAll(), options);
  await store.removeAll();
  await store.newBoot();
  return report;
}

async function writeAll(file: StorageFile, bytes: Buffer, position: number): Promise<void> {
  const n = await file.writev([bytes], position);
  if (n !== bytes.length) throw Object.assign(new Error(`short write rewinding ${file.path}`), { code: 'ENOSPC' });
}
