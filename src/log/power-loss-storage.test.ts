// Proves the power-loss storage byte by byte against a model: seeded sequences of creates,
// writes, truncates, syncs, folder syncs, atomic writes, renames, unlinks, restarts and power
// losses (with and without torn writes) leave every file exactly as the model says, in memory
// and on disk, in one process and across a "process" that is abandoned as a SIGKILL would.
import { afterAll, describe, expect, it } from 'vitest';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { seededRandom } from '../core/random.ts';
import { FAULT_STORAGE_ENV, faultStorageKind, storageFromEnv } from './fault-storage.ts';
import { FsStorage } from './fs-storage.ts';
import { MemoryStorage } from './memory-storage.ts';
import { POWER_LOSS_DIR } from './power-loss-journal.ts';
import { applyPowerLoss, type PowerLossReport } from './power-loss-rewind.ts';
import { PowerLossStorage } from './power-loss-storage.ts';
import type { Storage, StorageFile } from './storage.ts';
import { cleanupTempDirs, randInt, tempDir, testSeed } from '../testing/index.ts';

afterAll(cleanupTempDirs);

/** How one setup cuts the power and restarts the process. */
interface Setup {
  name: string;
  /** The data folder (the power-loss root) and the storage under it. */
  make(): Promise<{ root: string; inner: Storage }>;
  /** A fresh power-loss storage over `inner`. */
  open(inner: Storage, root: string): PowerLossStorage;
  /** Cuts the power; returns the storage of the next boot and what the power loss did. */
  powerLoss(s: PowerLossStorage, inner: Storage, root: string, tear: boolean, seed: number): Promise<{ s: PowerLossStorage; report: PowerLossReport }>;
  /** True when a restart without a power loss keeps the journals (they are on disk). */
  restarts: boolean;
  /** True when the power is cut with `crash()`, which kills the old storage. */
  inProcess: boolean;
}

const inProcess = async (s: PowerLossStorage, tear: boolean, seed: number) => {
  const after = await s.crash({ tear, seed });
  return { s: after, report: after.lastPowerLoss! };
};

const SETUPS: Setup[] = [
  {
    name: 'journals in memory, over the in-memory storage',
    make: async () => ({ root: '/data', inner: new MemoryStorage() }),
    open: (inner) => new PowerLossStorage(inner),
    powerLoss: (s, _i, _r, tear, seed) => inProcess(s, tear, seed),
    restarts: false,
    inProcess: true,
  },
  {
    name: 'journals on the in-memory storage',
    make: async () => ({ root: '/data', inner: new MemoryStorage() }),
    open: (inner, root) => new PowerLossStorage(inner, { root }),
    powerLoss: (s, _i, _r, tear, seed) => inProcess(s, tear, seed),
    restarts: true,
    inProcess: true,
  },
  {
    name: 'journals on the real file system, power cut in process',
    make: async () => ({ root: await tempDir('edgeq-pl-'), inner: new FsStorage() }),
    open: (inner, root) => new PowerLossStorage(inner, { root }),
    powerLoss: (s, _i, _r, tear, seed) => inProcess(s, tear, seed),
    restarts: true,
    inProcess: true,
  },
  {
    name: 'journals on the real file system, process abandoned and applyPowerLoss run',
    make: async () => ({ root: await tempDir('edgeq-pl-'), inner: new FsStorage() }),
    open: (inner, root) => new PowerLossStorage(inner, { root }),
    powerLoss: async (_s, inner, root, tear, seed) => {
      const report = await applyPowerLoss(root, { tear, seed, storage: inner });
      return { s: new PowerLossStorage(inner, { root }), report };
    },
    restarts: true,
    inProcess: false,
  },
];

interface ModelFile {
  /** What the file holds now. */
  current: Buffer;
  /** What it held at its last datasync. */
  durable: Buffer;
  /** Its folder was synced since it was created. */
  entryDurable: boolean;
  /** The first write since the last datasync. */
  first: { position: number; bytes: Buffer } | null;
  handle: StorageFile | null;
}

function put(target: Buffer, bytes: Buffer, position: number): Buffer {
  const out = Buffer.alloc(Math.max(target.length, position + bytes.length));
  target.copy(out);
  bytes.copy(out, position);
  return out;
}

function resize(target: Buffer, length: number): Buffer {
  const out = Buffer.alloc(length);
  target.copy(out, 0, 0, Math.min(length, target.length));
  return out;
}

const OPS = 400;

describe.each(SETUPS)('power-loss storage ($name)', (setup) => {
  it.each([false, true])('matches the model byte by byte over seeded sequences (tear %s)', async (tearing) => {
    const seed = testSeed(`power-loss ${setup.name} tear=${tearing}`);
    const rand = seededRandom(seed);
    const { root, inner } = await setup.make();
    await inner.mkdir(root);
    const dirs = [join(root, 'a'), join(root, 'b')];
    for (const d of dirs) await inner.mkdir(d);
    let s = setup.open(inner, root);
    let boot = await s.bootId();
    const files = new Map<string, ModelFile>();
    const names = dirs.flatMap((d) => Array.from({ length: 4 }, (_, i) => join(d, `f${i}`)));
    const atomics = dirs.map((d) => join(d, 'atomic'));
    const pick = <T>(xs: readonly T[]): T | undefined => (xs.length === 0 ? undefined : xs[randInt(rand, 0, xs.length - 1)]);
    const bytes = (n: number): Buffer => Buffer.from(Array.from({ length: n }, () => randInt(rand, 0, 255)));
    const closeAll = async (): Promise<void> => {
      for (const f of files.values()) {
        await f.handle?.close();
        f.handle = null;
      }
    };
    const handleOf = async (path: string): Promise<StorageFile> => {
      const f = files.get(path)!;
      f.handle ??= await s.open(path);
      return f.handle;
    };
    const check = async (label: string): Promise<void> => {
      for (const [path, f] of files) expect(await s.readFile(path), `${label}: ${path}`).toEqual(f.current);
      for (const d of dirs) {
        const want = [...files.keys()].filter((p) => p.startsWith(`${d}/`)).map((p) => p.slice(d.length + 1)).sort();
        expect((await s.readdir(d)).sort(), `${label}: files of ${d}`).toEqual(want);
      }
      expect(await s.readdir(root)).not.toContain(POWER_LOSS_DIR);
    };
    let crashes = 0;
    let torn = 0;
    async function powerCut(label: string, tear: boolean): Promise<void> {
      const before = s;
      const cut = await setup.powerLoss(s, inner, root, tear, randInt(rand, 1, 1e9));
      s = cut.s;
      crashes++;
      await closeAll();
      if (setup.inProcess) await expect(before.exists(root)).rejects.toMatchObject({ code: 'EIO' });
      for (const [path, f] of [...files]) {
        if (!f.entryDurable) {
          expect(cut.report.vanished, `${label}: ${path} never made durable`).toContain(path);
          files.delete(path);
          continue;
        }
        let expected = f.durable;
        const tornEntry = cut.report.torn.find((t) => t.path === path);
        if (tear && f.first && f.first.bytes.length >= 2 && f.first.position <= f.durable.length) {
          expect(tornEntry, `${label}: ${path} torn`).toBeDefined();
          expect(tornEntry!.writeBytes).toBe(f.first.bytes.length);
          expect(tornEntry!.keptBytes).toBeGreaterThanOrEqual(1);
          expect(tornEntry!.keptBytes).toBeLessThan(f.first.bytes.length);
          expected = put(expected, f.first.bytes.subarray(0, tornEntry!.keptBytes), f.first.position);
          torn++;
        } else {
          expect(tornEntry, `${label}: ${path} not torn`).toBeUndefined();
        }
        f.current = expected;
        f.durable = Buffer.from(expected);
        f.entryDurable = true;
        f.first = null;
      }
      await check(`${label} after the power loss`);
      for (const [path, f] of files) expect(await inner.readFile(path), `${label}: ${path} on the inner storage`).toEqual(f.current);
      const next = await s.bootId();
      expect(next, `${label}: a power loss starts a new boot`).not.toBe(boot);
      boot = next;

    }
    for (let step = 0; step < OPS; step++) {
      const roll = rand();
      const label = `seed ${seed} step ${step}`;
      // Besides the random ones, a power cut every 50 steps, so every sequence has several.
      if (step % 50 === 49) await powerCut(label, tearing);
      const existing = [...files.keys()].filter((p) => !atomics.includes(p));
      if (roll < 0.08) {
        const path = pick(names.filter((n) => !files.has(n)));
        if (!path) continue;
        const handle = await s.open(path, { create: true });
        files.set(path, { current: Buffer.alloc(0), durable: Buffer.alloc(0), entryDurable: false, first: null, handle });
      } else if (roll < 0.45) {
        const path = pick(existing);
        if (!path) continue;
        const f = files.get(path)!;
        const h = await handleOf(path);
        const where = rand();
        const position = where < 0.7 ? f.current.length : where < 0.9 ? randInt(rand, 0, f.current.length) : f.current.length + randInt(rand, 1, 10);
        const data = bytes(randInt(rand, 1, 300));
        const cut = randInt(rand, 0, data.length);
        expect(await h.writev([data.subarray(0, cut), data.subarray(cut)], position)).toBe(data.length);
        f.current = put(f.current, data, position);
        f.first ??= { position, bytes: data };
      } else if (roll < 0.53) {
        const path = pick(existing);
        if (!path) continue;
        const f = files.get(path)!;
        const length = randInt(rand, 0, f.current.length + 20);
        await (await handleOf(path)).truncate(length);
        f.current = resize(f.current, length);
      } else if (roll < 0.65) {
        const path = pick(existing);
        if (!path) continue;
        const f = files.get(path)!;
        await (await handleOf(path)).datasync();
        f.durable = Buffer.from(f.current);
        f.first = null;
      } else if (roll < 0.71) {
        const dir = pick(dirs)!;
        await s.syncDir(dir);
        for (const [p, f] of files) if (p.startsWith(`${dir}/`)) f.entryDurable = true;
      } else if (roll < 0.76) {
        const path = pick(atomics)!;
        const data = bytes(randInt(rand, 0, 100));
        await s.writeFileAtomic(path, data);
        files.set(path, { current: data, durable: Buffer.from(data), entryDurable: true, first: null, handle: null });
      } else if (roll < 0.79) {
        const path = pick(existing);
        if (!path) continue;
        await files.get(path)!.handle?.close();
        await s.unlink(path);
        files.delete(path);
      } else if (roll < 0.82) {
        const from = pick(existing);
        const to = pick(names.filter((n) => !files.has(n)));
        if (!from || !to) continue;
        const f = files.get(from)!;
        await f.handle?.close();
        f.handle = null;
        await s.rename(from, to);
        files.delete(from);
        files.set(to, f);
      } else if (roll < 0.86) {
        await check(label);
      } else if (roll < 0.9 && setup.restarts) {
        // A SIGKILL without a power loss: the page cache (and the journals in it) survive.
        await closeAll();
        s = setup.open(inner, root);
        expect(await s.bootId(), `${label}: a restart is the same boot`).toBe(boot);
      } else if (roll < 0.93) {
        await powerCut(label, tearing && rand() < 0.7);
      }
    }
    if (tearing) {
      // One certain chance to tear: a durable file with an unsynced write.
      const path = join(dirs[0]!, 'torn');
      const handle = await s.open(path, { create: true });
      await s.syncDir(dirs[0]!);
      for (const [p, f] of files) if (p.startsWith(`${dirs[0]!}/`)) f.entryDurable = true;
      const data = bytes(200);
      await handle.writev([data], 0);
      files.set(path, { current: data, durable: Buffer.alloc(0), entryDurable: true, first: { position: 0, bytes: data }, handle });
      await powerCut('the last tear', true);
    }
    await check('end');
    // Everything synced: no journal is left, so a power loss now changes nothing.
    for (const [path] of files) if (!atomics.includes(path)) await (await handleOf(path)).datasync();
    for (const d of dirs) await s.syncDir(d);
    if (setup.restarts) {
      const journals = await inner.readdir(join(root, POWER_LOSS_DIR, 'journals')).catch(() => []);
      expect(journals).toEqual([]);
    }
    await closeAll();
    const cut = await setup.powerLoss(s, inner, root, tearing, 7);
    expect(cut.report).toEqual({ rewound: [], vanished: [], torn: [] });
    s = cut.s;
    await check('after a power loss with everything synced');
    expect(crashes).toBeGreaterThan(3);
    if (tearing) expect(torn).toBeGreaterThan(0);
  }, 60_000);
});

describe('power-loss storage, bounds and selection', () => {
  it('keeps an append-only file\'s journal small: a header and the first write, never the whole file', async () => {
    const root = await tempDir('edgeq-pl-');
    const s = new PowerLossStorage(new FsStorage(), { root });
    const f = await s.open(join(root, 'seg.log'), { create: true });
    await s.syncDir(root);
    const chunk = Buffer.alloc(4096, 7);
    for (let i = 0; i < 256; i++) await f.writev([chunk], i * chunk.length);
    const journalDir = join(root, POWER_LOSS_DIR, 'journals');
    const sizes = await Promise.all((await readdir(journalDir)).map(async (n) => (await new FsStorage().readFile(join(journalDir, n))).length));
    // 1 MiB written; the journal holds the header (~36 B), one record header (21 B) and one 4 KiB write.
    expect(sizes).toHaveLength(1);
    expect(sizes[0]).toBeLessThan(chunk.length + 200);
    await f.datasync();
    expect(await readdir(journalDir)).toEqual([]);
    await f.close();
  });

  it('refuses an overwrite past journalBytesMax, changing nothing', async () => {
    const inner = new MemoryStorage();
    await inner.mkdir('/d');
    const s = new PowerLossStorage(inner, { journalBytesMax: 100 });
    const f = await s.open('/d/x', { create: true });
    await f.writev([Buffer.alloc(500, 1)], 0);
    await f.datasync();
    await expect(f.writev([Buffer.alloc(200, 2)], 0)).rejects.toMatchObject({ code: 'STORAGE_ERROR', retriable: false });
    expect(await s.readFile('/d/x')).toEqual(Buffer.alloc(500, 1));
    expect(() => new PowerLossStorage(inner, { journalBytesMax: -1 })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });

  it('refuses to track a file outside its root', async () => {
    const inner = new MemoryStorage();
    await inner.mkdir('/elsewhere');
    const s = new PowerLossStorage(inner, { root: '/data' });
    await expect(s.open('/elsewhere/x', { create: true })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await inner.exists('/elsewhere/x')).toBe(false);
  });

  it(`is selected by ${FAULT_STORAGE_ENV}, read in one place`, () => {
    expect(faultStorageKind({})).toBe('none');
    expect(faultStorageKind({ [FAULT_STORAGE_ENV]: '' })).toBe('none');
    expect(faultStorageKind({ [FAULT_STORAGE_ENV]: 'power-loss' })).toBe('power-loss');
    expect(() => faultStorageKind({ [FAULT_STORAGE_ENV]: 'powerloss' })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG', details: { key: FAULT_STORAGE_ENV } }));
    expect(storageFromEnv('/data', {})).toBeInstanceOf(FsStorage);
    expect(storageFromEnv('/data', { [FAULT_STORAGE_ENV]: 'power-loss' })).toBeInstanceOf(PowerLossStorage);
  });
});
