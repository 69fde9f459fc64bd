// Proves quotas at a lone broker over the binary protocol: AlterQuotas/DescribeQuotas with every
// op checked (bad values and names refused naming the field, all or nothing, nothing changed),
// quotas.json surviving a restart, and enforcement by client id (KIP-219): a produce over the
// quota is refused whole with QUOTA_EXCEEDED and a throttle, writes nothing, the broker reads
// nothing more from that connection for the throttle, a fetch on it reports the throttle, and
// the cell's own `__` clients are never limited.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Broker } from './index.ts';
import { buildBatch } from '../log/index.ts';
import { Acks, encodeRequest, errorOf, LATEST_TIMESTAMP, type AlterQuotaOp } from '../protocol/index.ts';
import { RawClient, cleanupTempDirs, tempDir } from '../testing/index.ts';
import { QUOTAS_FILE } from './quota-file.ts';

afterAll(cleanupTempDirs);

const brokers: Broker[] = [];
const clients: RawClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await Promise.all(brokers.splice(0).map((b) => b.close()));
});

async function start(dataDir?: string): Promise<Broker> {
  const b = await Broker.start({ dataDir: dataDir ?? (await tempDir()), port: 0 });
  brokers.push(b);
  return b;
}

/** A raw connection that introduced itself with `clientId` (empty: no ApiVersions at all). */
async function connect(b: Broker, clientId: string): Promise<RawClient> {
  const c = await RawClient.connect(b.port);
  clients.push(c);
  if (clientId !== '') await c.call('ApiVersions', { clientId });
  return c;
}

const put = (tenant: string, topic: string, values: Partial<AlterQuotaOp> = {}): AlterQuotaOp => ({ tenant, topic, recordsPerSec: 10, bytesPerSec: 1_000_000, ...values });
const batchOf = (n: number) => buildBatch(Array.from({ length: n }, (_, i) => ({ value: `v${i}` })));

async function produce(c: RawClient, topic: string, n: number) {
  const res = await c.call('Produce', { acks: Acks.ALL, timeoutMs: 5000, topics: [{ name: topic, partitions: [{ partition: 0, records: await batchOf(n) }] }] });
  return { res, p: res.topics[0]!.partitions[0]! };
}

async function highWatermark(c: RawClient, topic: string): Promise<number> {
  const r = await c.call('ListOffsets', { topics: [{ name: topic, partitions: [{ partition: 0, timestamp: LATEST_TIMESTAMP }] }] });
  return r.topics[0]!.partitions[0]!.offset;
}

describe('AlterQuotas and DescribeQuotas', () => {
  it('puts, replaces and removes quotas, says whether each existed, and keeps them in quotas.json across a restart', async () => {
    const dir = await tempDir();
    let b = await start(dir);
    let c = await connect(b, 'admin');
    expect((await c.call('DescribeQuotas', {})).quotas).toEqual([]);
    const r1 = await c.call('AlterQuotas', { ops: [put('acme', '*', { recordsPerSec: 1000 }), put('*', 'orders', { recordsPerSec: 50, burstRecords: 5, scope: 'global' })] });
    expect(r1.results.map((r) => [r.tenant, r.topic, errorOf(r.error)?.code ?? null, r.existed])).toEqual([
      ['acme', '*', null, false],
      ['*', 'orders', null, false],
    ]);
    const r2 = await c.call('AlterQuotas', { ops: [put('acme', '*', { recordsPerSec: 2000 }), { tenant: 'nobody', topic: 'x', remove: true }] });
    expect(r2.results.map((r) => [errorOf(r.error)?.code ?? null, r.existed])).toEqual([
      [null, true],
      [null, false],
    ]);
    const listed = (await c.call('DescribeQuotas', {})).quotas;
    // Sorted by (tenant, topic); bursts default to a tenth of a second of the rate.
    expect(listed).toEqual([
      { tenant: '*', topic: 'orders', recordsPerSec: 50, bytesPerSec: 1_000_000, burstRecords: 5, burstBytes: 100_000, scope: 'global' },
      { tenant: 'acme', topic: '*', recordsPerSec: 2000, bytesPerSec: 1_000_000, burstRecords: 200, burstBytes: 100_000, scope: 'local' },
    ]);
    const file = JSON.parse(await readFile(join(dir, QUOTAS_FILE), 'utf8')) as { quotas: unknown[] };
    expect(file.quotas).toHaveLength(2);

    // A restart reads quotas.json back, and enforces it.
    c.close();
    await b.close();
    brokers.splice(brokers.indexOf(b), 1);
    b = await start(dir);
    c = await connect(b, 'admin');
    expect((await c.call('DescribeQuotas', {})).quotas).toEqual(listed);
    const r3 = await c.call('AlterQuotas', { ops: [{ tenant: '*', topic: 'orders', remove: true }] });
    expect(r3.results[0]!.existed).toBe(true);
    expect((await c.call('DescribeQuotas', {})).quotas.map((q) => q.tenant)).toEqual(['acme']);
  });

  it('refuses bad input naming the field, all or nothing, and changes nothing', async () => {
    const dir = await tempDir();
    const b = await start(dir);
    const c = await connect(b, 'admin');
    await c.call('AlterQuotas', { ops: [put('acme', 'orders')] });
    const before = (await c.call('DescribeQuotas', {})).quotas;
    const fileBefore = await readFile(join(dir, QUOTAS_FILE), 'utf8');
    const cases: [string, AlterQuotaOp, string][] = [
      ['negative', put('acme', 'orders', { recordsPerSec: -5 }), 'recordsPerSec'],
      ['zero', put('acme', 'orders', { bytesPerSec: 0 }), 'bytesPerSec'],
      ['non-integer', put('acme', 'orders', { burstRecords: 2.5 }), 'burstRecords'],
      ['NaN', put('acme', 'orders', { burstBytes: Number.NaN }), 'burstBytes'],
      ['infinite', put('acme', 'orders', { recordsPerSec: Number.POSITIVE_INFINITY }), 'recordsPerSec'],
      ['absurd (> 1e12)', put('acme', 'orders', { bytesPerSec: 1e12 + 1 }), 'bytesPerSec'],
      ['missing rate', { tenant: 'acme', topic: 'orders', bytesPerSec: 10 }, 'recordsPerSec'],
      ['unknown scope', put('acme', 'orders', { scope: 'planet' }), 'scope'],
      ['invalid tenant', put('ac/me', 'orders'), 'tenant'],
      ['empty tenant', put('', 'orders'), 'tenant'],
      ['invalid topic', put('acme', 'or ders'), 'topic'],
      ['invalid tenant on a remove', { tenant: 'a b', topic: '*', remove: true }, 'tenant'],
    ];
    for (const [what, op, field] of cases) {
      // A valid op beside the bad one is not applied either.
      const res = await c.call('AlterQuotas', { ops: [put('good', '*', { recordsPerSec: 77 }), op] });
      const [good, badOne] = res.results;
      expect(errorOf(badOne!.error)?.code, what).toBe('INVALID_ARGUMENT');
      expect(badOne!.invalidField, what).toBe(field);
      expect(badOne!.error!.message, what).toContain(field);
      expect(errorOf(good!.error)?.code, what).toBe('INVALID_ARGUMENT');
      expect(good!.error!.message, what).toContain('not applied');
    }
    // Two ops on one (tenant, topic), and too many ops.
    const twice = await c.call('AlterQuotas', { ops: [put('x', '*'), put('x', '*', { recordsPerSec: 5 })] });
    expect(twice.results.map((r) => errorOf(r.error)?.code)).toEqual(['INVALID_ARGUMENT', 'INVALID_ARGUMENT']);
    const many = await c.call('AlterQuotas', { ops: Array.from({ length: 101 }, (_, i) => put(`t${i}`, '*')) });
    expect(many.results.every((r) => errorOf(r.error)?.code === 'INVALID_ARGUMENT' && r.invalidField === 'ops')).toBe(true);

    expect((await c.call('DescribeQuotas', {})).quotas).toEqual(before);
    expect(await readFile(join(dir, QUOTAS_FILE), 'utf8')).toBe(fileBefore);
  });

  it('refuses to start on a quotas.json edited into something invalid, naming the file and the field', async () => {
    const dir = await tempDir();
    const b = await start(dir);
    await b.close();
    brokers.splice(brokers.indexOf(b), 1);
    await writeFile(join(dir, QUOTAS_FILE), JSON.stringify({ version: 1, quotas: [{ tenant: 'acme', topic: '*', recordsPerSec: -1, bytesPerSec: 10, burstRecords: 1, burstBytes: 1, scope: 'local' }] }));
    await expect(Broker.start({ dataDir: dir, port: 0 })).rejects.toMatchObject({ code: 'CORRUPT_LOG', details: { field: 'recordsPerSec' } });
  });
});

describe('enforcement by client id (KIP-219)', () => {
  it('refuses a produce over the quota whole, writes nothing, mutes the connection for the throttle, then admits', async () => {
    const b = await start();
    const admin = await connect(b, 'admin');
    await admin.call('CreateTopics', { topics: [{ name: 'q', partitions: 1, replicationFactor: 1 }] });
    // 10 records/s with a burst of 10: 10 pass, the next 10 wait a whole second.
    await admin.call('AlterQuotas', { ops: [put('acme', 'q', { burstRecords: 10 })] });
    const c = await connect(b, 'acme');

    const first = await produce(c, 'q', 10);
    expect(errorOf(first.p.error)).toBeNull();
    expect(first.res.throttleMs ?? 0).toBe(0);
    expect(await highWatermark(admin, 'q')).toBe(10);

    const refused = await produce(c, 'q', 10);
    const refusedAt = performance.now();
    expect(errorOf(refused.p.error)?.code).toBe('QUOTA_EXCEEDED');
    const throttleMs = refused.res.throttleMs ?? 0;
    // 10 records at 10/s, less what refilled since the first produce.
    expect(throttleMs).toBeGreaterThan(800);
    expect(throttleMs).toBeLessThanOrEqual(1000);
    // Nothing written: the high watermark did not move.
    expect(await highWatermark(admin, 'q')).toBe(10);

    // The broker does not read the connection meanwhile: a request sent now is not even read
    // (bytesRead stands still) and is answered no earlier than the throttle.
    const stats = () => b.connectionStats().find((s) => s.clientId === 'acme')!;
    const readBefore = stats().bytesRead;
    expect(stats().muted).toBe(true);
    const id = c.send('Produce', { acks: Acks.ALL, timeoutMs: 5000, topics: [{ name: 'q', partitions: [{ partition: 0, records: await batchOf(10) }] }] });
    await new Promise((r) => setTimeout(r, throttleMs / 2));
    expect(stats().bytesRead).toBe(readBefore);
    expect(stats().muted).toBe(true);
    const f = await c.next();
    const answeredAfterMs = performance.now() - refusedAt;
    expect(f.correlationId).toBe(id);
    // The mute started when the broker wrote the refusal, just before the client read it.
    expect(answeredAfterMs).toBeGreaterThanOrEqual(throttleMs - 5);
    expect(stats().bytesRead).toBeGreaterThan(readBefore);
    // After the wait the bucket holds 10 again: admitted.
    const { decodeResponse } = await import('../protocol/index.ts');
    const late = decodeResponse('Produce', f);
    expect(errorOf(late.topics[0]!.partitions[0]!.error)).toBeNull();
    expect(late.throttleMs ?? 0).toBe(0);
    expect(await highWatermark(admin, 'q')).toBe(20);

    const metrics = await b.metrics.scrape();
    expect(metrics).toMatch(/edgeq_quota_throttled_requests_total\{tenant="acme",broker="1"\} 1/);
    expect(metrics).toMatch(/edgeq_quota_throttle_seconds_total\{tenant="acme",broker="1"\} 0\.[89]/);
  });

  it('a fetch on a throttled connection carries the remaining throttle; a refused multi-topic request takes nothing', async () => {
    const b = await start();
    const admin = await connect(b, 'admin');
    await admin.call('CreateTopics', { topics: [{ name: 'a', partitions: 1, replicationFactor: 1 }, { name: 'b', partitions: 1, replicationFactor: 1 }] });
    await admin.call('AlterQuotas', { ops: [put('acme', 'a', { burstRecords: 10 }), put('acme', 'b', { burstRecords: 10 })] });
    const c = await connect(b, 'acme');
    // b has room for 5 only; a has 10: a request of 5 to a and 10 to b is refused whole, and a's
    // bucket keeps its 10 (a request of 10 to a passes right after, on another connection).
    expect(errorOf((await produce(c, 'b', 5)).p.error)).toBeNull();
    const both = await c.call('Produce', {
      acks: Acks.ALL,
      timeoutMs: 5000,
      topics: [
        { name: 'a', partitions: [{ partition: 0, records: await batchOf(5) }] },
        { name: 'b', partitions: [{ partition: 0, records: await batchOf(10) }] },
      ],
    });
    expect(both.topics.map((t) => errorOf(t.partitions[0]!.error)?.code)).toEqual(['QUOTA_EXCEEDED', 'QUOTA_EXCEEDED']);
    expect(both.throttleMs).toBeGreaterThan(0);
    expect(await highWatermark(admin, 'a')).toBe(0);

    // A produce and a fetch pipelined in one write (on another connection of acme: c is muted)
    // are read together, before the mute: the fetch's answer carries what is left of the throttle.
    const c2 = await connect(b, 'acme');
    const produceFrame = encodeRequest('Produce', 1, 100, { acks: Acks.ALL, timeoutMs: 5000, topics: [{ name: 'b', partitions: [{ partition: 0, records: await batchOf(10) }] }] });
    const fetchFrame = encodeRequest('Fetch', 1, 101, { maxWaitMs: 0, topics: [{ name: 'b', partitions: [{ partition: 0, fetchOffset: 0, maxBytes: 1 << 16 }] }] });
    c2.write(Buffer.concat([produceFrame, fetchFrame]));
    const { decodeResponse } = await import('../protocol/index.ts');
    const pr = decodeResponse('Produce', await c2.next());
    const fr = decodeResponse('Fetch', await c2.next());
    expect(errorOf(pr.topics[0]!.partitions[0]!.error)?.code).toBe('QUOTA_EXCEEDED');
    expect(fr.throttleMs).toBeGreaterThan(0);
    expect(fr.throttleMs).toBeLessThanOrEqual(pr.throttleMs!);
    // a's bucket was given back what the refused request took: 10 pass at once.
    const other = await connect(b, 'acme');
    expect(errorOf((await produce(other, 'a', 10)).p.error)).toBeNull();
  });

  it('limits a connection without a valid client id as anonymous, and never the cell\'s own __ clients', async () => {
    const b = await start();
    const admin = await connect(b, 'admin');
    await admin.call('CreateTopics', { topics: [{ name: 't', partitions: 1, replicationFactor: 1 }] });
    await admin.call('AlterQuotas', { ops: [put('anonymous', '*', { burstRecords: 10 }), put('__gateway', '*', { burstRecords: 1 })] });
    for (const clientId of ['', 'bad id!', '*']) {
      const c = await connect(b, clientId);
      // Tenant anonymous: the three connections share one budget of 10.
      const r = await produce(c, 't', 4);
      if (clientId === '*') expect(errorOf(r.p.error)?.code).toBe('QUOTA_EXCEEDED');
      else expect(errorOf(r.p.error)).toBeNull();
    }
    // `__` is the cell's own: even a quota named after it does not apply.
    const internal = await connect(b, '__gateway');
    for (let i = 0; i < 5; i++) expect(errorOf((await produce(internal, 't', 10)).p.error)).toBeNull();
  });

  it('a request larger than the quota\'s burst passes on a full bucket and leaves it in debt: the next is throttled', async () => {
    const b = await start();
    const admin = await connect(b, 'admin');
    await admin.call('CreateTopics', { topics: [{ name: 't', partitions: 1, replicationFactor: 1 }] });
    await admin.call('AlterQuotas', { ops: [put('acme', 't', { burstRecords: 10 })] });
    const c = await connect(b, 'acme');
    const r = await produce(c, 't', 30);
    expect(errorOf(r.p.error)).toBeNull();
    expect(await highWatermark(admin, 't')).toBe(30);
    const next = await produce(c, 't', 1);
    expect(errorOf(next.p.error)?.code).toBe('QUOTA_EXCEEDED');
    expect(next.res.throttleMs).toBeGreaterThan(0);
    expect(await highWatermark(admin, 't')).toBe(30);
  });
});
