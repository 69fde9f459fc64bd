/**
 * The deployment one case of the overload bench runs against: a one-region `edgeq dev` (embedded
 * arbiter, a cell of brokers, one gateway) started with the controller under test in its
 * environment (EDGEQ_LIMITER, EDGEQ_LIMITER_TARGET_P99_MS, EDGEQ_TENANT_WEIGHTS, which the
 * supervisor passes to the gateway), optionally with an API keys file; the bench topic made and
 * proven; the gateway's limiter checked against what was asked for; and the peak RSS of every
 * process sampled once a second.
 */
import { readFileSync } from 'node:fs';
import { EdgeqError } from '../../src/core/index.ts';
import { DEV_REGIONS_PORT_SPAN, freeRange, startDevRegions, stopAllDevs, type Ready } from '../../test/helpers/dev-process.ts';
import { tempDir } from '../../test/helpers/tmp.ts';
import { waitUntil } from './harness.ts';
import type { ControllerName } from './overload-report.ts';

/** Bound on one admin call (topic, quota, limiter, process list). */
const ADMIN_CALL_MS = 5_000;
/** How long the gateway gets to answer /readyz 200 after the deployment is up and the topic made. */
const READY_WAIT_MS = 60_000;
/** Topic attempts when a partition does not take an acks=all write in time (see makeTopic). */
const TOPIC_ATTEMPTS_MAX = 4;
/** Time each partition gets to answer its first acks=all probe. */
const PROBE_WAIT_MS = 5_000;
/** How often the RSS sampler reads /proc. */
export const RSS_SAMPLE_MS = 1_000;

/** What a deployment is started with. */
export interface DeploymentSpec {
  controller: ControllerName;
  brokers: number;
  /** EDGEQ_LIMITER_TARGET_P99_MS (seeds and edgeq runs). */
  targetP99Ms?: number;
  /** EDGEQ_TENANT_WEIGHTS, e.g. `a=1,b=1,c=1`. */
  tenantWeights?: string;
  /** An API keys file (auth on), and the key of a tenant with the admin grant. */
  keysFile?: string;
  adminKey?: string;
  partitions: number;
  replicationFactor: number;
  /** More of the deployment's environment (the prescale bench's EDGEQ_INGRESS_* and EDGEQ_PLANNER_*). */
  env?: Record<string, string>;
}

/** A running deployment. */
export interface Deployment {
  ready: Ready;
  gateway: string;
  topic: string;
  /** The supervisor's own pid (it runs the link emulator and the control API). */
  supervisorPid: number;
  adminKey: string | null;
  env: Record<string, string>;
}

/** fetch with a bound; the answer's status and body text. */
export async function call(url: string, init: RequestInit = {}, timeoutMs = ADMIN_CALL_MS): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  return { status: res.status, text: await res.text() };
}

const authHeaders = (key: string | null): Record<string, string> => (key === null ? {} : { authorization: `Bearer ${key}` });

/** Starts the deployment, makes the topic and checks the limiter; stops it again if any of that fails. */
export async function startDeployment(spec: DeploymentSpec): Promise<Deployment> {
  const env: Record<string, string> = { ...spec.env, EDGEQ_LIMITER: spec.controller };
  if (spec.targetP99Ms !== undefined) env.EDGEQ_LIMITER_TARGET_P99_MS = String(spec.targetP99Ms);
  if (spec.tenantWeights !== undefined) env.EDGEQ_TENANT_WEIGHTS = spec.tenantWeights;
  const base = await freeRange(DEV_REGIONS_PORT_SPAN);
  const dev = startDevRegions(await tempDir('edgeq-overload-'), base, { regions: '1', brokersPerRegion: spec.brokers, env, args: spec.keysFile !== undefined ? ['--keys', spec.keysFile] : [] });
  try {
    const ready = await dev.ready;
    const adminKey = spec.adminKey ?? null;
    const topic = await makeTopic(ready.gateway, adminKey, spec.partitions, spec.replicationFactor);
    await checkLimiter(ready.gateway, spec.controller, adminKey);
    return { ready, gateway: ready.gateway, topic, supervisorPid: dev.child.pid!, adminKey, env };
  } catch (err) {
    await stopDeployments();
    throw err;
  }
}

/** Stops every deployment started here (SIGTERM, then the whole process group is killed). */
export async function stopDeployments(): Promise<void> {
  await stopAllDevs();
}

/**
 * Creates the bench topic through the gateway and proves each partition takes an acks=all write within PROBE_WAIT_MS; a follower
 * that never starts fetching would make acks=all time out, and then another topic is tried.
 */
async function makeTopic(gateway: string, key: string | null, partitions: number, replicationFactor: number): Promise<string> {
  for (let attempt = 0; attempt < TOPIC_ATTEMPTS_MAX; attempt++) {
    const name = attempt === 0 ? 'bench-overload' : `bench-overload-r${attempt}`;
    const created = await call(`${gateway}/v1/topics`, { method: 'POST', headers: { 'content-type': 'application/json', ...authHeaders(key) }, body: JSON.stringify({ name, partitions, replicationFactor }) });
    if (created.status !== 201) throw new EdgeqError('INVALID_REQUEST', `creating topic ${name}: ${created.status} ${created.text.slice(0, 300)}`);
    if (!(await waitUntil(async () => (await call(`${gateway}/readyz`)).status === 200, READY_WAIT_MS, 100))) {
      throw new EdgeqError('TIMEOUT', `the gateway did not answer /readyz 200 within ${READY_WAIT_MS / 1000} s of creating ${name}`);
    }
    const probes = await Promise.all(
      Array.from({ length: partitions }, (_, p) =>
        call(`${gateway}/v1/topics/${name}/records?acks=all`, { method: 'POST', headers: { 'content-type': 'application/json', ...authHeaders(key) }, body: JSON.stringify({ records: [{ value: 'probe', partition: p }] }) }, PROBE_WAIT_MS).then(
          (r) => r.status,
          () => 0,
        ),
      ),
    );
    if (probes.every((s) => s === 200)) return name;
  }
  throw new EdgeqError('TIMEOUT', `no topic took acks=all writes on every partition in ${TOPIC_ATTEMPTS_MAX} attempts`);
}

/**
 * Checks that the gateway runs the controller asked for. With `seeds` or `edgeq` it must serve
 * `GET /v1/limiter` (capacityPerSec, binding, tenants); a gateway without it (404: the limiter has
 * not landed on this branch) would quietly measure no limiter at all, so that is a clear failure.
 * With `none`, a limiter that answers and names another controller means EDGEQ_LIMITER was ignored.
 */
export async function checkLimiter(gateway: string, controller: ControllerName, key: string | null): Promise<void> {
  const res = await call(`${gateway}/v1/limiter`, { headers: authHeaders(key) });
  let body: Record<string, unknown> | null = null;
  try {
    body = JSON.parse(res.text) as Record<string, unknown>;
  } catch {
    body = null;
  }
  const named = body === null ? undefined : [body['controller'], body['limiter'], body['kind']].find((v) => typeof v === 'string');
  if (controller === 'none') {
    if (res.status === 200 && named !== undefined && named !== 'none') {
      throw new EdgeqError('UNSUPPORTED_API', `EDGEQ_LIMITER=none was asked for, but GET /v1/limiter names "${named}"`);
    }
    return;
  }
  if (res.status !== 200 || body === null || typeof body['capacityPerSec'] !== 'number') {
    throw new EdgeqError(
      'UNSUPPORTED_API',
      `the gateway does not run a limiter: GET /v1/limiter answered ${res.status} ${res.text.slice(0, 200)} (needs the gateway's --limiter/EDGEQ_LIMITER=${controller} and GET /v1/limiter with a numeric capacityPerSec)`,
    );
  }
  if (named !== undefined && named !== controller) throw new EdgeqError('UNSUPPORTED_API', `EDGEQ_LIMITER=${controller} was asked for, but GET /v1/limiter names "${named}"`);
}

/** The limiter's state (for the results), or null when the gateway has none. */
export async function limiterState(gateway: string, key: string | null): Promise<unknown> {
  try {
    const res = await call(`${gateway}/v1/limiter`, { headers: authHeaders(key) });
    return res.status === 200 ? JSON.parse(res.text) : null;
  } catch {
    return null;
  }
}

/**
 * Sets a quota of `recordsPerSec` on (tenant, topic) through `PUT /v1/quotas/{tenant}/{topic}`;
 * bytes are set far above what the records take, so only the record rate binds. A gateway without
 * the route (404) fails clearly.
 */
export async function putQuota(gateway: string, key: string | null, tenant: string, topic: string, recordsPerSec: number, bytesPerSec: number): Promise<void> {
  const res = await call(`${gateway}/v1/quotas/${encodeURIComponent(tenant)}/${encodeURIComponent(topic)}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', ...authHeaders(key) },
    body: JSON.stringify({ recordsPerSec, bytesPerSec }),
  });
  if (res.status !== 200 && res.status !== 201 && res.status !== 204) {
    throw new EdgeqError('UNSUPPORTED_API', `PUT /v1/quotas/${tenant}/${topic} answered ${res.status} ${res.text.slice(0, 200)} (needs the gateway's quota API)`);
  }
}

/** VmRSS of a process in MB, or null when it cannot be read (gone, not Linux). */
export function rssMb(pid: number): number | null {
  try {
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? null : Number(kb) / 1024;
  } catch {
    return null;
  }
}

/**
 * Peak RSS of every process of a deployment, read from /proc once every RSS_SAMPLE_MS: the
 * processes come from the control API each time (`GET /v1/dev/processes`, so a process restarted
 * by the supervisor is followed under its new pid), plus the supervisor itself. `take()` returns
 * the peaks since the previous `take()`: the peak of the sum over all processes (the deployment's
 * footprint) and each process's own peak.
 */
export class RssSampler {
  private timer: NodeJS.Timeout | null = null;
  private totalMax = 0;
  private byProcess = new Map<string, number>();
  private pids: { name: string; pid: number }[];
  private sampling = false;
  readonly pidChanges: string[] = [];

  constructor(private readonly d: Deployment) {
    this.pids = [{ name: 'dev', pid: d.supervisorPid }, ...d.ready.processes.map((p) => ({ name: p.name, pid: p.pid }))];
  }

  start(): void {
    this.sample();
    this.timer = setInterval(() => void this.refreshAndSample(), RSS_SAMPLE_MS);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Peaks since the last take (one more sample first). */
  take(): { totalMbMax: number; byProcessMbMax: Record<string, number> } {
    this.sample();
    const out = { totalMbMax: Math.round(this.totalMax), byProcessMbMax: Object.fromEntries([...this.byProcess].map(([k, v]) => [k, Math.round(v)])) };
    this.totalMax = 0;
    this.byProcess = new Map();
    return out;
  }

  private async refreshAndSample(): Promise<void> {
    if (this.sampling) return;
    this.sampling = true;
    try {
      const res = await call(`${this.d.ready.control}/v1/dev/processes`, {}, RSS_SAMPLE_MS);
      const list = (JSON.parse(res.text) as { processes: { name: string; pid: number | null }[] }).processes;
      const next = [{ name: 'dev', pid: this.d.supervisorPid }, ...list.filter((p) => p.pid !== null).map((p) => ({ name: p.name, pid: p.pid! }))];
      for (const p of next) {
        const was = this.pids.find((q) => q.name === p.name);
        if (was && was.pid !== p.pid) this.pidChanges.push(`${p.name}: pid ${was.pid} -> ${p.pid}`);
      }
      this.pids = next;
    } catch {
      // The control API busy or away for a moment: sample the pids known.
    } finally {
      this.sampling = false;
    }
    this.sample();
  }

  private sample(): void {
    let total = 0;
    for (const p of this.pids) {
      const mb = rssMb(p.pid);
      if (mb === null) continue;
      total += mb;
      this.byProcess.set(p.name, Math.max(this.byProcess.get(p.name) ?? 0, mb));
    }
    this.totalMax = Math.max(this.totalMax, total);
  }
}
