// Proves a group member is usable from the moment its join answers (issue 11, finding 12): a commit of explicit offsets sent before the first poll, while the group is still forming its first generation, is accepted, and the member then polls every record of the topic and commits again promptly; over HTTP and through the client consumer underneath it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EdgeqClient } from '../../src/client/index.ts';
import type { GatewayApp } from '../../src/gateway/index.ts';
import { eventually } from '../../src/testing/index.ts';
import { GatewayOnCell } from './gateway-on-cell.ts';

const TOPIC = 'gw-commit-first';
/**
 * The coordinator's wait after the first join into an empty group (300 ms by default), widened so
 * the test reliably sends its commit inside it, where the member has joined but holds no
 * generation yet: the window that curl's join-then-commit falls into on `npm start`.
 */
const INITIAL_REBALANCE_DELAY_MS = 2_000;
/**
 * A commit sent inside that window waits for the rest of it, then one JoinGroup, SyncGroup and
 * OffsetCommit round trip each (milliseconds on loopback; 3 s leaves room for the loaded machine).
 */
const FIRST_COMMIT_MS_MAX = INITIAL_REBALANCE_DELAY_MS + 3_000;
/** A commit of a member that holds its generation is one round trip. The wedged member's took ~9 s. */
const COMMIT_MS_MAX = 3_000;
/**
 * Polling both records once the member holds its generation: finding start positions and a fetch
 * per leader. Below the 10 s session timeout on purpose: a member that lost its identity (the
 * finding) only gets records once the orphaned member's session expires.
 */
const RECORDS_MS_MAX = 8_000;
const GROUP_SETTLE_MS_MAX = INITIAL_REBALANCE_DELAY_MS;

let gw: GatewayOnCell;
let app: GatewayApp;
let client: EdgeqClient;

beforeAll(async () => {
  gw = await GatewayOnCell.start({
    topics: [{ name: TOPIC, partitions: 2 }],
    cell: { broker: { group: { initialRebalanceDelayMs: INITIAL_REBALANCE_DELAY_MS } } },
  });
  ({ app, client } = gw);
  const produced = await postJson(`/v1/topics/${TOPIC}/records?acks=all`, { records: [{ value: 'r0', partition: 0 }, { value: 'r1', partition: 1 }] });
  expect(produced.status).toBe(200);
}, 30_000);

afterAll(async () => gw?.close());

function postJson(path: string, body: unknown): Promise<Response> {
  return Promise.resolve(app.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }));
}

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - started };
}

/** Waits for the event the race needs: the coordinator holds one member in the group's first rebalance. */
async function inFirstRebalance(group: string): Promise<void> {
  const admin = client.admin();
  try {
    await eventually(async () => {
      const [g] = await admin.describeGroups([group]).catch(() => []);
      return g?.state === 'PreparingRebalance' && g.members.length === 1;
    }, GROUP_SETTLE_MS_MAX, `group ${group} to be in its first rebalance`);
  } finally {
    await admin.close();
  }
}

const startOfEachPartition = [0, 1].map((partition) => ({ topic: TOPIC, partition, offset: 0 }));

describe('a group member that commits before its first poll', () => {
  it('over HTTP: commits, then polls every record, then commits again promptly', async () => {
    const group = 'g-commit-first-http';
    const joined = await postJson(`/v1/groups/${group}/members`, { topics: [TOPIC], fromBeginning: true });
    expect(joined.status).toBe(201);
    const { memberId } = (await joined.json()) as { memberId: string };
    const base = `/v1/groups/${group}/members/${memberId}`;
    await inFirstRebalance(group);

    const first = await timed(() => postJson(`${base}/commit`, { offsets: startOfEachPartition }));
    expect(first.value.status, await first.value.clone().text()).toBe(204);
    expect(first.ms).toBeLessThan(FIRST_COMMIT_MS_MAX);

    const values: string[] = [];
    const deadline = Date.now() + RECORDS_MS_MAX;
    while (values.length < 2 && Date.now() < deadline) {
      const res = await app.request(`${base}/records?waitMs=500`);
      expect(res.status, await res.clone().text()).toBe(200);
      values.push(...((await res.json()) as { records: { value: string }[] }).records.map((r) => r.value));
    }
    expect(values.sort()).toEqual(['r0', 'r1']);

    const second = await timed(async () => app.request(`${base}/commit`, { method: 'POST' }));
    expect(second.value.status, await second.value.clone().text()).toBe(204);
    expect(second.ms).toBeLessThan(COMMIT_MS_MAX);
    const committed = await client.admin().fetchGroupOffsets(group);
    expect(committed.map((o) => [o.partition, o.offset]).sort()).toEqual([[0, 1], [1, 1]]);
    expect((await app.request(base, { method: 'DELETE' })).status).toBe(204);
  }, 60_000);

  it('through the client consumer: commit() while the first join is under way waits for it and commits', async () => {
    const group = 'g-commit-first-client';
    const consumer = client.consumer({ groupId: group, fromBeginning: true, autoCommit: false, maxWaitMs: 200 });
    try {
      consumer.subscribe(TOPIC);
      // A poll that gives up at once starts the join, as the gateway's join route does.
      expect(await consumer.poll({ timeoutMs: 0 })).toEqual([]);
      await inFirstRebalance(group);
      const first = await timed(() => consumer.commit(startOfEachPartition));
      expect(first.ms).toBeLessThan(FIRST_COMMIT_MS_MAX);
      const values: string[] = [];
      const deadline = Date.now() + RECORDS_MS_MAX;
      while (values.length < 2 && Date.now() < deadline) values.push(...(await consumer.poll({ timeoutMs: 500 })).map((r) => r.value!.toString()));
      expect(values.sort()).toEqual(['r0', 'r1']);
      const second = await timed(() => consumer.commit());
      expect(second.ms).toBeLessThan(COMMIT_MS_MAX);
    } finally {
      await consumer.close();
    }
  }, 60_000);
});
