/**
 * `npm run bench:overload`: overload that never collapses (issue 14's benchmark). A one-region
 * `edgeq dev` (embedded arbiter, a cell of 3 brokers, one gateway), single records through the
 * gateway (`POST /v1/topics/<t>/records?acks=all`, JSON, 100 B values), open loop: send times fixed
 * in advance at the offered rate, latency of each request from its due time (bench/lib/overload-load.ts),
 * keep-alive node:http Agents with a bounded number of sockets (a request waiting for a socket is
 * late, and that shows in its latency).
 *
 * 1. With no limiter (EDGEQ_LIMITER=none): the unloaded p99 at 200/s, then the maximum sustainable
 *    rate M, the highest rate whose admitted p99 stays under 3x the unloaded p99 with every request
 *    admitted (doubling from 500/s, then bisection, 5 s per step, a failed step run once more;
 *    the answer confirmed over 20 s and lowered by 20% if it does not hold).
 * 2. For each controller (none, seeds, edgeq; a fresh deployment each, EDGEQ_LIMITER_TARGET_P99_MS
 *    at 2x the unloaded p99 for seeds and edgeq): 1x, 2x, 3x and 5x of M, 20 s each: goodput
 *    (2xx answered during the case, per second), p99 and p99.9 of the admitted, the share throttled (429, or 503
 *    TEMPORARY_REDUCED_CAPACITY), other errors (anything else, timeouts, requests the client could
 *    not send), and the peak RSS of the deployment (every process, from /proc once a second).
 * 3. Fairness (edgeq, auth on with `edgeq dev --keys`, EDGEQ_TENANT_WEIGHTS=a=1,b=1,c=1): tenant a
 *    offers 10x its third of M, b and c 0.8 of theirs (3.9x M in all); Jain's index over each
 *    tenant's admitted rate relative to its max-min fair share (bench/lib/overload-report.ts says why).
 * 4. Quota accuracy (a deployment of its own, auth on, no load controller, whose 503s would count
 *    against the quota): a quota of R = 30% of M records/s on (a, topic) through
 *    `PUT /v1/quotas/a/<topic>`, 2R offered by 16 producers of their own connections for three
 *    10 s windows counted from the first send; a window holds when its 2xx rate is within ±5% of R.
 *
 * Results: bench/results/overload.json (the issue's shape, plus settings, per-case detail and the
 * search steps), a table and the targets (met / not met; nothing is asserted) on stdout, progress
 * on stderr. A controller the gateway does not run (GET /v1/limiter missing) or a missing quota
 * API fails that part clearly, is listed under `failures`, and the exit code is 1.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, resolve } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { EdgeqError } from '../src/core/index.ts';
import { cleanupTempDirs, tempDir } from '../test/helpers/tmp.ts';
import { progress as say, sleep } from './lib/harness.ts';
import { limiterState, RssSampler, startDeployment, stopDeployments, type Deployment } from './lib/overload-deployment.ts';
import { destroyStats, percentileMs, runOpenLoop, type FlowStats } from './lib/overload-load.ts';
import { HELP, parsePlan, type Plan } from './lib/overload-options.ts';
import { fairnessRun, quotaRun, tenantKeys, TENANT_SOCKETS, TENANT_WEIGHTS, QUOTA_PRODUCERS, QUOTA_SOCKETS_PER_PRODUCER, VALUE_BYTES, type FairnessResult, type QuotaResult } from './lib/overload-phases.ts';
import { checkTargets, rowsTable, targetsText, toRow, type ControllerName, type Row } from './lib/overload-report.ts';
import { searchMaxRate, stepHolds, type SearchStep } from './lib/overload-search.ts';
import { GatewaySender } from './lib/overload-sender.ts';

const progress = (line: string): void => say(line, 'overload');

const PARTITIONS = 3;
/** Sockets of a case's one sender: the server sees at most this many requests at once from it. */
const CASE_SOCKETS = 128;
/**
 * Wait after the quota PUT answered before offering load: the gateway picks quota changes up
 * within one interval (the issue's rule; the controller's interval is 1 s), and 2 s covers it.
 */
const QUOTA_APPLY_MS = 2_000;
/** Search: a step holds when p99 <= 3x the unloaded p99 and this share of its requests was admitted. */
const SEARCH_P99_X = 3;
const SEARCH_ADMITTED_SHARE_MIN = 0.999;
/** Confirmation of the search's answer over a case's length: lowered by this factor when it fails, at most this often. */
const SEARCH_CONFIRM_BACKOFF = 0.8;
const SEARCH_CONFIRM_ATTEMPTS_MAX = 2;
/** A failed search step is run once more before it counts (overload-search.ts says why). */
const SEARCH_RETRIES_ON_FAIL = 1;
/** EDGEQ_LIMITER_TARGET_P99_MS for seeds and edgeq: 2x the unloaded p99 (the issue's p99 target). */
const TARGET_P99_X = 2;
/** "RSS bounded": the 3x and 5x peaks within this multiple of the 1x peak. */
const RSS_GROWTH_MAX = 1.25;
/** Warm-up of each deployment, as a share of M (below M, so it leaves no backlog). */
const WARMUP_SHARE_OF_MAX = 0.5;

const plan = ((): Plan => {
  try {
    const p = parsePlan(process.argv.slice(2));
    if (p === 'help') {
      process.stdout.write(`${HELP}\n`);
      process.exit(0);
    }
    return p;
  } catch (err) {
    process.stderr.write(`bench:overload: ${(err as Error).message}\n`);
    process.exit(2);
  }
})();
const OUT = resolve(plan.out ?? fileURLToPath(new URL(plan.quick ? './results/overload-quick.json' : './results/overload.json', import.meta.url)));

const failures: { part: string; message: string }[] = [];
const notes: string[] = [];
function note(line: string): void {
  notes.push(line);
  progress(`note: ${line}`);
}

function sourceCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: fileURLToPath(new URL('..', import.meta.url)), encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}

/** The bench process's own load during a run: is the load generator the bottleneck? */
async function withClientLoad<T>(run: () => Promise<T>): Promise<{ value: T; client: { loopDelayP99Ms: number; cpuPctOfOneCore: number } }> {
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const value = await run();
  const used = process.cpuUsage(cpu0);
  loop.disable();
  const client = { loopDelayP99Ms: Math.round(loop.percentile(99) / 1e4) / 100, cpuPctOfOneCore: Math.round(((used.user + used.system) / 1000 / (performance.now() - t0)) * 1000) / 10 };
  return { value, client };
}

/** One run of one sender at `ratePerSec` for `seconds`; the caller destroys the stats. */
async function measure(d: Deployment, apiKey: string | null, ratePerSec: number, seconds: number, sockets = CASE_SOCKETS): Promise<FlowStats> {
  const sender = new GatewaySender({ gateway: d.gateway, topic: d.topic, apiKey, valueBytes: VALUE_BYTES, sockets });
  try {
    const [s] = await runOpenLoop([{ name: 'all', sender, ratePerSec }], { durationMs: seconds * 1000 });
    return s!;
  } finally {
    sender.close();
  }
}

async function warmUp(d: Deployment, apiKey: string | null, ratePerSec: number): Promise<void> {
  const s = await measure(d, apiKey, ratePerSec, plan.warmupSec);
  progress(`warm-up ${ratePerSec}/s for ${plan.warmupSec} s: ${s.ok} of ${s.due} admitted`);
  destroyStats([s]);
  await sleep(plan.settleMs);
}

/** The cases of one controller: 1x..5x of M. */
async function runCases(d: Deployment, controller: ControllerName, maxPerSec: number, rows: Row[], apiKey: string | null): Promise<void> {
  const sampler = new RssSampler(d);
  sampler.start();
  try {
    for (const x of plan.overloads) {
      sampler.take();
      const rate = Math.round(maxPerSec * x);
      const { value: s, client } = await withClientLoad(() => measure(d, apiKey, rate, plan.caseSec));
      const state = (await limiterState(d.gateway, apiKey)) as { capacityPerSec?: unknown; binding?: unknown } | null;
      const row = {
        ...toRow(controller, x, s, sampler.take()),
        client,
        ...(state !== null ? { limiterAtEnd: { capacityPerSec: typeof state.capacityPerSec === 'number' ? Math.round(state.capacityPerSec) : null, binding: state.binding ?? null } } : {}),
      };
      destroyStats([s]);
      rows.push(row);
      await sleep(plan.settleMs);
      progress(`${controller} ${x}x (${rate}/s): goodput ${row.goodputPerSec}/s, p99 ${row.p99Ms} ms, p99.9 ${row.p999Ms} ms, throttled ${(row.throttledShare * 100).toFixed(1)}%, other ${row.otherErrors}, RSS ${row.rssMbMax} MB; client loop p99 ${client.loopDelayP99Ms} ms, CPU ${client.cpuPctOfOneCore}%`);
    }
  } finally {
    sampler.stop();
    for (const c of sampler.pidChanges) note(`${controller}: a process was restarted during the cases: ${c}`);
  }
}

/** Part 1: unloaded p99 and the maximum sustainable rate, on the `none` deployment. */
async function baseline(d: Deployment): Promise<{ unloadedP99Ms: number; maxPerSec: number; steps: SearchStep[]; unloaded: Record<string, unknown> }> {
  // The search's first rate: below what the cell takes on any machine this runs on, and enough
  // traffic to get the produce path compiled.
  await warmUp(d, null, plan.searchStartPerSec);
  const u = await measure(d, null, plan.unloadedPerSec, plan.unloadedSec);
  const unloadedP99Ms = percentileMs(u.latency, 99);
  await sleep(plan.settleMs);
  const unloaded = { ratePerSec: plan.unloadedPerSec, seconds: plan.unloadedSec, due: u.due, ok: u.ok, p50Ms: percentileMs(u.latency, 50), p99Ms: unloadedP99Ms, p999Ms: percentileMs(u.latency, 99.9), answers: u.answers };
  destroyStats([u]);
  if (unloadedP99Ms === null || u.ok < u.due) throw new EdgeqError('BROKER_NOT_AVAILABLE', `the unloaded run at ${plan.unloadedPerSec}/s did not get every request admitted: ${JSON.stringify(unloaded.answers)}`);
  progress(`unloaded p99 at ${plan.unloadedPerSec}/s: ${unloadedP99Ms} ms (p50 ${unloaded.p50Ms} ms)`);
  if (plan.maxSustainablePerSec !== null) {
    note(`maximum sustainable rate given (--max-sustainable ${plan.maxSustainablePerSec}), not searched`);
    return { unloadedP99Ms, maxPerSec: plan.maxSustainablePerSec, steps: [], unloaded };
  }
  const thresholdMs = Math.round(SEARCH_P99_X * unloadedP99Ms * 1000) / 1000;
  const step = (seconds: number) => async (rate: number): Promise<SearchStep> => {
    const s = await measure(d, null, rate, seconds);
    const p99Ms = percentileMs(s.latency, 99);
    const admittedShare = s.due === 0 ? 0 : s.ok / s.due;
    destroyStats([s]);
    await sleep(plan.settleMs);
    const pass = stepHolds(p99Ms, admittedShare, thresholdMs, SEARCH_ADMITTED_SHARE_MIN);
    progress(`search ${rate}/s for ${seconds} s: p99 ${p99Ms} ms (limit ${thresholdMs}), admitted ${(admittedShare * 100).toFixed(2)}%: ${pass ? 'holds' : 'does not hold'}`);
    return { ratePerSec: rate, p99Ms, admittedShare: Math.round(admittedShare * 10_000) / 10_000, pass };
  };
  const { maxPerSec, steps, confirmed } = await searchMaxRate(step(plan.searchStepSec), {
    startPerSec: plan.searchStartPerSec,
    doublingsMax: plan.searchDoublingsMax,
    bisectSteps: plan.searchBisectSteps,
    granularityPerSec: 50,
    // Confirmed over a case's length: the 1x case runs exactly that long at this rate.
    confirm: step(plan.caseSec),
    confirmAttemptsMax: SEARCH_CONFIRM_ATTEMPTS_MAX,
    confirmBackoff: SEARCH_CONFIRM_BACKOFF,
    retriesOnFail: SEARCH_RETRIES_ON_FAIL,
  });
  if (maxPerSec === 0) throw new EdgeqError('BROKER_NOT_AVAILABLE', `no rate held in the search (p99 limit ${thresholdMs} ms): ${JSON.stringify(steps)}`);
  if (!confirmed) note(`the maximum sustainable rate ${maxPerSec}/s is not confirmed: it was lowered ${SEARCH_CONFIRM_ATTEMPTS_MAX} times after failing a ${plan.caseSec} s run`);
  progress(`maximum sustainable rate: ${maxPerSec}/s${confirmed ? ` (held for ${plan.caseSec} s)` : ''}`);
  return { unloadedP99Ms, maxPerSec, steps, unloaded };
}

async function main(): Promise<number> {
  const started = new Date();
  const loadAtStart = loadavg()[0]!;
  progress(`plan: ${plan.quick ? 'quick' : 'full'}; controllers ${plan.controllers.join(', ')}; ${plan.caseSec} s per case; ${plan.brokers} brokers; results to ${OUT}`);
  const rows: Row[] = [];
  let base: Awaited<ReturnType<typeof baseline>> | null = null;
  let fair: FairnessResult | null = null;
  let quota: QuotaResult | null = null;
  const deploy = { brokers: plan.brokers, partitions: PARTITIONS, replicationFactor: Math.min(3, plan.brokers) };
  try {
    // 1 and the `none` cases share a deployment: the search is made with no limiter anyway.
    const d = await startDeployment({ ...deploy, controller: 'none' });
    try {
      base = await baseline(d);
      if (plan.controllers.includes('none')) await runCases(d, 'none', base.maxPerSec, rows, null);
    } finally {
      await stopDeployments();
    }
    const targetP99Ms = Math.max(1, Math.round(TARGET_P99_X * base.unloadedP99Ms));
    for (const controller of plan.controllers.filter((c) => c !== 'none')) {
      try {
        const dc = await startDeployment({ ...deploy, controller, targetP99Ms });
        progress(`${controller}: deployment ready, EDGEQ_LIMITER_TARGET_P99_MS=${targetP99Ms}`);
        await warmUp(dc, null, Math.round(base.maxPerSec * WARMUP_SHARE_OF_MAX));
        await runCases(dc, controller, base.maxPerSec, rows, null);
      } catch (err) {
        failures.push({ part: `${controller} cases`, message: (err as Error).message });
        progress(`FAILED ${controller}: ${(err as Error).message}`);
      } finally {
        await stopDeployments();
      }
    }
    if (plan.controllers.includes('edgeq')) {
      const { file, keys } = await tenantKeys(await tempDir('edgeq-overload-keys-'));
      try {
        const df = await startDeployment({ ...deploy, controller: 'edgeq', targetP99Ms, tenantWeights: TENANT_WEIGHTS, keysFile: file, adminKey: keys.a! });
        await warmUp(df, keys.b!, Math.round(base.maxPerSec * WARMUP_SHARE_OF_MAX));
        try {
          const f = await fairnessRun(df, keys, base.maxPerSec, plan.caseSec);
          fair = f;
          progress(`fairness: Jain ${f.jain} (by weight alone ${f.jainByWeight}); ${f.tenants.map((t) => `${t.tenant} offered ${t.offeredPerSec}/s admitted ${t.admittedPerSec}/s fair ${t.fairSharePerSec}/s`).join('; ')}`);
          await sleep(plan.settleMs);
        } catch (err) {
          failures.push({ part: 'fairness', message: (err as Error).message });
          progress(`FAILED fairness: ${(err as Error).message}`);
        }
      } catch (err) {
        failures.push({ part: 'fairness deployment', message: (err as Error).message });
        progress(`FAILED fairness: ${(err as Error).message}`);
      } finally {
        await stopDeployments();
      }
      // The quota's accuracy on a deployment without the load controller: its 503s would be
      // counted against the quota, which is not what this measures.
      try {
        const dq = await startDeployment({ ...deploy, controller: 'none', targetP99Ms, tenantWeights: TENANT_WEIGHTS, keysFile: file, adminKey: keys.a! });
        await warmUp(dq, keys.b!, Math.round(base.maxPerSec * WARMUP_SHARE_OF_MAX));
        const q = await quotaRun(dq, 'a', keys.a!, base.maxPerSec, { windowSec: plan.quotaWindowSec, windows: plan.quotaWindows, applyMs: QUOTA_APPLY_MS });
        quota = q;
        progress(`quota ${q.targetPerSec}/s, offered ${q.offeredPerSec}/s: ${q.windowsWithin5pct} of ${q.windows} windows within ±5% (${q.admittedPerSecByWindow.join(', ')}/s; ${q.errorPctByWindow.join(', ')}%)`);
      } catch (err) {
        failures.push({ part: 'quota accuracy', message: (err as Error).message });
        progress(`FAILED quota accuracy: ${(err as Error).message}`);
      } finally {
        await stopDeployments();
      }
    }
  } catch (err) {
    failures.push({ part: 'baseline', message: (err as Error).message });
    progress(`FAILED: ${(err as Error).message}`);
  } finally {
    await stopDeployments();
    await cleanupTempDirs();
  }

  const maxSustainablePerSec = base?.maxPerSec ?? 0;
  const unloadedP99Ms = base?.unloadedP99Ms ?? 0;
  const targets = base
    ? checkTargets({ maxSustainablePerSec, unloadedP99Ms, rows, jain: fair?.jain ?? null, quota, rssGrowthMax: RSS_GROWTH_MAX })
    : [];
  const results = {
    maxSustainablePerSec,
    unloadedP99Ms,
    rows,
    fairness: fair,
    quotaAccuracy: quota,
    targets,
    failures,
    notes,
    search: base ? { unloaded: base.unloaded, p99LimitMs: Math.round(SEARCH_P99_X * base.unloadedP99Ms * 1000) / 1000, admittedShareMin: SEARCH_ADMITTED_SHARE_MIN, retriesOnFail: SEARCH_RETRIES_ON_FAIL, steps: base.steps } : null,
    date: started.toISOString(),
    durationSec: Math.round((Date.now() - started.getTime()) / 1000),
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', memoryGb: Math.round(totalmem() / 2 ** 30), node: process.version, loadAvg1mAtStart: loadAtStart, loadAvg1mAtEnd: loadavg()[0]! },
    settings: {
      quick: plan.quick,
      commit: sourceCommit(),
      deployment: `edgeq dev --regions 1, ${plan.brokers} broker(s), 1 gateway; a fresh deployment per controller, and one more (auth on) for fairness and quota`,
      topic: { partitions: PARTITIONS, replicationFactor: deploy.replicationFactor },
      request: `POST /v1/topics/<topic>/records?acks=all, application/json, one record of ${VALUE_BYTES} B, no key or partition`,
      loadGenerator: `open loop in the bench process on the same machine: node:http keep-alive Agents (${CASE_SOCKETS} sockets per case; ${TENANT_SOCKETS} per fairness tenant; ${QUOTA_PRODUCERS} x ${QUOTA_SOCKETS_PER_PRODUCER} for the quota); latency from each request's due time`,
      seconds: { case: plan.caseSec, searchStep: plan.searchStepSec, unloaded: plan.unloadedSec, warmup: plan.warmupSec, quotaWindow: plan.quotaWindowSec, settleBetweenRuns: plan.settleMs / 1000 },
      overloads: plan.overloads,
      controllers: plan.controllers,
      targetP99Ms: base ? Math.max(1, Math.round(TARGET_P99_X * base.unloadedP99Ms)) : null,
      rssMbMax: `peak over the case of the sum of VmRSS of every process of the deployment (supervisor, arbiter, brokers, gateway), read once a second; rssMbMaxByProcess: each one's peak`,
      otherErrors: 'answers other than 2xx, 429 and 503 TEMPORARY_REDUCED_CAPACITY, plus socket errors, timeouts and requests the client could not send',
    },
  };
  await mkdir(dirname(OUT), { recursive: true });
  await writeFile(OUT, `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(
    [
      `maximum sustainable rate ${maxSustainablePerSec}/s; unloaded p99 ${unloadedP99Ms} ms`,
      '',
      rowsTable(rows),
      '',
      ...(fair ? [`fairness: Jain ${fair.jain} (over admitted / max-min fair share; by weight alone ${fair.jainByWeight})`] : []),
      ...(quota ? [`quota accuracy: ${quota.windowsWithin5pct} of ${quota.windows} windows within ±5% of ${quota.targetPerSec}/s`] : []),
      'targets:',
      targetsText(targets),
      ...(failures.length > 0 ? ['failures:', ...failures.map((f) => `  ${f.part}: ${f.message}`)] : []),
      `wrote ${OUT}`,
      '',
    ].join('\n'),
  );
  return failures.length > 0 ? 1 : 0;
}

// Ctrl-C: the deployments run in their own process groups (they do not get the terminal's
// signal), so they are stopped here before the bench exits.
process.once('SIGINT', () => {
  progress('interrupted: stopping the deployment');
  void stopDeployments().finally(() => process.exit(130));
});

process.exitCode = await main();
