/**
 * `/v1/drills` (issue 16): the drill reports this deployment keeps (`GET /v1/drills`, newest
 * first; `GET /v1/drills/{id}`, a report or a running drill's progress) and `POST /v1/drills`,
 * which starts one as a child process `edgeq drill <scenario> --control URL --id ID --json …`,
 * detached from the request (and from this gateway's process group, so a drill that kills this
 * very gateway goes on), its output in `<id>.log` beside the report. One drill at a time per
 * gateway: two drills' faults would blur each other's figures. Every route needs the admin grant
 * on `*`, the reads too: a report's timeline shows the cell's leaders and ISRs and the mesh's
 * members, which /v1/cell and /v1/mesh keep behind that same grant. A gateway started without
 * `--drills-dir` answers 404 on all three; POST without `--drill-control` answers 404 naming it.
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import type { Context, Hono } from 'hono';
import { EdgeqError, edgeqBinPath } from '../core/index.ts';
import { DevControlDriver } from '../../drill/faults/index.ts';
import { SCENARIOS, type ScenarioName } from '../../drill/runner/types.ts';
import { checkDrillRequest, planDrill } from '../../drill/scenarios/index.ts';
import type { DrillStore } from '../../drill/store/index.ts';
import { authorize, type AuthVariables } from './auth.ts';
import { readBody } from './body.ts';
import { parseJsonObject } from './json-body.ts';

/** Longest drill a request may ask for: an hour (the issue's drills run for seconds to minutes). */
export const DRILL_DURATION_S_MAX = 3_600;
/** Highest workload rate a request may ask for, records/s per region to each checked topic. */
export const DRILL_RATE_MAX = 10_000;
/** Seeds are 32-bit (the drill's PRNG), so the same seed replays the same drill. */
export const DRILL_SEED_MAX = 0xffff_ffff;
/** Retry-After of a 409 while a drill runs: drills last seconds to minutes, so ask again in 5 s. */
const DRILL_RUNNING_RETRY_AFTER_MS = 5_000;

const BIN = edgeqBinPath();

/** A started drill process: `exited` resolves with its exit code (null when killed by a signal). */
export interface DrillChild {
  readonly exited: Promise<number | null>;
}

/** Starts `edgeq <argv…>` with stdout and stderr appended to `logFile` (injected: tests use a fake). */
export type DrillSpawner = (argv: readonly string[], logFile: string) => DrillChild;

/** What the drills routes are built from. */
export interface DrillsDeps {
  readonly store: DrillStore;
  /** The deployment's control API (`--drill-control`); null: POST answers 404 naming the flag. */
  readonly control: string | null;
  readonly spawn: DrillSpawner;
  /** The deployment's region names (a POST's `region` must be one of them). */
  readonly regions: () => Promise<readonly string[]>;
  /**
   * The whole request against the deployment, as `edgeq drill` checks it (a scenario between
   * regions on a 1-region deployment, a failover on a 1-broker cell): so a request the drill would
   * refuse is a 400 here and no child is started. Absent: only `regions` is checked.
   */
  readonly check?: (req: DrillRequest) => Promise<void>;
  readonly nowMs?: () => number;
  readonly random?: () => number;
}

/** A drill request, validated whole. */
export interface DrillRequest {
  readonly scenario: ScenarioName;
  readonly region?: string;
  readonly durationS?: number;
  readonly rate?: number;
  readonly seed?: number;
}

const FIELDS = new Set(['scenario', 'region', 'durationS', 'rate', 'seed']);

function intField(body: Record<string, unknown>, field: string, min: number, max: number): number | undefined {
  const v = body[field];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) {
    throw new EdgeqError('INVALID_ARGUMENT', `"${field}" must be an integer in [${min}, ${max}], got ${JSON.stringify(v)}`, { details: { field } });
  }
  return v;
}

/** Parses a POST body: every field checked, unknown ones refused, before anything starts. */
export function parseDrillRequest(body: Buffer): DrillRequest {
  const doc = parseJsonObject(body);
  const unknown = Object.keys(doc).filter((k) => !FIELDS.has(k));
  if (unknown.length > 0) throw new EdgeqError('INVALID_ARGUMENT', `unknown field(s) ${unknown.map((k) => JSON.stringify(k)).join(', ')}; a drill takes ${[...FIELDS].join(', ')}`, { details: { field: unknown[0] } });
  const { scenario, region } = doc;
  if (typeof scenario !== 'string' || !(SCENARIOS as readonly string[]).includes(scenario)) {
    throw new EdgeqError('INVALID_ARGUMENT', `"scenario" must be one of ${SCENARIOS.join(', ')}, got ${JSON.stringify(scenario)?.slice(0, 100)}`, { details: { field: 'scenario' } });
  }
  if (region !== undefined && (typeof region !== 'string' || !/^[a-z0-9-]{1,63}$/.test(region))) {
    throw new EdgeqError('INVALID_ARGUMENT', `"region" must be a region name ([a-z0-9-]{1,63}), got ${JSON.stringify(region)?.slice(0, 100)}`, { details: { field: 'region' } });
  }
  const durationS = intField(doc, 'durationS', 1, DRILL_DURATION_S_MAX);
  const rate = intField(doc, 'rate', 1, DRILL_RATE_MAX);
  const seed = intField(doc, 'seed', 0, DRILL_SEED_MAX);
  return {
    scenario: scenario as ScenarioName,
    ...(region !== undefined ? { region: region as string } : {}),
    ...(durationS !== undefined ? { durationS } : {}),
    ...(rate !== undefined ? { rate } : {}),
    ...(seed !== undefined ? { seed } : {}),
  };
}

/** The `edgeq drill` command line of a request. */
export function drillArgv(req: DrillRequest, control: string, id: string): string[] {
  return [
    'drill', req.scenario, '--control', control, '--id', id, '--json',
    ...(req.region !== undefined ? ['--region', req.region] : []),
    ...(req.durationS !== undefined ? ['--duration-s', String(req.durationS)] : []),
    ...(req.rate !== undefined ? ['--rate', String(req.rate)] : []),
    ...(req.seed !== undefined ? ['--seed', String(req.seed)] : []),
  ];
}

/**
 * The real spawner: `node bin/edgeq.js drill …` like the supervisor starts services, detached in
 * its own process group (a drill that kills this gateway must not die with it), output appended
 * to the log file; the gateway does not wait for it to exit before it may stop.
 */
export const spawnDrillChild: DrillSpawner = (argv, logFile) => {
  const fd = openSync(logFile, 'a');
  try {
    const child = spawn(process.execPath, [BIN, ...argv], { detached: true, stdio: ['ignore', fd, fd], env: process.env });
    const exited = new Promise<number | null>((resolve) => {
      child.once('exit', (code) => resolve(code));
      child.once('error', () => resolve(null));
    });
    child.unref();
    return { exited };
  } finally {
    // The child holds its own copy of the descriptor.
    closeSync(fd);
  }
};

/** The request checked against the deployment behind a control API, as the drill itself will check it. */
export function checkFromControl(control: string): (req: DrillRequest) => Promise<void> {
  return async (req) => {
    planDrill(req, await new DevControlDriver(control).deployment());
  };
}

/** The region names of the deployment behind a control API (its GET /v1/dev/deployment). */
export function regionsFromControl(control: string): () => Promise<readonly string[]> {
  return async () => (await new DevControlDriver(control).deployment()).regions.map((r) => r.region);
}

const noDrills = () => new EdgeqError('NOT_FOUND', 'this gateway keeps no drill reports (start it with --drills-dir)');

/** Adds GET /v1/drills, GET /v1/drills/{id} and POST /v1/drills to `app`. */
export function registerDrillsRoutes(
  app: Hono<{ Variables: AuthVariables }>,
  deps: { drills: DrillsDeps | null | undefined; bodyBytesMax: number; requireJson: (c: Context<{ Variables: AuthVariables }>) => void },
): void {
  /** The drill this gateway started and that has not exited yet ('starting': being checked and spawned). */
  let running: string | null = null;

  app.get('/v1/drills', async (c) => {
    authorize(c, 'admin', '*');
    if (!deps.drills) throw noDrills();
    return c.json({ drills: (await deps.drills.store.list()).drills });
  });

  app.get('/v1/drills/:id', async (c) => {
    authorize(c, 'admin', '*');
    if (!deps.drills) throw noDrills();
    return c.json(await deps.drills.store.get(c.req.param('id')));
  });

  app.post('/v1/drills', async (c) => {
    authorize(c, 'admin', '*');
    const d = deps.drills;
    if (!d) throw noDrills();
    if (d.control === null) throw new EdgeqError('NOT_FOUND', 'this gateway cannot start drills: start it with --drill-control URL (the deployment\'s control API)', { details: { flag: '--drill-control' } });
    deps.requireJson(c);
    const req = parseDrillRequest(await readBody(c, deps.bodyBytesMax));
    if (running !== null) {
      throw new EdgeqError('DRILL_RUNNING', `drill ${running === 'starting' ? '(starting)' : `"${running}"`} is still running; one drill at a time per gateway`, { details: { retryAfterMs: DRILL_RUNNING_RETRY_AFTER_MS, ...(running === 'starting' ? {} : { id: running }) } });
    }
    // Taken before the first await below, so two requests at once cannot both start one.
    running = 'starting';
    let id: string;
    try {
      // The same ranges as the CLI (one rule: drill/scenarios), then the deployment's own checks.
      checkDrillRequest(req);
      if (d.check) await d.check(req);
      else if (req.region !== undefined) {
        const regions = await d.regions();
        if (!regions.includes(req.region)) throw new EdgeqError('INVALID_ARGUMENT', `"region" ${JSON.stringify(req.region)} is not a region of this deployment (${regions.join(', ')})`, { details: { field: 'region' } });
      }
      id = d.store.newId(req.scenario, (d.nowMs ?? Date.now)(), d.random ?? Math.random);
      // There before the child starts, so the Location answers at once (running, phase connect).
      await d.store.saveProgress(id, { state: 'running', phase: 'connect', elapsedMs: 0, acked: 0, detail: 'started by the gateway' });
      const child = d.spawn(drillArgv(req, d.control, id), d.store.logPath(id));
      running = id;
      const startedId = id;
      void child.exited.then(async (code) => {
        running = null;
        // A drill that ended without its report (bad input, a crash): say so instead of "running" forever.
        const now = await d.store.get(startedId).catch(() => null);
        if (now?.state === 'running') {
          await d.store
            .saveProgress(startedId, { state: 'running', phase: 'done', elapsedMs: now.progress?.elapsedMs ?? 0, acked: now.progress?.acked ?? 0, detail: `the drill exited (code ${code ?? 'signal'}) without a report; its output is in ${startedId}.log` })
            .catch(() => undefined);
        }
      });
    } catch (err) {
      running = null;
      throw err;
    }
    c.header('location', `/v1/drills/${id}`);
    return c.json({ id, state: 'running' }, 202);
  });
}
