/**
 * The drill's checked workload (issue 16): in every region, one producer per checked topic writes
 * uniquely numbered records (`acks=all`, one per request, value = id) through the region's gateway
 * at `rate` records/s, and one reader per partition of both topics long-polls them back. Every
 * produce outcome is a ProducedRecord; every poll a PollObservation (the first POLLS_KEPT_MAX).
 */
import { EdgeqError, seededRandom, systemClock, type Clock } from '../../src/core/index.ts';
import type { CheckedTopic, PollObservation } from '../types.ts';
import { requestJson, problemCode, sleepOn, type FetchLike, type GatewayHttpOptions } from './http.ts';
import { Producer, type WorkloadRecord } from './producer.ts';
import { PartitionReader } from './reader.ts';

/** A region of the deployment and its gateway, as `edgeq dev`'s ready line or /v1/dev/processes give them. */
export interface WorkloadRegion {
  readonly region: string;
  readonly gateway: string;
}

/** Default partitions of each checked topic. */
export const WORKLOAD_PARTITIONS_DEFAULT = 4;
/** Most partitions a checked topic may have (each gets a reader per region). */
export const WORKLOAD_PARTITIONS_MAX = 64;
/** Highest rate (records/s per region per topic): one request per record. */
export const WORKLOAD_RATE_MAX = 5_000;
/** Default bound on the run: no record is scheduled after this long. */
export const WORKLOAD_DURATION_MS_DEFAULT = 3_600_000;
/** Most records a run may produce (rate × duration × regions × 2 is checked against it up front). */
export const PRODUCED_RECORDS_MAX = 5_000_000;
/** Poll observations kept; later ones are counted in `pollsDropped`. 200k × ~100 B ≈ 20 MB. */
export const POLLS_KEPT_MAX = 200_000;
/** A produce not answered within this is indeterminate: an acks=all answer takes ms to 100s of ms on a loaded machine, so 10 s is only a gateway or cell that stopped answering. */
export const PRODUCE_TIMEOUT_MS_DEFAULT = 10_000;
/** Bound on a topic becoming visible in every region after ensureTopics creates it. */
export const TOPIC_VISIBLE_MS_MAX = 60_000;
/** Bound on one admin request of ensureTopics. */
const ADMIN_TIMEOUT_MS = 15_000;
/** Pause between checks that a created topic is visible. */
const TOPIC_VISIBLE_POLL_MS = 200;
/** Most regions a workload spans. */
export const WORKLOAD_REGIONS_MAX = 16;

/** What a CheckedWorkload is built from. */
export interface CheckedWorkloadOptions {
  readonly regions: readonly WorkloadRegion[];
  /** The run's global topic (exchanged between regions) and local topic (one per region, same name). */
  readonly globalTopic: string;
  readonly localTopic: string;
  /** Partitions of each topic when ensureTopics creates them; default WORKLOAD_PARTITIONS_DEFAULT. */
  readonly partitions?: number;
  /** Records/s per region, to each of the two topics. */
  readonly rate: number;
  /** Seeds each producer's first partition and schedule phase. */
  readonly seed: number;
  /** No record is scheduled after this long from start(); default WORKLOAD_DURATION_MS_DEFAULT. */
  readonly durationMs?: number;
  readonly apiKey?: string | null;
  /** A produce not answered within this is indeterminate; default PRODUCE_TIMEOUT_MS_DEFAULT. */
  readonly requestTimeoutMs?: number;
  /** Called on every acked record (the drill's first acknowledged write after the fault). */
  readonly onAck?: (region: string, atMs: number) => void;
  /** Poll observations kept; default POLLS_KEPT_MAX (tests lower it). */
  readonly pollsKeptMax?: number;
  /** Run the readers (default true). */
  readonly consume?: boolean;
  readonly clock?: Clock;
  readonly fetch?: FetchLike;
}

/** Progress of one region. */
export interface RegionStats {
  acked: number;
  failed: number;
  indeterminate: number;
  /** Sends again after a 429/503 of the quota or limiter. */
  retries: number;
  /** Records due while no partition was free (not sent). */
  skipped: number;
  inflight: number;
  /** Wall-clock ms of the last ack, or null. */
  lastAckAtMs: number | null;
  /** Polls that failed (no answer or an error answer). */
  readErrors: number;
}

/** Progress of the run. */
export interface WorkloadStats {
  readonly regions: Record<string, RegionStats>;
  readonly acked: number;
  readonly failed: number;
  readonly indeterminate: number;
  readonly polls: number;
  readonly pollsDropped: number;
}

function invalid(message: string, field: string, value: unknown): EdgeqError {
  return new EdgeqError('INVALID_ARGUMENT', message, { details: { field, value } });
}

function checkOptions(o: CheckedWorkloadOptions): { partitions: number; durationMs: number; requestTimeoutMs: number } {
  if (!Array.isArray(o.regions) || o.regions.length === 0 || o.regions.length > WORKLOAD_REGIONS_MAX) throw invalid(`regions must list 1..${WORKLOAD_REGIONS_MAX} {region, gateway}`, 'regions', o.regions);
  const names = new Set<string>();
  for (const r of o.regions) {
    if (typeof r?.region !== 'string' || !/^[a-z0-9][a-z0-9-]*$/.test(r.region)) throw invalid(`region name must be lowercase letters, digits and dashes, got ${JSON.stringify(r?.region)}`, 'regions.region', r?.region);
    if (names.has(r.region)) throw invalid(`region "${r.region}" is listed twice`, 'regions.region', r.region);
    names.add(r.region);
    let url: URL | null = null;
    try {
      url = new URL(r.gateway);
    } catch {
      url = null;
    }
    if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw invalid(`gateway of "${r.region}" must be an http(s) URL, got ${JSON.stringify(r.gateway)}`, 'regions.gateway', r.gateway);
  }
  for (const [field, v] of [['globalTopic', o.globalTopic], ['localTopic', o.localTopic]] as const) {
    if (typeof v !== 'string' || v === '') throw invalid(`${field} must be a non-empty topic name`, field, v);
  }
  if (o.globalTopic === o.localTopic) throw invalid(`globalTopic and localTopic must differ, both are "${o.globalTopic}"`, 'localTopic', o.localTopic);
  if (typeof o.rate !== 'number' || !Number.isFinite(o.rate) || o.rate <= 0 || o.rate > WORKLOAD_RATE_MAX) throw invalid(`rate must be in (0, ${WORKLOAD_RATE_MAX}] records/s, got ${o.rate}`, 'rate', o.rate);
  if (!Number.isSafeInteger(o.seed)) throw invalid(`seed must be an integer, got ${o.seed}`, 'seed', o.seed);
  const partitions = o.partitions ?? WORKLOAD_PARTITIONS_DEFAULT;
  if (!Number.isSafeInteger(partitions) || partitions < 1 || partitions > WORKLOAD_PARTITIONS_MAX) throw invalid(`partitions must be 1..${WORKLOAD_PARTITIONS_MAX}, got ${partitions}`, 'partitions', partitions);
  const durationMs = o.durationMs ?? WORKLOAD_DURATION_MS_DEFAULT;
  if (!Number.isFinite(durationMs) || durationMs <= 0) throw invalid(`durationMs must be > 0, got ${durationMs}`, 'durationMs', durationMs);
  const records = o.rate * (durationMs / 1000) * o.regions.length * 2;
  if (records > PRODUCED_RECORDS_MAX) throw invalid(`rate × duration × regions × 2 = ${Math.ceil(records)} records is over ${PRODUCED_RECORDS_MAX}`, 'durationMs', durationMs);
  const requestTimeoutMs = o.requestTimeoutMs ?? PRODUCE_TIMEOUT_MS_DEFAULT;
  if (!Number.isFinite(requestTimeoutMs) || requestTimeoutMs <= 0) throw invalid(`requestTimeoutMs must be > 0, got ${requestTimeoutMs}`, 'requestTimeoutMs', requestTimeoutMs);
  const kept = o.pollsKeptMax ?? POLLS_KEPT_MAX;
  if (!Number.isSafeInteger(kept) || kept < 0 || kept > POLLS_KEPT_MAX) throw invalid(`pollsKeptMax must be 0..${POLLS_KEPT_MAX}, got ${kept}`, 'pollsKeptMax', kept);
  return { partitions, durationMs, requestTimeoutMs };
}

export class CheckedWorkload {
  private readonly http: GatewayHttpOptions;
  private readonly regions: readonly WorkloadRegion[];
  private readonly partitions: number;
  private readonly durationMs: number;
  private readonly requestTimeoutMs: number;
  private checked: CheckedTopic[];
  private readonly records: WorkloadRecord[] = [];
  private readonly observations: PollObservation[] = [];
  private pollsDropped = 0;
  private readonly perRegion = new Map<string, RegionStats>();
  private producers: Producer[] = [];
  private readers: PartitionReader[] = [];
  private state: 'new' | 'running' | 'stopped' = 'new';

  constructor(private readonly o: CheckedWorkloadOptions) {
    const { partitions, durationMs, requestTimeoutMs } = checkOptions(o);
    this.partitions = partitions;
    this.durationMs = durationMs;
    this.requestTimeoutMs = requestTimeoutMs;
    this.regions = o.regions.map((r) => ({ region: r.region, gateway: r.gateway.replace(/\/+$/, '') }));
    this.http = { clock: o.clock ?? systemClock, apiKey: o.apiKey ?? null, ...(o.fetch ? { fetch: o.fetch } : {}) };
    this.checked = [
      { name: o.globalTopic, scope: 'global', partitions },
      { name: o.localTopic, scope: 'local', partitions },
    ];
    for (const r of this.regions) this.perRegion.set(r.region, { acked: 0, failed: 0, indeterminate: 0, retries: 0, skipped: 0, inflight: 0, lastAckAtMs: null, readErrors: 0 });
  }

  /** The two checked topics with their partition counts (as found by ensureTopics). */
  topics(): CheckedTopic[] {
    return this.checked.map((t) => ({ ...t }));
  }

  /**
   * Creates the global topic through the first region's gateway and waits until every region
   * has it; creates the local topic in each region. An existing topic of the right scope is
   * kept (its partition count is used); one of the other scope is INVALID_ARGUMENT.
   */
  async ensureTopics(): Promise<CheckedTopic[]> {
    const [first] = this.regions;
    const [global, local] = this.checked as [CheckedTopic, CheckedTopic];
    await this.createTopic(first!, global);
    for (const r of this.regions) await this.createTopic(r, local);
    const counts = await Promise.all(this.regions.map((r) => Promise.all([this.visible(r, global), this.visible(r, local)])));
    for (const [i, t] of this.checked.entries()) {
      const seen = new Set(counts.map((c) => c[i]));
      if (seen.size !== 1) throw new EdgeqError('INVALID_DATA', `topic "${t.name}" has different partition counts across regions: ${[...seen].join(', ')}`, { details: { topic: t.name } });
    }
    this.checked = this.checked.map((t, i) => ({ ...t, partitions: counts[0]![i]! }));
    return this.topics();
  }

  private async createTopic(r: WorkloadRegion, t: CheckedTopic): Promise<void> {
    const ans = await requestJson(`${r.gateway}/v1/topics`, { method: 'POST', body: { name: t.name, partitions: t.partitions, scope: t.scope }, timeoutMs: ADMIN_TIMEOUT_MS }, this.http);
    if (ans.kind !== 'response') throw new EdgeqError('TIMEOUT', `creating topic "${t.name}" in ${r.region}: no answer (${ans.kind})`, { details: { region: r.region, topic: t.name } });
    if (ans.status === 201) return;
    if (ans.status === 409 && problemCode(ans.body) === 'TOPIC_ALREADY_EXISTS') {
      const detail = String((ans.body as { detail?: unknown }).detail ?? '');
      // The gateway names both scopes when they differ ("exists with scope local; ... cannot change").
      if (detail.includes('cannot change')) throw invalid(`topic "${t.name}" exists in ${r.region} with the other scope: ${detail}`, t.scope === 'global' ? 'globalTopic' : 'localTopic', t.name);
      return;
    }
    throw new EdgeqError('INVALID_DATA', `creating topic "${t.name}" in ${r.region}: HTTP ${ans.status} ${problemCode(ans.body) ?? ''}`, { details: { region: r.region, topic: t.name, status: ans.status } });
  }

  /** Waits until `r` describes `t`; returns its partition count. */
  private async visible(r: WorkloadRegion, t: CheckedTopic): Promise<number> {
    const clock = this.http.clock;
    const deadline = clock.monotonicMs() + TOPIC_VISIBLE_MS_MAX;
    let last = '';
    while (clock.monotonicMs() < deadline) {
      const ans = await requestJson(`${r.gateway}/v1/topics/${encodeURIComponent(t.name)}`, { method: 'GET', timeoutMs: ADMIN_TIMEOUT_MS }, this.http);
      if (ans.kind === 'response' && ans.status === 200) {
        const parts = (ans.body as { partitions?: unknown } | null)?.partitions;
        if (Array.isArray(parts) && parts.length > 0) return parts.length;
      }
      last = ans.kind === 'response' ? `HTTP ${ans.status}` : ans.kind;
      await sleepOn(clock, TOPIC_VISIBLE_POLL_MS);
    }
    throw new EdgeqError('TIMEOUT', `topic "${t.name}" not visible in ${r.region} after ${TOPIC_VISIBLE_MS_MAX} ms (last: ${last})`, { details: { region: r.region, topic: t.name } });
  }

  /**
   * Deletes the checked topics: the global one through the first region's gateway (the mesh
   * deletes it everywhere, and every region's exchange stops replicating it), the local one in
   * each region. A run that leaves its topics behind leaves the deployment busier than it found
   * it: each global topic is one replicator per partition and other region for good. Returns
   * what could not be deleted (already gone counts as deleted); never throws.
   */
  async deleteTopics(): Promise<string[]> {
    const [first] = this.regions;
    const [global, local] = this.checked as [CheckedTopic, CheckedTopic];
    const failed: string[] = [];
    const del = async (r: WorkloadRegion, t: CheckedTopic) => {
      const ans = await requestJson(`${r.gateway}/v1/topics/${encodeURIComponent(t.name)}`, { method: 'DELETE', timeoutMs: ADMIN_TIMEOUT_MS }, this.http);
      if (ans.kind === 'response' && (ans.status === 204 || ans.status === 200 || ans.status === 404)) return;
      failed.push(`${t.name} in ${r.region}: ${ans.kind === 'response' ? `HTTP ${ans.status} ${problemCode(ans.body) ?? ''}`.trim() : ans.kind}`);
    };
    await del(first!, global);
    await Promise.all(this.regions.map((r) => del(r, local)));
    return failed;
  }

  /** Starts the producers and the readers. */
  start(): void {
    if (this.state !== 'new') throw new EdgeqError('INVALID_ARGUMENT', `the workload was started already (${this.state})`);
    this.state = 'running';
    const random = seededRandom(this.o.seed);
    for (const r of this.regions) {
      const stats = this.perRegion.get(r.region)!;
      for (const t of this.checked) {
        const producer = new Producer({
          region: r.region,
          gateway: r.gateway,
          topic: t,
          kind: t.scope === 'global' ? 'g' : 'l',
          name: 'p0',
          rate: this.o.rate,
          durationMs: this.durationMs,
          firstPartition: Math.floor(random() * t.partitions),
          phase: random(),
          requestTimeoutMs: this.requestTimeoutMs,
          http: this.http,
          onRecord: (rec) => this.onRecord(stats, rec),
        });
        this.producers.push(producer);
        if (this.o.consume ?? true) {
          for (let p = 0; p < t.partitions; p++) {
            this.readers.push(new PartitionReader({ region: r.region, gateway: r.gateway, topic: t.name, partition: p, http: this.http, onPoll: (obs) => this.onPoll(obs), onError: () => stats.readErrors++ }));
          }
        }
      }
    }
    for (const p of this.producers) p.start();
    for (const r of this.readers) r.start();
  }

  private onRecord(stats: RegionStats, rec: WorkloadRecord): void {
    this.records.push(rec);
    const out = rec.outcome;
    if (out.kind === 'acked') {
      stats.acked++;
      stats.lastAckAtMs = Math.max(stats.lastAckAtMs ?? 0, out.atMs);
      this.o.onAck?.(rec.region, out.atMs);
    } else if (out.kind === 'failed') stats.failed++;
    else stats.indeterminate++;
  }

  private onPoll(obs: PollObservation): void {
    if (this.observations.length < (this.o.pollsKeptMax ?? POLLS_KEPT_MAX)) this.observations.push(obs);
    else this.pollsDropped++;
  }

  /** Stops producing, waits for the answers in flight (each bounded by the request timeout), stops the readers. */
  async stop(): Promise<void> {
    if (this.state !== 'running') return;
    this.state = 'stopped';
    await Promise.all(this.producers.map((p) => p.stop()));
    await Promise.all(this.readers.map((r) => r.stop()));
  }

  /** Every record sent so far with its outcome, in the order outcomes arrived. */
  produced(): WorkloadRecord[] {
    return [...this.records];
  }

  /** The poll observations kept (the first pollsKeptMax). */
  polls(): PollObservation[] {
    return [...this.observations];
  }

  stats(): WorkloadStats {
    const regions: Record<string, RegionStats> = {};
    for (const [name, s] of this.perRegion) regions[name] = { ...s, retries: 0, skipped: 0, inflight: 0 };
    for (const p of this.producers) {
      const s = regions[p.region]!;
      s.retries += p.counters.retries;
      s.skipped += p.counters.skipped;
      s.inflight += p.counters.inflight;
    }
    const sum = (k: 'acked' | 'failed' | 'indeterminate') => Object.values(regions).reduce((n, s) => n + s[k], 0);
    return { regions, acked: sum('acked'), failed: sum('failed'), indeterminate: sum('indeterminate'), polls: this.observations.length, pollsDropped: this.pollsDropped };
  }
}
