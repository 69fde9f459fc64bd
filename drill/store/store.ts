/**
 * The drill report store (issue 16): one folder (`<dataDir>/drills/`) that `edgeq drill` writes
 * into and the gateway's `/v1/drills` reads. Per drill: `<id>.progress.json` while it runs,
 * `<id>.json` (the report) once done, `<id>.log` (the child's output when the gateway started it).
 * Every write is a temporary file (`.<name>.<pid>.<n>.tmp`, hidden, never read) renamed over the
 * real name, so a reader sees the old file or the new one, never half of one. The folder keeps
 * the newest DRILL_REPORTS_MAX drills; a save removes the oldest beyond it.
 */
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EdgeqError } from '../../src/core/index.ts';
import type { DrillReport } from '../report/index.ts';
import type { DrillProgress } from '../runner/types.ts';
import { checkDrillId, DRILL_ID_PATTERN, newDrillId } from './id.ts';

/** Drills kept; a save removes the oldest beyond it (200 reports of ~50 KiB: ~10 MiB of disk). */
export const DRILL_REPORTS_MAX = 200;
/**
 * Largest file read back: 16 MiB holds ~100k timeline events of ~150 bytes, far beyond any drill's;
 * a bigger file is treated as corrupt rather than read into memory.
 */
export const DRILL_FILE_BYTES_MAX = 16 * 1024 * 1024;

/** The progress file's content: the runner's progress of a drill still running. */
export type StoredProgress = DrillProgress & { readonly state: 'running' };

/** One drill as `get` returns it. */
export interface StoredDrill {
  readonly id: string;
  /** done once the report is there, or once the progress says the drill ended (phase `done`) without one. */
  readonly state: 'running' | 'done';
  readonly progress?: StoredProgress;
  readonly report?: DrillReport;
}

/** One line of `list`; the report's fields are null while the drill runs. */
export interface DrillSummary {
  readonly id: string;
  readonly scenario: string;
  readonly region: string | null;
  readonly startedAt: string;
  readonly verdict: 'pass' | 'fail' | null;
  readonly state: 'running' | 'done';
  readonly detectMs: number | null;
  readonly recoverMs: number | null;
  readonly convergeMs: number | null;
  readonly lost: number | null;
}

const reportFile = (id: string) => `${id}.json`;
const progressFile = (id: string) => `${id}.progress.json`;
const logFile = (id: string) => `${id}.log`;
/** `<id>.json` or `<id>.progress.json` → the id. */
const FILE_PATTERN = /^(.+?)(\.progress)?\.json$/;

let tmpCounter = 0;

function isReport(v: unknown): v is DrillReport {
  const r = v as Partial<DrillReport> | null;
  return typeof r === 'object' && r !== null && typeof r.scenario === 'string' && typeof r.startedAt === 'string' && (r.verdict === 'pass' || r.verdict === 'fail') && typeof r.lost === 'number';
}

function isProgress(v: unknown): v is StoredProgress {
  const p = v as Partial<StoredProgress> | null;
  return typeof p === 'object' && p !== null && p.state === 'running' && typeof p.phase === 'string' && typeof p.elapsedMs === 'number' && typeof p.acked === 'number';
}

/** The reports and progress of drills, in one folder. */
export class DrillStore {
  constructor(readonly dir: string) {}

  /** A new id (`<yyyymmddThhmmss>-<scenario>-<4 hex>`). */
  newId(scenario: string, startedAtMs: number, random: () => number = Math.random): string {
    return newDrillId(scenario, startedAtMs, random);
  }

  /** Where the child's stdout and stderr go when the gateway starts the drill. */
  logPath(id: string): string {
    checkDrillId(id);
    return join(this.dir, logFile(id));
  }

  /** Saves the report (atomically), drops the progress file, and removes the oldest drills beyond the bound. */
  async save(id: string, report: DrillReport): Promise<void> {
    checkDrillId(id);
    await this.writeAtomic(reportFile(id), `${JSON.stringify(report, null, 2)}\n`);
    // After the report is in place: a reader never finds neither file.
    await rm(join(this.dir, progressFile(id)), { force: true });
    await this.prune(id);
  }

  /** Saves a running drill's progress (atomically). */
  async saveProgress(id: string, progress: StoredProgress): Promise<void> {
    checkDrillId(id);
    if (progress.state !== 'running') throw new EdgeqError('INVALID_ARGUMENT', `progress is saved while a drill runs (state "running"), got ${JSON.stringify(progress.state)}`);
    await this.writeAtomic(progressFile(id), `${JSON.stringify(progress)}\n`);
  }

  /** The drill: NOT_FOUND when neither file is there, STORAGE_ERROR when the one there is corrupt. */
  async get(id: string): Promise<StoredDrill> {
    checkDrillId(id);
    const report = await this.read(reportFile(id), isReport);
    if (report !== undefined) return { id, state: 'done', report };
    const progress = await this.read(progressFile(id), isProgress);
    if (progress !== undefined) return { id, state: progress.phase === 'done' ? 'done' : 'running', progress };
    throw new EdgeqError('NOT_FOUND', `no drill "${id}" in ${this.dir}`, { details: { id } });
  }

  /** The newest DRILL_REPORTS_MAX drills, newest first; corrupt files are skipped and counted. */
  async list(): Promise<{ drills: DrillSummary[]; corrupt: number }> {
    const drills: DrillSummary[] = [];
    let corrupt = 0;
    for (const id of (await this.ids()).reverse().slice(0, DRILL_REPORTS_MAX)) {
      try {
        drills.push(summaryOf(await this.get(id)));
      } catch (err) {
        // Gone between the listing and the read (pruned by a concurrent save): not corrupt.
        if (err instanceof EdgeqError && err.code === 'NOT_FOUND') continue;
        corrupt++;
      }
    }
    return { drills, corrupt };
  }

  /** Ids with a report or a progress file, oldest first (ids sort by start time). */
  private async ids(): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw new EdgeqError('STORAGE_ERROR', `cannot list ${this.dir}: ${(err as Error).message}`, { cause: err });
    }
    const ids = new Set<string>();
    for (const name of names) {
      const m = FILE_PATTERN.exec(name);
      if (m && DRILL_ID_PATTERN.test(m[1]!)) ids.add(m[1]!);
    }
    return [...ids].sort();
  }

  private async prune(keep: string): Promise<void> {
    const ids = await this.ids();
    const excess = ids.length - DRILL_REPORTS_MAX;
    for (const id of ids.filter((i) => i !== keep).slice(0, Math.max(0, excess))) {
      for (const f of [reportFile(id), progressFile(id), logFile(id)]) await rm(join(this.dir, f), { force: true });
    }
  }

  /** The parsed file; undefined when it is not there; STORAGE_ERROR when it is not what it should be. */
  private async read<T>(name: string, valid: (v: unknown) => v is T): Promise<T | undefined> {
    const path = join(this.dir, name);
    let text: string;
    try {
      const size = (await stat(path)).size;
      if (size > DRILL_FILE_BYTES_MAX) throw new EdgeqError('STORAGE_ERROR', `${path} is ${size} bytes, over the ${DRILL_FILE_BYTES_MAX} a drill file may be`, { retriable: false, details: { file: path } });
      text = await readFile(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      if (err instanceof EdgeqError) throw err;
      throw new EdgeqError('STORAGE_ERROR', `cannot read ${path}: ${(err as Error).message}`, { cause: err, details: { file: path } });
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (err) {
      throw new EdgeqError('STORAGE_ERROR', `${path} is corrupt (not JSON: ${(err as Error).message})`, { cause: err, retriable: false, details: { file: path } });
    }
    if (!valid(doc)) throw new EdgeqError('STORAGE_ERROR', `${path} is corrupt (not a drill ${name.endsWith('.progress.json') ? 'progress' : 'report'})`, { retriable: false, details: { file: path } });
    return doc;
  }

  private async writeAtomic(name: string, text: string): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    // Hidden and unique per process and write: never listed, never read, never clashes with a concurrent save.
    const tmp = join(this.dir, `.${name}.${process.pid}.${++tmpCounter}.tmp`);
    try {
      await writeFile(tmp, text, { flag: 'wx' });
      await rename(tmp, join(this.dir, name));
    } catch (err) {
      await rm(tmp, { force: true });
      throw new EdgeqError('STORAGE_ERROR', `cannot write ${join(this.dir, name)}: ${(err as Error).message}`, { cause: err });
    }
  }
}

function summaryOf(d: StoredDrill): DrillSummary {
  const r = d.report;
  if (r) return { id: d.id, scenario: r.scenario, region: r.region, startedAt: r.startedAt, verdict: r.verdict, state: 'done', detectMs: r.detectMs, recoverMs: r.recoverMs, convergeMs: r.convergeMs, lost: r.lost };
  // A drill still running: what its id says (the scenario, the start to the second).
  const { scenario, startedAt } = checkDrillId(d.id);
  return { id: d.id, scenario, region: null, startedAt, verdict: null, state: d.state, detectMs: null, recoverMs: null, convergeMs: null, lost: null };
}

/** The store of `<dataDir>/drills/`. */
export function drillStoreOf(dataDir: string): DrillStore {
  return new DrillStore(join(dataDir, 'drills'));
}

/** Saves a drill's report into `<dataDir>/drills/` (what `edgeq drill` calls at the end). */
export function saveDrill(dataDir: string, id: string, report: DrillReport): Promise<void> {
  return drillStoreOf(dataDir).save(id, report);
}

/** Saves a running drill's progress into `<dataDir>/drills/` (what `edgeq drill` calls as it goes). */
export function saveDrillProgress(dataDir: string, id: string, progress: DrillProgress): Promise<void> {
  return drillStoreOf(dataDir).saveProgress(id, { ...progress, state: 'running' });
}
