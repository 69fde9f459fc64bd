/**
 * Where drill reports are kept (issue 16): one folder (`<dataDir>/drills/` of the deployment),
 * `<id>.json` for a finished drill's report and `<id>.progress.json` while it runs. Written
 * atomically (a temporary name, then rename), so a reader never sees half a report; bounded to
 * DRILL_REPORTS_MAX reports (the oldest go). Ids follow DRILL_ID strictly, so an id from a URL
 * can never name a file outside the folder.
 */
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EdgeqError } from '../../src/core/index.ts';
import type { DrillReport } from '../report/index.ts';
import type { DrillProgress } from '../runner/types.ts';

/** A drill's id: `<yyyymmddThhmmss>-<scenario or chaos>-<4 hex>`. */
export const DRILL_ID = /^\d{8}T\d{6}-[a-z][a-z-]{0,31}-[0-9a-f]{4}$/;
/** Reports kept; saving one more removes the oldest. */
export const DRILL_REPORTS_MAX = 200;
/** Largest report file read back (a report's timeline is bounded; this refuses a stray huge file). */
export const DRILL_FILE_BYTES_MAX = 16 * 1024 * 1024;

/** What the progress file holds. */
export type StoredProgress = DrillProgress & { readonly scenario: string; readonly region: string | null; readonly startedAt: string };

/** One drill as `get` returns it. */
export interface StoredDrill {
  readonly id: string;
  readonly state: 'running' | 'done';
  readonly progress?: StoredProgress;
  readonly report?: DrillReport;
}

/** One line of the list (newest first). */
export interface DrillSummary {
  readonly id: string;
  readonly state: 'running' | 'done';
  readonly scenario: string;
  readonly region: string | null;
  readonly startedAt: string;
  readonly verdict: 'pass' | 'fail' | null;
  readonly detectMs: number | null;
  readonly recoverMs: number | null;
  readonly convergeMs: number | null;
  readonly lost: number | null;
}

const REPORT = '.json';
const PROGRESS = '.progress.json';

function checkId(id: string): void {
  if (!DRILL_ID.test(id)) throw new EdgeqError('INVALID_ARGUMENT', `a drill id looks like 20261201T120000-leader-kill-0a1b, got "${id.slice(0, 80)}"`, { details: { field: 'id' } });
}

export class DrillStore {
  constructor(readonly dir: string) {}

  /** A new id from the start time (UTC), the scenario and 4 hex digits. */
  static newId(scenario: string, startedAtMs: number, hex4: string): string {
    const stamp = new Date(startedAtMs).toISOString().replace(/[-:]/g, '').slice(0, 15);
    const id = `${stamp}-${scenario}-${hex4}`;
    checkId(id);
    return id;
  }

  async save(id: string, report: DrillReport): Promise<void> {
    checkId(id);
    await this.write(`${id}${REPORT}`, report);
    await rm(join(this.dir, `${id}${PROGRESS}`), { force: true });
    await this.prune();
  }

  async saveProgress(id: string, progress: StoredProgress): Promise<void> {
    checkId(id);
    await this.write(`${id}${PROGRESS}`, progress);
  }

  /** The drill, done (its report) or running (its progress); NOT_FOUND when neither file exists. */
  async get(id: string): Promise<StoredDrill> {
    checkId(id);
    const report = await this.read<DrillReport>(`${id}${REPORT}`);
    if (report) return { id, state: 'done', report };
    const progress = await this.read<StoredProgress>(`${id}${PROGRESS}`);
    if (progress) return { id, state: 'running', progress };
    throw new EdgeqError('NOT_FOUND', `no drill ${id}`, { details: { id } });
  }

  /** Every drill kept, newest first; unreadable files are skipped and counted. */
  async list(): Promise<{ drills: DrillSummary[]; unreadable: number }> {
    const ids = await this.ids();
    const drills: DrillSummary[] = [];
    let unreadable = 0;
    for (const id of ids) {
      try {
        const d = await this.get(id);
        if (d.report) {
          const r = d.report;
          drills.push({ id, state: 'done', scenario: r.scenario, region: r.region, startedAt: r.startedAt, verdict: r.verdict, detectMs: r.detectMs, recoverMs: r.recoverMs, convergeMs: r.convergeMs, lost: r.lost });
        } else {
          const p = d.progress!;
          drills.push({ id, state: 'running', scenario: p.scenario, region: p.region, startedAt: p.startedAt, verdict: null, detectMs: null, recoverMs: null, convergeMs: null, lost: null });
        }
      } catch {
        unreadable++;
      }
    }
    return { drills, unreadable };
  }

  /** Ids with a file in the folder, newest first (ids start with their time). */
  private async ids(): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const ids = new Set<string>();
    for (const n of names) {
      const id = n.endsWith(PROGRESS) ? n.slice(0, -PROGRESS.length) : n.endsWith(REPORT) ? n.slice(0, -REPORT.length) : '';
      if (DRILL_ID.test(id)) ids.add(id);
    }
    return [...ids].sort().reverse();
  }

  private async prune(): Promise<void> {
    const ids = await this.ids();
    for (const id of ids.slice(DRILL_REPORTS_MAX)) {
      await rm(join(this.dir, `${id}${REPORT}`), { force: true });
      await rm(join(this.dir, `${id}${PROGRESS}`), { force: true });
    }
  }

  private async write(name: string, value: unknown): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const tmp = join(this.dir, `.${name}.${process.pid}.tmp`);
    await writeFile(tmp, `${JSON.stringify(value)}\n`);
    await rename(tmp, join(this.dir, name));
  }

  private async read<T>(name: string): Promise<T | null> {
    let text: string;
    try {
      const buf = await readFile(join(this.dir, name));
      if (buf.length > DRILL_FILE_BYTES_MAX) throw new EdgeqError('INVALID_DATA', `${name} is over ${DRILL_FILE_BYTES_MAX} bytes`);
      text = buf.toString('utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new EdgeqError('INVALID_DATA', `${name} is not valid JSON: ${(err as Error).message}`, { cause: err, details: { file: name } });
    }
  }
}
