// Proves the mesh between regions with real processes: a 3-region `edgeq dev` (one broker per
// region, 25 ms one way on every emulated link): the regions find each other; a global topic
// created or deleted in one region is created or deleted in every region, and concurrent creates
// end the same way everywhere; a cut between two regions alone kills nobody (indirect probes
// through the third); a SIGKILLed gateway is suspected, then dead, then alive again with a higher
// incarnation once the supervisor restarts it; a SIGSTOPped one refutes when it resumes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, waitFor } from '../../src/testing/index.ts';
import { DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, stopAllDevs, type Ready } from '../helpers/dev-process.ts';
import { cleanupTempDirs, tempDir } from '../helpers/tmp.ts';

interface MeshMember {
  region: string;
  member: string;
  state: 'alive' | 'suspect' | 'dead' | 'left';
  incarnation: number;
  phi: number;
}
interface Mesh {
  self: { region: string; member: string; incarnation: number };
  members: MeshMember[];
  regions: { region: string; health: { cellReady: boolean } }[];
}

/** Bound for the mesh to form after the deployment is ready (joins retry every 0.5-30 s). */
const FORM_MS_MAX = 30_000;
/** Bound on a crash being known everywhere: probe 0.5 s + Lifeguard's longest suspicion 9 s + gossip, with room for a loaded machine. */
const DEAD_MS_MAX = 20_000;
/** The supervisor's wait before restarting a dead process here (the default is 200 ms). */
const RESTART_DELAY_MS = 20_000;
/** How long a cut between two regions is watched for a false death (past the 9 s longest suspicion). */
const CUT_WATCH_MS = 12_000;

let ready: Ready;
let regions: string[];

beforeAll(async () => {
  const base = await freeRange(DEV_REGIONS_PORT_SPAN);
  // A dead process is restarted after RESTART_DELAY_MS: long enough for the mesh to declare it dead first.
  const dev = startDevRegions(await tempDir('edgeq-mesh-'), base, { regions: '3', brokersPerRegion: 1, wanLatencyMs: 25, env: { EDGEQ_DEV_RESTART_DELAY_MS: String(RESTART_DELAY_MS) } });
  ready = await dev.ready;
  regions = ready.regions.map((r) => r.region);
}, 120_000);

afterAll(async () => {
  await stopAllDevs();
  await cleanupTempDirs();
});

const gatewayOf = (region: string) => ready.regions.find((r) => r.region === region)!.gateway;

async function meshOf(region: string): Promise<Mesh | undefined> {
  const res = await fetch(`${gatewayOf(region)}/v1/mesh`, { signal: AbortSignal.timeout(3000) }).catch(() => null);
  return res?.ok ? ((await res.json()) as Mesh) : undefined;
}

/** The state of `member` as each of `viewers` sees it. */
async function statesOf(member: string, viewers: string[]): Promise<(MeshMember | undefined)[]> {
  return Promise.all(viewers.map(async (v) => (await meshOf(v))?.members.find((m) => m.member === member)));
}

async function pidOf(name: string): Promise<number> {
  const res = await fetch(`${ready.control}/v1/dev/processes`);
  const { processes } = (await res.json()) as { processes: { name: string; pid: number | null }[] };
  return processes.find((p) => p.name === name)?.pid ?? 0;
}

async function setLink(from: string, to: string, body: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${ready.control}/v1/dev/links/${from}/${to}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(res.status, await res.clone().text()).toBe(200);
}

async function describeIn(region: string, topic: string): Promise<{ partitions: unknown[]; config: Record<string, string> } | undefined> {
  const res = await fetch(`${gatewayOf(region)}/v1/topics/${topic}`);
  return res.ok ? ((await res.json()) as { partitions: unknown[]; config: Record<string, string> }) : undefined;
}

describe('the mesh between three regions (real processes, emulated WAN)', () => {
  it('forms: every gateway sees three members alive and three regions with ready cells', async () => {
    const started = Date.now();
    await waitFor('every region to see the others alive, with their entries', FORM_MS_MAX, async () => {
      const views = await Promise.all(regions.map(meshOf));
      const ok = views.every((v) => v && v.members.filter((m) => m.state === 'alive').length === 3 && v.regions.length === 3 && v.regions.every((r) => r.health.cellReady));
      return ok ? true : undefined;
    }, 200);
    // eslint-disable-next-line no-console
    console.log(`[mesh] formed ${Date.now() - started} ms after the deployment was ready`);
  }, FORM_MS_MAX + 10_000);

  it('creates and deletes a global topic in every region; concurrent creates end the same way everywhere', async () => {
    const made = await fetch(`${gatewayOf(regions[0]!)}/v1/topics`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'everywhere', partitions: 3, scope: 'global', config: { 'retention.ms': '3600000' } }) });
    expect(made.status, await made.clone().text()).toBe(201);
    const createdAt = Date.now();
    await waitFor('the global topic in every region', 20_000, async () => {
      const ds = await Promise.all(regions.map((r) => describeIn(r, 'everywhere')));
      return ds.every((d) => d && d.partitions.length === 3 && d.config['scope'] === 'global' && d.config['retention.ms'] === '3600000') ? true : undefined;
    }, 200);
    const convergedMs = Date.now() - createdAt;
    expect((await fetch(`${gatewayOf(regions[1]!)}/v1/topics/everywhere`, { method: 'DELETE' })).status).toBe(204);
    const deletedAt = Date.now();
    await waitFor('the global topic gone from every region', 20_000, async () => ((await Promise.all(regions.map((r) => describeIn(r, 'everywhere')))).every((d) => d === undefined) ? true : undefined), 200);
    // eslint-disable-next-line no-console
    console.log(`[mesh] global topic in every region ${convergedMs} ms after its create answered; gone everywhere ${Date.now() - deletedAt} ms after its delete`);

    // Two regions create one name with different definitions at the same time.
    const post = (region: string, partitions: number) =>
      fetch(`${gatewayOf(region)}/v1/topics`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'contested', partitions, scope: 'global' }) });
    const [a, b] = await Promise.all([post(regions[1]!, 2), post(regions[2]!, 5)]);
    expect([a.status, b.status].sort()).toEqual([201, 409]);
    const winner = a.status === 201 ? 2 : 5;
    await waitFor('one definition of the contested topic everywhere', 20_000, async () => {
      const ds = await Promise.all(regions.map((r) => describeIn(r, 'contested')));
      return ds.every((d) => d?.partitions.length === winner) ? true : undefined;
    }, 200);
  }, 90_000);

  it('a cut between two regions alone kills nobody: indirect probes go through the third', async () => {
    const [x, y] = regions as [string, string, string];
    await setLink(x, y, { blackhole: true });
    await setLink(y, x, { blackhole: true });
    try {
      const until = Date.now() + CUT_WATCH_MS;
      while (Date.now() < until) {
        for (const viewer of regions) {
          const v = await meshOf(viewer);
          const dead = v?.members.filter((m) => m.state === 'dead' || m.state === 'left').map((m) => m.member) ?? [];
          expect(dead, `dead members as ${viewer} sees them during the ${x}-${y} cut`).toEqual([]);
        }
        await sleep(250);
      }
    } finally {
      await setLink(x, y, { blackhole: false });
      await setLink(y, x, { blackhole: false });
    }
  }, CUT_WATCH_MS + 20_000);

  it('a SIGKILLed gateway is suspected then dead everywhere, and alive again with a higher incarnation after its restart', async () => {
    const victim = regions[2]!;
    const others = regions.filter((r) => r !== victim);
    const member = (await meshOf(victim))!.self.member;
    const before = (await statesOf(member, others))[0]!.incarnation;
    const pid = await pidOf(`${victim}/gateway`);
    const killedAt = Date.now();
    process.kill(pid, 'SIGKILL');
    let suspectedMs = -1;
    await waitFor(`${victim} dead in every other region`, DEAD_MS_MAX, async () => {
      const seen = await statesOf(member, others);
      if (suspectedMs < 0 && seen.some((m) => m?.state === 'suspect' || m?.state === 'dead')) suspectedMs = Date.now() - killedAt;
      return seen.every((m) => m?.state === 'dead') ? true : undefined;
    }, 100);
    const deadMs = Date.now() - killedAt;
    // eslint-disable-next-line no-console
    console.log(`[mesh] SIGKILL of ${victim}'s gateway: suspected after ${suspectedMs} ms, dead everywhere after ${deadMs} ms`);
    await waitFor(`${victim} alive again everywhere`, 60_000, async () => {
      const seen = await statesOf(member, others);
      return seen.every((m) => m?.state === 'alive' && m.incarnation > before) ? true : undefined;
    }, 200);
    expect(await pidOf(`${victim}/gateway`)).not.toBe(pid);
  }, DEAD_MS_MAX + 80_000);

  it('a SIGSTOPped gateway, resumed after the others declared it dead, refutes and ends alive', async () => {
    const victim = regions[1]!;
    const others = regions.filter((r) => r !== victim);
    const member = (await meshOf(victim))!.self.member;
    const pid = await pidOf(`${victim}/gateway`);
    process.kill(pid, 'SIGSTOP');
    try {
      await waitFor(`${victim} dead in the other regions`, DEAD_MS_MAX, async () => ((await statesOf(member, others)).every((m) => m?.state === 'dead') ? true : undefined), 100);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    const dead = (await statesOf(member, others))[0]!.incarnation;
    await waitFor(`${victim} alive again everywhere`, 30_000, async () => ((await statesOf(member, others)).every((m) => m?.state === 'alive' && m.incarnation > dead) ? true : undefined), 200);
    // The same process, not a restart: it refuted.
    expect(await pidOf(`${victim}/gateway`)).toBe(pid);
  }, DEAD_MS_MAX + 60_000);
});
