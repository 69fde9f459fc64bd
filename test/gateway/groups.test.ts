// Proves consumer groups over HTTP: two members split a topic's partitions and together read every record once, a commit makes the next member continue after the committed offsets, an idle member expires and its partitions go to the other member, and unknown members, bad bodies and members past membersMax are refused as problem+json.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/cell.ts';
import type { EdgeqClient } from '../../src/client/index.ts';
import { createGatewayApp, type GatewayApp } from '../../src/gateway/index.ts';
import { GatewayOnCell } from './gateway-on-cell.ts';

const MEMBER_IDLE_MS = 1_500;

let gw: GatewayOnCell;
let client: EdgeqClient;
let app: GatewayApp;

interface GroupRecord {
  topic: string;
  partition: number;
  offset: number;
  key: string | null;
  value: string;
}

beforeAll(async () => {
  gw = await GatewayOnCell.start({
    limits: { memberIdleMsMax: MEMBER_IDLE_MS },
    topics: [
      { name: 'gw-g-split', partitions: 4 },
      { name: 'gw-g-commit', partitions: 1 },
      { name: 'gw-g-expire', partitions: 2 },
    ],
  });
  ({ client, app } = gw);
}, 30_000);

afterAll(async () => gw?.close());

function postJson(path: string, body: unknown): Promise<Response> {
  return Promise.resolve(app.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }));
}

async function join(group: string, topics: string[], fromBeginning = true): Promise<string> {
  const res = await postJson(`/v1/groups/${group}/members`, { topics, fromBeginning });
  expect(res.status).toBe(201);
  const { memberId } = (await res.json()) as { memberId: string };
  expect(typeof memberId).toBe('string');
  return memberId;
}

async function poll(group: string, id: string, o: { maxRecords?: number; waitMs?: number } = {}): Promise<GroupRecord[]> {
  const res = await app.request(`/v1/groups/${group}/members/${id}/records?maxRecords=${o.maxRecords ?? 100}&waitMs=${o.waitMs ?? 300}`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { records: GroupRecord[] }).records;
}

async function produce(topic: string, perPartition: number, partitions: number, tag: string): Promise<void> {
  const records = [];
  for (let p = 0; p < partitions; p++) for (let i = 0; i < perPartition; i++) records.push({ key: `${tag}-${p}-${i}`, value: `${tag}-${p}-${i}`, partition: p });
  expect((await postJson(`/v1/topics/${topic}/records?acks=all`, { records })).status).toBe(200);
}

const idOf = (r: GroupRecord) => `${r.topic}/${r.partition}/${r.offset}`;

describe('consumer groups over HTTP', () => {
  it('two members split the partitions and together read everything once', async () => {
    const group = 'g-split';
    const a = await join(group, ['gw-g-split']);
    const b = await join(group, ['gw-g-split']);
    // Both poll until the group settled (nothing to read yet), then records arrive.
    for (let i = 0; i < 8; i++) await Promise.all([poll(group, a), poll(group, b)]);
    await produce('gw-g-split', 5, 4, 'split');
    const got = { a: [] as GroupRecord[], b: [] as GroupRecord[] };
    await eventually(async () => {
      const [ra, rb] = await Promise.all([poll(group, a), poll(group, b)]);
      got.a.push(...ra);
      got.b.push(...rb);
      return got.a.length + got.b.length >= 20;
    }, 20_000, 'all 20 records');
    const all = [...got.a, ...got.b];
    expect(new Set(all.map(idOf)).size).toBe(20);
    expect(all.map((r) => r.value).sort()).toEqual([0, 1, 2, 3].flatMap((p) => [0, 1, 2, 3, 4].map((i) => `split-${p}-${i}`)).sort());
    const pa = new Set(got.a.map((r) => r.partition));
    const pb = new Set(got.b.map((r) => r.partition));
    expect(pa.size).toBeGreaterThan(0);
    expect(pb.size).toBeGreaterThan(0);
    expect([...pa].filter((p) => pb.has(p))).toEqual([]);
    // Records of one partition come in offset order.
    for (const list of [got.a, got.b]) {
      for (const p of [0, 1, 2, 3]) {
        const offsets = list.filter((r) => r.partition === p).map((r) => r.offset);
        expect(offsets).toEqual([...offsets].sort((x, y) => x - y));
      }
    }
    expect((await app.request(`/v1/groups/${group}/members/${a}`, { method: 'DELETE' })).status).toBe(204);
    expect((await app.request(`/v1/groups/${group}/members/${b}`, { method: 'DELETE' })).status).toBe(204);
  }, 40_000);

  it('a new member continues after what was committed (polled, then explicit offsets)', async () => {
    const group = 'g-commit';
    await produce('gw-g-commit', 10, 1, 'c');
    const a = await join(group, ['gw-g-commit']);
    const firstA: GroupRecord[] = [];
    await eventually(async () => {
      firstA.push(...(await poll(group, a, { maxRecords: 4 })));
      return firstA.length > 0;
    }, 15_000, 'first records');
    const polledUpTo = firstA[firstA.length - 1]!.offset + 1;
    expect((await app.request(`/v1/groups/${group}/members/${a}/commit`, { method: 'POST' })).status).toBe(204);
    expect((await app.request(`/v1/groups/${group}/members/${a}`, { method: 'DELETE' })).status).toBe(204);

    const b = await join(group, ['gw-g-commit']);
    const firstB: GroupRecord[] = [];
    await eventually(async () => {
      firstB.push(...(await poll(group, b, { maxRecords: 100 })));
      return firstB.length > 0;
    }, 15_000, 'records after the commit');
    expect(firstB[0]!.offset).toBe(polledUpTo);
    const explicit = await postJson(`/v1/groups/${group}/members/${b}/commit`, { offsets: [{ topic: 'gw-g-commit', partition: 0, offset: 2 }] });
    expect(explicit.status).toBe(204);
    expect((await app.request(`/v1/groups/${group}/members/${b}`, { method: 'DELETE' })).status).toBe(204);

    const c = await join(group, ['gw-g-commit']);
    const firstC: GroupRecord[] = [];
    await eventually(async () => {
      firstC.push(...(await poll(group, c)));
      return firstC.length > 0;
    }, 15_000, 'records after the explicit commit');
    expect(firstC[0]!.offset).toBe(2);
    expect(firstC[0]!.value).toBe('c-0-2');
    expect((await app.request(`/v1/groups/${group}/members/${c}`, { method: 'DELETE' })).status).toBe(204);
  }, 60_000);

  it('expires a member that stops polling and gives its partitions to the other member', async () => {
    const group = 'g-expire';
    const a = await join(group, ['gw-g-expire']);
    const b = await join(group, ['gw-g-expire']);
    for (let i = 0; i < 4; i++) await Promise.all([poll(group, a), poll(group, b)]);
    await produce('gw-g-expire', 5, 2, 'e');
    // Only b polls from now on; a expires after MEMBER_IDLE_MS, and b ends up reading both partitions.
    const got: GroupRecord[] = [];
    await eventually(async () => {
      got.push(...(await poll(group, b)));
      return new Set(got.map((r) => r.partition)).size === 2 && new Set(got.map((r) => r.value)).size === 10;
    }, 30_000, 'b reads both partitions');
    const gone = await app.request(`/v1/groups/${group}/members/${a}/records`);
    expect(gone.status).toBe(404);
    expect(gone.headers.get('content-type')).toContain('application/problem+json');
    expect((await app.request(`/v1/groups/${group}/members/${b}`, { method: 'DELETE' })).status).toBe(204);
  }, 45_000);

  it('refuses unknown members (404), bad bodies (400), unknown topics (404) and members past membersMax (429)', async () => {
    for (const [method, path] of [['GET', '/v1/groups/g-x/members/nope/records'], ['POST', '/v1/groups/g-x/members/nope/commit'], ['DELETE', '/v1/groups/g-x/members/nope']] as const) {
      const res = await app.request(path, { method });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(await res.json()).toMatchObject({ code: 'NOT_FOUND' });
    }
    for (const body of [{}, { topics: [] }, { topics: [1] }, { topics: ['gw-g-split'], fromBeginning: 'yes' }]) {
      const res = await postJson('/v1/groups/g-x/members', body);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    const unknown = await postJson('/v1/groups/g-x/members', { topics: ['no-such-topic'] });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ code: 'UNKNOWN_TOPIC_OR_PARTITION' });

    const small = createGatewayApp({ client, limits: { membersMax: 1 } });
    try {
      const first = await small.request('/v1/groups/g-small/members', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ topics: ['gw-g-split'] }) });
      expect(first.status).toBe(201);
      const { memberId } = (await first.json()) as { memberId: string };
      const badCommit = await small.request(`/v1/groups/g-small/members/${memberId}/commit`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ offsets: [{ topic: 'gw-g-split', partition: -1, offset: 0 }] }) });
      expect(badCommit.status).toBe(400);
      const second = await small.request('/v1/groups/g-small/members', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ topics: ['gw-g-split'] }) });
      expect(second.status).toBe(429);
      expect(second.headers.get('retry-after')).toBe('5');
      expect(await second.json()).toMatchObject({ code: 'THROTTLED' });
      // The member's own group path is part of its identity.
      expect((await small.request(`/v1/groups/other/members/${memberId}/records`)).status).toBe(404);
    } finally {
      await small.close();
    }
  }, 20_000);
});
