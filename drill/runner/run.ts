/**
 * A checked run (issue 16): the checked workload over every region, faults injected and healed at
 * their moments, then convergence, the replicas read from disk, the checker, and the report. A
 * named drill is a run with one fault (drill/scenarios); a campaign round is a run with 1-3.
 *
 * Every way out heals: each injected fault's own heal, then the driver's healAll (links back,
 * paused processes continued, held ones released), also when the run throws or is aborted
 * (Ctrl-C), so a drill never leaves the deployment worse than it found it.
 */
import { EdgeqError, seededRandom } from '../../src/core/index.ts';
import { checkRun, readReplicaBatches } from '../checker/index.ts';
import { buildReport } from '../report/index.ts';
import { detectMs, TimelineRecorder } from '../timeline/index.ts';
import { CheckedWorkload, drain, type DrainResult, type WorkloadRecord } from '../workload/index.ts';
import type { CheckedTopic, CheckResult, ReplicaBatches } from '../types.ts';
import { fetchCell } from './cell-view.ts';
import { recoverMs, unavailableMs, UNAVAILABLE_GAP_MS } from './timings.ts';
import type { CheckedRunOptions, CheckedRunResult, DrillPhase, FaultContext, InjectedFault, ScheduledFault } from './types.ts';

/** Default bound on every acked global record reaching every region after the last heal. */
export const CONVERGE_TIMEOUT_MS_DEFAULT = 90_000;
/** Pause between drains while converging. */
export const CONVERGE_POLL_MS = 500;
/** How often progress is reported while the run goes on. */
export const PROGRESS_EVERY_MS = 500;
/**
 * After the planned duration, the workload goes on (at most this long) until every affected
 * region has acknowledged a write after the last heal, so that a slow recovery (a whole region
 * restarting) is measured rather than cut off; a region that does not recover in it fails the run.
 */
export const RECOVER_WAIT_MS_MAX = 60_000;
/** Pause between looks at the acks while waiting for recovery. */
const RECOVER_POLL_MS = 100;
/** Partitions of each checked topic. */
export const RUN_PARTITIONS = 4;
/** Longest run the runner accepts (a drill's --duration-s is bounded by it). */
export const RUN_DURATION_MS_MAX = 3_600_000;
/** Most faults one run schedules. */
export const RUN_FAULTS_MAX = 16;

/**
 * The gap bounds scale with the rate: a partition (lane) acks every RUN_PARTITIONS / rate s and a
 * region every 1 / (2 × rate) s (a global and a local topic); a gap of 3 of those, and at least
 * UNAVAILABLE_GAP_MS, is an interruption rather than the schedule's own spacing.
 */
const laneGapMs = (rate: number) => Math.max(UNAVAILABLE_GAP_MS, Math.ceil((3 * RUN_PARTITIONS * 1000) / rate));
const regionGapMs = (rate: number) => Math.max(UNAVAILABLE_GAP_MS, Math.ceil((3 * 1000) / (2 * rate)));

/** Sleeps `ms`, or less if `signal` aborts; true when it slept the whole time. */
function sleepUnless(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, Math.max(0, ms));
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function validate(o: CheckedRunOptions): void {
  const bad = (field: string, message: string) => new EdgeqError('INVALID_ARGUMENT', message, { details: { field } });
  if (!Number.isSafeInteger(o.durationMs) || o.durationMs <= 0 || o.durationMs > RUN_DURATION_MS_MAX) throw bad('durationMs', `the run's duration must be an integer in (0, ${RUN_DURATION_MS_MAX}] ms, got ${o.durationMs}`);
  if (o.faults.length > RUN_FAULTS_MAX) throw bad('faults', `at most ${RUN_FAULTS_MAX} faults per run, got ${o.faults.length}`);
  const names = new Set(o.deployment.regions.map((r) => r.region));
  if (names.size === 0) throw bad('deployment', 'the deployment has no region');
  for (const f of o.faults) {
    if (!names.has(f.region)) throw bad('region', `unknown region "${f.region}"; the deployment has ${[...names].join(', ')}`);
    if (!(f.atMs >= 0 && f.holdMs >= 0 && f.atMs + f.holdMs <= o.durationMs)) throw bad('faults', `fault ${f.fault.name} at ${f.atMs} ms held ${f.holdMs} ms does not fit in the run's ${o.durationMs} ms`);
  }
}

/** A check that could not run (the drain or the input failed): it fails, with what is known. */
function failedCheck(acked: number, total: number): CheckResult {
  return { acked, lost: 0, unexpected: 0, duplicates: 0, duplicatesOfIndeterminate: 0, reordered: 0, indeterminate: { total, found: 0 }, failedFound: 0, offsetsBackwards: 0, emptyBelowHighWatermark: 0, divergentOffsets: 0, examples: {}, verdict: 'fail' };
}

/** Every acked global record is in every region's drain. */
function converged(d: DrainResult, topic: string, regions: readonly string[], acked: readonly WorkloadRecord[]): boolean {
  return regions.every((r) => {
    const values = new Set(d.regions[r]?.[topic]?.flat().map((x) => x.value));
    return acked.every((g) => values.has(g.id));
  });
}

/** Runs the workload with the faults, checks, and reports (see the file comment). */
export async function runChecked(o: CheckedRunOptions): Promise<CheckedRunResult> {
  validate(o);
  const apiKey = o.apiKey ?? null;
  const started = Date.now();
  const abort = new AbortController();
  const onOuterAbort = () => abort.abort();
  if (o.signal?.aborted) abort.abort();
  o.signal?.addEventListener('abort', onOuterAbort, { once: true });
  const regions = o.deployment.regions.map((r) => ({ region: r.region, gateway: r.gateway.replace(/\/+$/, '') }));
  const regionNames = regions.map((r) => r.region);
  // Names unique per run: records of an earlier run on the same topics would be "unexpected".
  const tag = `${o.seed.toString(36)}-${started.toString(36)}`;
  const acks = new Map<string, number[]>(regionNames.map((r) => [r, []]));
  const workload = (o.makeWorkload ?? ((w) => new CheckedWorkload(w)))({
    regions,
    globalTopic: `drill-${tag}-g`,
    localTopic: `drill-${tag}-l`,
    partitions: RUN_PARTITIONS,
    rate: o.rate,
    seed: o.seed,
    durationMs: o.durationMs + RECOVER_WAIT_MS_MAX,
    apiKey,
    onAck: (region, atMs) => acks.get(region)?.push(atMs),
  });
  const recorder = new TimelineRecorder({ gateways: regions.map((r) => ({ region: r.region, url: r.gateway })), apiKey });
  let phase: DrillPhase = 'prepare';
  const progress = (detail?: string) => o.onProgress?.({ phase, elapsedMs: Date.now() - started, acked: workload.stats().acked, ...(detail ? { detail } : {}) });
  const ticker = setInterval(() => progress(), PROGRESS_EVERY_MS);
  const problems: string[] = [];
  const injected: { s: ScheduledFault; f: InjectedFault; atMs: number; healedAtMs: number | null }[] = [];
  let topics: CheckedTopic[] = [];
  let faultAtMs: number | null = null;
  let healAtMs: number | null = null;
  let workloadEndMs = started;
  let convergeMs: number | null = null;
  let check: CheckResult | null = null;
  const random = seededRandom(o.seed ^ 0x5eed);

  const heal = async (i: (typeof injected)[number]) => {
    if (i.healedAtMs !== null) return;
    i.healedAtMs = Date.now();
    healAtMs = Math.max(healAtMs ?? 0, i.healedAtMs);
    recorder.mark('heal', `${i.f.name}${i.f.region ? ` (${i.f.region})` : ''}`, i.f.region ?? '');
    try {
      await i.f.heal();
    } catch (err) {
      problems.push(`healing ${i.f.name}: ${(err as Error).message}`);
    }
  };

  try {
    progress();
    topics = await workload.ensureTopics();
    recorder.start();
    workload.start();
    const t0 = Date.now();
    phase = 'warmup';
    progress();
    const ctxFor = (s: ScheduledFault): FaultContext => ({
      driver: o.driver,
      deployment: o.deployment,
      region: s.region,
      random,
      mark: (event, detail, region) => recorder.mark(event, detail, region ?? s.region),
      cell: (region) => fetchCell(o.deployment.regions.find((r) => r.region === region)?.gateway ?? '', apiKey),
      topics,
      signal: abort.signal,
    });
    // Injections and heals in time order (a heal at the same moment as an injection goes first).
    const events = o.faults
      .flatMap((s, k) => [
        { at: s.atMs, kind: 'inject' as const, k },
        { at: s.atMs + s.holdMs, kind: 'heal' as const, k },
      ])
      .sort((a, b) => a.at - b.at || (a.kind === 'heal' ? -1 : 1));
    const byIndex = new Map<number, (typeof injected)[number]>();
    for (const ev of events) {
      if (!(await sleepUnless(t0 + ev.at - Date.now(), abort.signal))) break;
      const s = o.faults[ev.k]!;
      if (ev.kind === 'inject') {
        phase = 'fault';
        const at = Date.now();
        recorder.mark('fault', `${s.fault.name} (${s.region})`, s.region);
        try {
          const f = await s.fault.inject(ctxFor(s));
          const entry = { s, f, atMs: at, healedAtMs: null };
          injected.push(entry);
          byIndex.set(ev.k, entry);
          faultAtMs ??= at;
        } catch (err) {
          problems.push(`injecting ${s.fault.name} in ${s.region}: ${(err as Error).message}`);
        }
      } else {
        phase = 'heal';
        const entry = byIndex.get(ev.k);
        if (entry) await heal(entry);
      }
      progress(`${ev.kind} ${s.fault.name}`);
    }
    for (const i of injected) await heal(i);
    if (!abort.signal.aborted) {
      phase = 'recover';
      await sleepUnless(t0 + o.durationMs - Date.now(), abort.signal);
      const healed = healAtMs;
      if (healed !== null) {
        // Every lane (partition) of an affected region that acked before the fault acks again after the heal.
        const affectedNow = new Set(injected.flatMap((i) => i.f.affected));
        const waiting = () => {
          const before = new Set<string>();
          const after = new Set<string>();
          for (const r of workload.produced()) {
            if (r.outcome.kind !== 'acked' || !affectedNow.has(r.region)) continue;
            const lane = `${r.region} ${r.topic}/${r.partition}`;
            if (r.outcome.atMs < (faultAtMs ?? 0)) before.add(lane);
            else if (r.outcome.atMs > healed) after.add(lane);
          }
          return [...before].filter((l) => !after.has(l));
        };
        const deadline = Date.now() + RECOVER_WAIT_MS_MAX;
        while (waiting().length > 0 && Date.now() < deadline && (await sleepUnless(RECOVER_POLL_MS, abort.signal)));
        const late = waiting();
        if (late.length > 0 && !abort.signal.aborted) problems.push(`no acknowledged write on ${late.join(', ')} within ${RECOVER_WAIT_MS_MAX} ms of the planned end after the heal`);
        else if (Date.now() > t0 + o.durationMs + RECOVER_POLL_MS) progress('the workload ran on until every partition of the affected regions acknowledged a write after the heal');
      }
    }
    await workload.stop();
    workloadEndMs = Date.now();
    if (abort.signal.aborted) throw new EdgeqError('TIMEOUT', 'interrupted');

    phase = 'converge';
    progress();
    const produced = workload.produced();
    const globalTopic = topics.find((t) => t.scope === 'global')!.name;
    const ackedGlobal = produced.filter((r) => r.topic === globalTopic && r.outcome.kind === 'acked');
    const convergeFrom = healAtMs ?? workloadEndMs;
    const deadline = Date.now() + (o.convergeTimeoutMs ?? CONVERGE_TIMEOUT_MS_DEFAULT);
    let drained: DrainResult | null = null;
    for (;;) {
      drained = await drain(regions, topics, { apiKey });
      if (drained.undrained.length === 0 && converged(drained, globalTopic, regionNames, ackedGlobal)) {
        convergeMs = Date.now() - convergeFrom;
        break;
      }
      if (Date.now() >= deadline) {
        problems.push(`not converged within ${o.convergeTimeoutMs ?? CONVERGE_TIMEOUT_MS_DEFAULT} ms: ${drained.undrained.map((u) => `${u.region} not drained (${u.reason})`).join('; ') || 'acknowledged global records missing in some region'}`);
        break;
      }
      if (!(await sleepUnless(CONVERGE_POLL_MS, abort.signal))) throw new EdgeqError('TIMEOUT', 'interrupted');
    }

    phase = 'check';
    progress();
    const replicas = await readReplicas(o, topics, apiKey, problems);
    if (drained.undrained.length === 0) {
      check = checkRun({ topics, regions: regionNames, produced, drain: drained, polls: workload.polls(), replicas });
    }
    noteFailures(recorder, injected, produced);
  } catch (err) {
    if (abort.signal.aborted) problems.push('interrupted');
    else if (injected.length === 0 && faultAtMs === null && problems.length === 0 && topics.length === 0) throw err;
    else problems.push(`the run failed: ${(err as Error).message}`);
  } finally {
    clearInterval(ticker);
    o.signal?.removeEventListener('abort', onOuterAbort);
    for (const i of injected) await heal(i);
    try {
      await o.driver.healAll();
    } catch (err) {
      problems.push((err as Error).message);
    }
    await workload.stop().catch(() => undefined);
    recorder.stop();
  }

  const stats = workload.stats();
  check ??= failedCheck(stats.acked, stats.indeterminate);
  const first = injected[0];
  const affected = [...new Set(injected.flatMap((i) => i.f.affected))];
  // Cell events of other topics (earlier drills', the internal ones) are noise here: only the checked topics' are kept.
  const checkedNames = topics.map((t) => t.name);
  const timeline = recorder.timeline().filter((e) => !e.event.startsWith('cell.') || checkedNames.some((n) => e.detail.startsWith(`${n}/`)));
  const report = buildReport({
    scenario: o.scenario,
    region: o.region,
    seed: o.seed,
    startedAtMs: started,
    faultAtMs,
    healAtMs,
    detectMs: first && first.f.detect ? detectMs(timeline, first.atMs, first.f.detect) : null,
    recoverMs:
      faultAtMs === null
        ? null
        : recoverMs(
            workload.produced().flatMap((r) => (r.outcome.kind === 'acked' ? [{ region: r.region, lane: `${r.topic}/${r.partition}`, atMs: r.outcome.atMs }] : [])),
            affected.length > 0 ? affected : regionNames,
            faultAtMs,
            workloadEndMs,
            laneGapMs(o.rate),
          ),
    convergeMs,
    unavailableMs: faultAtMs === null ? Object.fromEntries(regionNames.map((r) => [r, 0])) : unavailableMs(acks, regionNames, faultAtMs, workloadEndMs, regionGapMs(o.rate)),
    check,
    timeline,
    problems,
  });
  const cleanup = o.deleteTopics ?? 'on-pass';
  if (topics.length > 0 && (cleanup === 'always' || (cleanup === 'on-pass' && report.verdict === 'pass'))) {
    // After the report: what a deletion could not do is said in the progress, not held against the run.
    const failed = await workload.deleteTopics();
    if (failed.length > 0) progress(`could not delete ${failed.join('; ')}`);
  }
  phase = 'done';
  o.onProgress?.({ phase, elapsedMs: Date.now() - started, acked: stats.acked, detail: report.verdict });
  return { report, check };
}

/** Every ISR member's batches of every checked partition, in every region, from its log on disk. */
async function readReplicas(o: CheckedRunOptions, topics: readonly CheckedTopic[], apiKey: string | null, problems: string[]): Promise<ReplicaBatches[]> {
  const out: ReplicaBatches[] = [];
  const names = new Set(topics.map((t) => t.name));
  for (const r of o.deployment.regions) {
    let cell;
    try {
      cell = await fetchCell(r.gateway, apiKey);
    } catch (err) {
      problems.push(`reading ${r.region}'s cell for the replica check: ${(err as Error).message}`);
      continue;
    }
    for (const p of cell.partitions.filter((x) => names.has(x.topic))) {
      for (const id of p.isr) {
        const broker = r.brokers.find((b) => b.id === id);
        if (!broker) continue;
        try {
          out.push(await readReplicaBatches(broker.dataDir, p.topic, p.partition, { region: r.region, broker: broker.name, highWatermark: p.highWatermark }));
        } catch (err) {
          // A replica with no folder for the partition holds nothing to compare.
          const code = (err as { code?: string }).code;
          if (code !== 'NOT_FOUND' && code !== 'ENOENT') problems.push(`reading ${broker.name}'s ${p.topic}-${p.partition}: ${(err as Error).message}`);
        }
      }
    }
  }
  return out;
}

/** Marks, per fault and region, the error codes of writes that failed while it was in place. */
function noteFailures(recorder: TimelineRecorder, injected: readonly { f: InjectedFault; atMs: number; healedAtMs: number | null }[], produced: readonly WorkloadRecord[]): void {
  for (const i of injected) {
    const until = i.healedAtMs ?? Infinity;
    const codes = new Map<string, Map<string, number>>();
    for (const r of produced) {
      if (r.outcome.kind === 'acked' || r.outcome.atMs < i.atMs || r.outcome.atMs > until) continue;
      const byCode = codes.get(r.region) ?? new Map<string, number>();
      const key = `${r.outcome.kind}:${r.outcome.code}`;
      byCode.set(key, (byCode.get(key) ?? 0) + 1);
      codes.set(r.region, byCode);
    }
    for (const [region, byCode] of codes) {
      recorder.mark('writes.refused', `during ${i.f.name}: ${[...byCode].map(([k, n]) => `${n} ${k}`).join(', ')}`, region);
    }
  }
}
