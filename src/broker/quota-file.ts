/**
 * The quotas of a broker without a cell: `quotas.json` in its data folder, rewritten atomically
 * on every change (as topics.json is, see topic-store.ts), so a crash leaves the old file or the
 * new one, never half of one. A cell keeps its quotas in the arbiter instead (region/cell).
 *
 * The file is read back through the same parser as any quota: a value edited by hand into
 * something invalid stops the broker at start with the file and the field named, rather than
 * running with a quota nobody set.
 */
import { join } from 'node:path';
import { EdgeqError, toEdgeqError } from '../core/index.ts';
import type { Storage } from '../log/index.ts';
import { parseQuota, quotaKey, type Quota } from '../../ratelimit/index.ts';
import { applyChanges, type QuotaChange } from './quota-changes.ts';

export const QUOTAS_FILE = 'quotas.json';
const FORMAT_VERSION = 1;

interface QuotasFile {
  version: number;
  quotas: Quota[];
}

/** Reads and writes quotas.json; callers serialise changes. */
export class QuotaFile {
  private constructor(
    private readonly storage: Storage,
    private readonly path: string,
    private quotas: Map<string, Quota>,
  ) {}

  static async open(storage: Storage, dataDir: string): Promise<QuotaFile> {
    const path = join(dataDir, QUOTAS_FILE);
    const quotas = new Map<string, Quota>();
    if (await storage.exists(path)) {
      let parsed: QuotasFile;
      try {
        parsed = JSON.parse((await storage.readFile(path)).toString('utf8')) as QuotasFile;
      } catch (err) {
        throw new EdgeqError('CORRUPT_LOG', `${path} is not valid JSON; the broker cannot know its quotas`, { cause: err });
      }
      if (parsed === null || parsed.version !== FORMAT_VERSION || !Array.isArray(parsed.quotas)) {
        throw new EdgeqError('CORRUPT_LOG', `${path} has format version ${String(parsed?.version)}, expected ${FORMAT_VERSION}`);
      }
      for (const [i, raw] of parsed.quotas.entries()) {
        try {
          const { tenant, topic, ...limits } = raw;
          const q = parseQuota(tenant, topic, limits);
          quotas.set(quotaKey(q.tenant, q.topic), q);
        } catch (err) {
          const e = toEdgeqError(err);
          throw new EdgeqError('CORRUPT_LOG', `${path}: quota ${i} is invalid: ${e.message}`, { cause: e, details: { ...e.details, file: path } });
        }
      }
    }
    return new QuotaFile(storage, path, quotas);
  }

  /** The quotas stored, by quotaKey. */
  get map(): ReadonlyMap<string, Quota> {
    return this.quotas;
  }

  /** Applies the changes durably: resolved once the new file is in place; on failure nothing changed. */
  async apply(changes: readonly QuotaChange[]): Promise<void> {
    const next = new Map(this.quotas);
    applyChanges(next, changes);
    const sorted = [...next.values()].sort((a, b) => a.tenant.localeCompare(b.tenant) || a.topic.localeCompare(b.topic));
    const file: QuotasFile = { version: FORMAT_VERSION, quotas: sorted };
    await this.storage.writeFileAtomic(this.path, Buffer.from(JSON.stringify(file, null, 2)));
    this.quotas = next;
  }
}
