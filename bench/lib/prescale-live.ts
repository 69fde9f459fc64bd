/**
 * The live part of `npm run bench:prescale` (issue 15, benchmark item 2): nyc_taxi's test part
 * replayed through a one-region deployment's gateway at one step per second, the load controller
 * alone against the controller with the planner's pre-warm, in the same run, on fresh deployments
 * that differ only in EDGEQ_PLANNER_PREWARM.
 *
 * - Scale: the replayed slice is scaled so its peak is PEAK_OVER_INITIAL (1.5x) the capacity the
 *   unwarmed controller admits at once (its initial capacity, EDGEQ_LIMITER_INITIAL_PER_SEC).
 * - History: the planner needs days of history to forecast a day; a gateway records one step a
 *   second, so the days before the slice (the training part's last SEED_DAYS days, scaled alike)
 *   are written into `__ingress_history` as a second gateway of the region would have written
 *   them (the gateway's own history tails the topic and sums the steps by time). The replay starts
 *   once the planner has selected and installed a model on them.
 * - Load: each step's records as single-record produce requests spread evenly over its second
 *   (open loop; requests in flight bounded by IN_FLIGHT_MAX). Refused = 429/503 answers of the
 *   limiter; "during ramps" = the steps whose demand is above the previous step's.
 * - Admitted p99: of every 2xx answer, from the request's due time (a late client counts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from '../../src/client/index.ts';
import { GATEWAY_CLIENT_ID } from '../../src/protocol/index.ts';
import { encodeIngressStep, INGRESS_HISTORY_TOPIC } from '../../src/gateway/ingress-history/index.ts';
import { parseSeriesCsv, TRAIN_FRACTION } from '../../forecast/index.ts';
import { call, startDeployment, stopDeployments, type Deployment } from './overload-deployment.ts';
import { GatewaySender, type Answer } from './overload-sender.ts';
import { newHistogram, sleep } from './harness.ts';

const TRACE = 'nyc_taxi';
const SEASON = 48;
const STEP_MS = 1_000;
/** The planner's lead (the simulation's 2 steps). */
const LEAD_STEPS = 2;
/**
 * Days of history written before the slice: past the 7 seasons the LSTM needs to be a candidate,
 * and enough that the seed's past part (all but its last SEED_LEAD_MS) reaches the selection's
 * threshold (3 seasons + 4 horizons = 7 seasons here) soon after it is written.
 */
const SEED_DAYS = 10;
/** Days of the test part replayed by default (EDGEQ_BENCH_PRESCALE_LIVE_DAYS, up to 42; each day is 48 s per run): a week, its weekend included. */
const REPLAY_DAYS_DEFAULT = 7;
/** The unwarmed controller's capacity (records/s), and the slice's peak over it. */
const INITIAL_PER_SEC = 400;
const PEAK_OVER_INITIAL = 1.5;
/** Requests in flight at once; past it a due request counts as refused by the client (none expected). */
const IN_FLIGHT_MAX = 512;
/**
 * How far ahead of now the seed ends and the replay begins: time for the deployment's planner to
 * select and install its model on the seed's past part as its last steps close (measured: ~50 s).
 */
const SEED_LEAD_MS = 150_000;
/** Bound on the planner selecting and installing a model on the seeded history. */
const MODEL_WAIT_MS = SEED_LEAD_MS;
/** Steps of history written per produce. */
const SEED_BATCH = 64;

export interface LiveRun {
  refusedDuringRamps: number;
  p99Ms: number;
  refused: number;
  admitted: number;
  other: number;
  rampSteps: number;
  /** The model the planner used and its mode at the end. */
  model: unknown;
}

interface CapacityBody {
  model: { method: string; trainedAt: string | null; backtestMase: number | null; mode: string };
}

function sliceOf(trafficDir: string, days: number): { seed: number[]; replay: number[]; scale: number; from: number } {
  const series = parseSeriesCsv(readFileSync(join(trafficDir, `${TRACE}.csv`), 'utf8'), TRACE);
  const values = Array.from(series.values);
  const nTrain = Math.floor(TRAIN_FRACTION * values.length);
  // The slice starts at the first day's trough: a replay that began at a peak would meet the
  // unwarmed controller with the whole peak at once (refused in falling steps, not in a ramp).
  const firstDay = values.slice(nTrain, nTrain + SEASON);
  const from = nTrain + firstDay.indexOf(Math.min(...firstDay));
  const replay = values.slice(from, from + days * SEASON);
  const seed = values.slice(from - SEED_DAYS * SEASON, from);
  const scale = (PEAK_OVER_INITIAL * INITIAL_PER_SEC) / Math.max(...replay);
  return { seed: seed.map((v) => v * scale), replay: replay.map((v) => Math.round(v * scale)), scale, from };
}

/** Writes the seed as the steps before `start`, under a member id of its own. */
async function writeSeed(d: Deployment, seed: number[], start: number): Promise<void> {
  const client = createClient({ brokers: d.ready.brokers.split(','), clientId: GATEWAY_CLIENT_ID });
  try {
    const producer = client.producer();
    // The gateway creates the topic at its start; a produce before that is retried by the producer.
    for (let i = 0; i < seed.length; i += SEED_BATCH) {
      const batch = seed.slice(i, i + SEED_BATCH).map((v, k) => {
        const t = start - (seed.length - (i + k)) * STEP_MS;
        return encodeIngressStep({ member: 'bench-seed', t, stepMs: STEP_MS, records: v, recordsMax: v, bytes: v * 40, bytesMax: v * 40 });
      });
      await producer.send(INGRESS_HISTORY_TOPIC, batch, { partition: 0 });
    }
    await producer.close();
  } finally {
    await client.close();
  }
}

async function waitFor<T>(what: string, ms: number, fn: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    await sleep(500);
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}`);
}

async function oneRun(prewarm: boolean, trafficDir: string, days: number, progress: (line: string) => void): Promise<LiveRun> {
  const { seed, replay } = sliceOf(trafficDir, days);
  const d = await startDeployment({
    controller: 'edgeq',
    brokers: 1,
    partitions: 4,
    replicationFactor: 1,
    env: {
      EDGEQ_INGRESS_STEP_MS: String(STEP_MS),
      EDGEQ_PLANNER_SEASON_STEPS: String(SEASON),
      EDGEQ_PLANNER_LEAD_MS: String(LEAD_STEPS * STEP_MS),
      EDGEQ_PLANNER_PREWARM: prewarm ? 'on' : 'off',
      EDGEQ_LIMITER_INITIAL_PER_SEC: String(INITIAL_PER_SEC),
    },
  });
  try {
    // The seed ends where the replay starts, SEED_LEAD_MS ahead: its last steps are in the future
    // and close one by one as time passes (the gateway's own idle steps add zeros to them), so
    // the history is the seed then the replay, with no idle gap between them to shift the days.
    const start = (Math.floor((Date.now() + SEED_LEAD_MS) / STEP_MS) + 1) * STEP_MS;
    await writeSeed(d, seed, start);
    progress(`${prewarm ? 'prewarm' : 'controllerOnly'}: ${seed.length} seed steps written; waiting for the planner's model`);
    const model = await waitFor('the planner to select a model on the seeded history', MODEL_WAIT_MS, async () => {
      const r = await call(`${d.gateway}/v1/capacity`);
      const body = JSON.parse(r.text) as CapacityBody;
      return r.status === 200 && body.model.trainedAt !== null && body.model.backtestMase !== null ? body.model : undefined;
    });
    const late = Date.now() - start;
    if (late > 0) throw new Error(`the planner selected its model ${late} ms after the seed's end: raise SEED_LEAD_MS (the replay would follow an idle gap)`);
    progress(`${prewarm ? 'prewarm' : 'controllerOnly'}: model ${JSON.stringify(model)}; replaying ${replay.length} steps from the seed's end`);
    return await replayThrough(d, replay, start, prewarm, progress);
  } finally {
    await stopDeployments();
  }
}

async function replayThrough(d: Deployment, replay: number[], t0: number, prewarm: boolean, progress: (line: string) => void): Promise<LiveRun> {
  const sender = new GatewaySender({ gateway: d.gateway, topic: d.topic, apiKey: null, valueBytes: 40 });
  const hist = newHistogram();
  const perStep = replay.map(() => ({ ok: 0, refused: 0, other: 0 }));
  let inFlight = 0;
  const pending: Promise<void>[] = [];
  try {
    for (let i = 0; i < replay.length; i++) {
      const n = replay[i]!;
      const stepStart = t0 + i * STEP_MS;
      for (let k = 0; k < n; k++) {
        const due = stepStart + (k * STEP_MS) / n;
        const wait = due - Date.now();
        if (wait > 2) await sleep(wait);
        const counts = perStep[i]!;
        if (inFlight >= IN_FLIGHT_MAX) {
          counts.other++;
          continue;
        }
        inFlight++;
        pending.push(
          sender.send().then((a: Answer) => {
            inFlight--;
            if (a.outcome === 'ok') {
              counts.ok++;
              hist.recordValue(Math.max(1, Math.round((Date.now() - due) * 1000)));
            } else if (a.outcome === 'throttled') counts.refused++;
            else counts.other++;
          }),
        );
      }
      if (i % 48 === 47) progress(`${prewarm ? 'prewarm' : 'controllerOnly'}: day ${(i + 1) / 48} replayed`);
    }
    await Promise.all(pending);
  } finally {
    sender.close();
  }
  const cap = JSON.parse((await call(`${d.gateway}/v1/capacity`)).text) as CapacityBody;
  let refusedDuringRamps = 0;
  let rampSteps = 0;
  for (let i = 1; i < replay.length; i++) {
    if (replay[i]! > replay[i - 1]!) {
      rampSteps++;
      refusedDuringRamps += perStep[i]!.refused;
    }
  }
  const sum = (f: (c: { ok: number; refused: number; other: number }) => number) => perStep.reduce((n, c) => n + f(c), 0);
  if (process.env.EDGEQ_BENCH_PRESCALE_DEBUG) progress(`${prewarm ? 'prewarm' : 'controllerOnly'} steps [demand, ok, refused, other]: ${JSON.stringify(perStep.map((c, i) => [replay[i], c.ok, c.refused, c.other]))}`);
  return {
    refusedDuringRamps,
    p99Ms: hist.getValueAtPercentile(99) / 1000,
    refused: sum((c) => c.refused),
    admitted: sum((c) => c.ok),
    other: sum((c) => c.other),
    rampSteps,
    model: cap.model,
  };
}

/** The live part: both runs, and the target (pre-warm refuses at least 50% fewer during ramps, admitted p99 no worse). */
export async function runPrescaleLive(o: { trafficDir: string; progress: (line: string) => void }): Promise<Record<string, unknown>> {
  const days = Number(process.env.EDGEQ_BENCH_PRESCALE_LIVE_DAYS ?? REPLAY_DAYS_DEFAULT);
  if (!Number.isInteger(days) || days < 1 || days > 42) throw new Error(`EDGEQ_BENCH_PRESCALE_LIVE_DAYS must be an integer in [1, 42], got ${process.env.EDGEQ_BENCH_PRESCALE_LIVE_DAYS}`);
  const { scale, from } = sliceOf(o.trafficDir, days);
  const controllerOnly = await oneRun(false, o.trafficDir, days, o.progress);
  o.progress(`controllerOnly: ${JSON.stringify(controllerOnly)}`);
  const prewarm = await oneRun(true, o.trafficDir, days, o.progress);
  o.progress(`prewarm: ${JSON.stringify(prewarm)}`);
  const fewer = controllerOnly.refusedDuringRamps === 0 ? null : 1 - prewarm.refusedDuringRamps / controllerOnly.refusedDuringRamps;
  return {
    trace: TRACE,
    days,
    /** The slice's first row (the first test day's trough). */
    fromRow: from,
    stepMs: STEP_MS,
    leadSteps: LEAD_STEPS,
    initialPerSec: INITIAL_PER_SEC,
    peakPerSec: PEAK_OVER_INITIAL * INITIAL_PER_SEC,
    scale,
    seedDays: SEED_DAYS,
    controllerOnly,
    prewarm,
    targets: {
      refusedDuringRampsFewer: { description: 'pre-warm refuses at least 50% fewer legitimate requests during ramps', value: fewer, pass: fewer !== null && fewer >= 0.5 },
      p99NoWorse: { description: 'admitted p99 with pre-warm no worse than the controller alone (10% or 1 ms of noise allowed)', value: { controllerOnly: controllerOnly.p99Ms, prewarm: prewarm.p99Ms }, pass: prewarm.p99Ms <= Math.max(controllerOnly.p99Ms * 1.1, controllerOnly.p99Ms + 1) },
    },
  };
}
