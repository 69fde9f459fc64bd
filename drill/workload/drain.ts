/**
 * The drain: after the heal, every partition of both checked topics in every region is read whole
 * through the region's gateway (offset 0 to the high watermark, in pages), each record's value
 * and, on global topics, its origin region and origin offset. A region that does not answer is
 * tried again DRAIN_REGION_ATTEMPTS times; one that never does is named in `undrained` (and is
 * absent from `regions`), so the checker can say which region it could not check.
 */
import { EdgeqError, systemClock, type Clock } from '../../src/core/index.ts';
import type { CheckedTopic, Drain, DrainedRecord } from '../types.ts';
import { problemCode, requestJson, sleepOn, type FetchLike, type GatewayHttpOptions } from './http.ts';
import type { WorkloadRegion } from './workload.ts';

/** Records per drain page (the gateway's recordsMax is 10 000). */
export const DRAIN_PAGE_RECORDS = 1_000;
/** Pages per partition at most: 100 000 × 1 000 records is far above any run's PRODUCED_RECORDS_MAX. */
export const DRAIN_PAGES_MAX = 100_000;
/** One page not answered within this fails the region's attempt. */
export const DRAIN_REQUEST_TIMEOUT_MS = 10_000;
/** Attempts per region before it is reported undrained. */
export const DRAIN_REGION_ATTEMPTS = 5;
/** Pause before attempt n+1 is n × this (1, 2, 3, 4 s: ~10 s for a region to come back). */
export const DRAIN_RETRY_BACKOFF_MS = 1_000;
/** Empty pages in a row tolerated below the high watermark before the attempt fails. */
const DRAIN_EMPTY_PAGES_MAX = 5;

/** Options of `drain`. */
export interface DrainOptions {
  readonly apiKey?: string | null;
  readonly fetch?: FetchLike;
  readonly clock?: Clock;
}

/** A Drain plus the regions that could not be drained. */
export interface DrainResult extends Drain {
  readonly undrained: readonly { readonly region: string; readonly reason: string }[];
}

/** Reads every partition of `topics` in every region whole (see the file comment). */
export async function drain(regions: readonly WorkloadRegion[], topics: readonly CheckedTopic[], o: DrainOptions = {}): Promise<DrainResult> {
  const http: GatewayHttpOptions = { clock: o.clock ?? systemClock, apiKey: o.apiKey ?? null, ...(o.fetch ? { fetch: o.fetch } : {}) };
  const out: { regions: Drain['regions']; highWatermarks: Drain['highWatermarks']; undrained: { region: string; reason: string }[] } = { regions: {}, highWatermarks: {}, undrained: [] };
  await Promise.all(
    regions.map(async (r) => {
      const gateway = r.gateway.replace(/\/+$/, '');
      let reason = '';
      for (let attempt = 1; attempt <= DRAIN_REGION_ATTEMPTS; attempt++) {
        try {
          const got = await drainRegion(r.region, gateway, topics, http);
          out.regions[r.region] = got.records;
          out.highWatermarks[r.region] = got.highWatermarks;
          return;
        } catch (err) {
          reason = err instanceof Error ? err.message : String(err);
          if (attempt < DRAIN_REGION_ATTEMPTS) await sleepOn(http.clock, attempt * DRAIN_RETRY_BACKOFF_MS);
        }
      }
      out.undrained.push({ region: r.region, reason: `${DRAIN_REGION_ATTEMPTS} attempts: ${reason}` });
    }),
  );
  return out;
}

async function drainRegion(region: string, gateway: string, topics: readonly CheckedTopic[], http: GatewayHttpOptions) {
  const records: Record<string, DrainedRecord[][]> = {};
  const highWatermarks: Record<string, number[]> = {};
  for (const t of topics) {
    records[t.name] = [];
    highWatermarks[t.name] = [];
    for (let p = 0; p < t.partitions; p++) {
      const got = await drainPartition(region, gateway, t, p, http);
      records[t.name]!.push(got.records);
      highWatermarks[t.name]!.push(got.highWatermark);
    }
  }
  return { records, highWatermarks };
}

/** One partition from 0 to the high watermark of the last page. Throws when a page fails. */
async function drainPartition(region: string, gateway: string, t: CheckedTopic, partition: number, http: GatewayHttpOptions) {
  const base = `${gateway}/v1/topics/${encodeURIComponent(t.name)}/partitions/${partition}/records`;
  const records: DrainedRecord[] = [];
  let offset = 0;
  let empties = 0;
  for (let page = 0; page < DRAIN_PAGES_MAX; page++) {
    const where = `${region} ${t.name}/${partition} at offset ${offset}`;
    const ans = await requestJson(`${base}?offset=${offset}&maxRecords=${DRAIN_PAGE_RECORDS}&waitMs=0`, { method: 'GET', timeoutMs: DRAIN_REQUEST_TIMEOUT_MS }, http);
    if (ans.kind !== 'response') throw new EdgeqError('TIMEOUT', `drain ${where}: ${ans.kind === 'network' ? ans.code : ans.kind}`, { details: { region } });
    if (ans.status !== 200) throw new EdgeqError('INVALID_DATA', `drain ${where}: HTTP ${ans.status} ${problemCode(ans.body) ?? ''}`.trim(), { details: { region } });
    const body = ans.body as { records?: unknown; nextOffset?: unknown; highWatermark?: unknown } | null;
    if (!body || !Array.isArray(body.records) || typeof body.highWatermark !== 'number' || typeof body.nextOffset !== 'number') throw new EdgeqError('INVALID_DATA', `drain ${where}: not a read answer`, { details: { region } });
    const hwm = body.highWatermark;
    for (const raw of body.records as { offset?: unknown; value?: unknown; originRegion?: unknown; originOffset?: unknown }[]) {
      if (typeof raw?.offset !== 'number') throw new EdgeqError('INVALID_DATA', `drain ${where}: a record without an offset`, { details: { region } });
      const rec: DrainedRecord =
        t.scope === 'global' && typeof raw.originRegion === 'string' && typeof raw.originOffset === 'number'
          ? { offset: raw.offset, value: typeof raw.value === 'string' ? raw.value : '', originRegion: raw.originRegion, originOffset: raw.originOffset }
          : { offset: raw.offset, value: typeof raw.value === 'string' ? raw.value : '' };
      records.push(rec);
    }
    // The answer's nextOffset, never backwards: a reader that moved back could loop for ever.
    offset = Math.max(offset, body.nextOffset);
    if (offset >= hwm) return { records, highWatermark: hwm };
    if (body.records.length === 0) {
      // Empty below the high watermark: the checker's finding if it lasts; asked again a few times.
      if (++empties >= DRAIN_EMPTY_PAGES_MAX) throw new EdgeqError('INVALID_DATA', `drain ${where}: empty answers below the high watermark ${hwm}`, { details: { region } });
    } else empties = 0;
  }
  throw new EdgeqError('INVALID_DATA', `drain ${region} ${t.name}/${partition}: more than ${DRAIN_PAGES_MAX} pages`, { details: { region } });
}
