// Proves the file pool bounds open handles, never closes a handle in use, shares one open among
// concurrent borrowers, and retires a handle only after its last borrower returns it.
import { describe, expect, it } from 'vitest';
import { FilePool } from './file-pool.ts';
import { MemoryStorage } from './memory-storage.ts';

async function setup(files: number, max: number) {
  const storage = new MemoryStorage();
  await storage.mkdir('/d');
  for (let i = 0; i < files; i++) await storage.writeFileAtomic(`/d/f${i}`, Buffer.from(`file ${i}`));
  return { storage, pool: new FilePool(storage, max) };
}

describe('FilePool', () => {
  it('keeps idle handles within the bound, least recently used out first', async () => {
    const { storage, pool } = await setup(10, 3);
    for (let i = 0; i < 10; i++) (await pool.acquire(`/d/f${i}`)).release();
    await new Promise((r) => setImmediate(r));
    expect(storage.openHandles).toBe(3);
    expect(pool.stats()).toMatchObject({ open: 3, opened: 10, evicted: 7 });
    // f9 is still open: borrowing it again opens nothing.
    (await pool.acquire('/d/f9')).release();
    expect(pool.stats().opened).toBe(10);
  });

  it('never closes a handle in use, even over the bound', async () => {
    const { storage, pool } = await setup(5, 2);
    const leases = await Promise.all([0, 1, 2, 3].map((i) => pool.acquire(`/d/f${i}`)));
    expect(storage.openHandles).toBe(4);
    const buf = Buffer.alloc(6);
    await leases[0]!.file.read(buf, 0, 6, 0);
    expect(buf.toString()).toBe('file 0');
    for (const l of leases) l.release();
    expect(pool.stats().open).toBe(2);
    await new Promise((r) => setImmediate(r)); // closes complete asynchronously
    expect(storage.openHandles).toBe(2);
  });

  it('shares one open among concurrent borrowers', async () => {
    const { pool } = await setup(1, 4);
    const [a, b] = await Promise.all([pool.acquire('/d/f0'), pool.acquire('/d/f0')]);
    expect(a!.file).toBe(b!.file);
    expect(pool.stats().opened).toBe(1);
    a!.release();
    b!.release();
  });

  it('retires a handle after its last borrower is done', async () => {
    const { storage, pool } = await setup(1, 4);
    const lease = await pool.acquire('/d/f0');
    let retired = false;
    const p = pool.retire('/d/f0').then(() => (retired = true));
    await new Promise((r) => setImmediate(r));
    expect(retired).toBe(false);
    lease.release();
    await p;
    expect(storage.openHandles).toBe(0);
  });

  it('propagates open failures without leaking a slot', async () => {
    const { pool } = await setup(0, 2);
    await expect(pool.acquire('/d/missing')).rejects.toMatchObject({ code: 'ENOENT' });
    expect(pool.stats().open).toBe(0);
  });
});
