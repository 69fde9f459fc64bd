/**
 * The gateway's Hono app: health, metrics, topics, produce (JSON, protobuf, raw octets), long-poll
 * reads, SSE streams, consumer-group members and the cell status, in front of one cell through the
 * client library. Routes only parse, check and
 * call the backend; every failure is an EdgeqError that `onGatewayError` turns into problem+json.
 */
import { Hono, type Context } from 'hono';
import type { AcksOption, EdgeqClient, NewTopic, RecordMetadata, TopicPartitionOffset } from '../client/index.ts';
import { EdgeqError } from '../core/index.ts';
import { Acks, encodeMessage, type AcksValue, type ProduceResponse } from '../protocol/index.ts';
import { auth, authorize, type Authenticator, type AuthVariables } from './auth.ts';
import { GatewayBackend } from './backend.ts';
import { mediaType, readBody } from './body.ts';
import { onGatewayError, onGatewayNotFound } from './errors.ts';
import { resolveLimits, type GatewayLimits } from './limits.ts';
import { StreamSlots, streamPartition } from './stream.ts';
import { GatewayMetrics, type GatewayAcksLabel } from './metrics.ts';
import { isPlainObject, parseJsonObject } from './json-body.ts';
import { checkGroupId, GroupMembers, MEMBER_TOPICS_MAX, type JoinRequest } from './groups.ts';
import { noMesh, type GatewayMesh } from './mesh.ts';
import { registerFailoverRoute } from './failover-route.ts';
import { registerQuotaRoutes } from './quota-routes.ts';
import { registerTracingRoutes } from './tracing-route.ts';
import { registerLimiterRoute } from './limiter-route.ts';
import { registerCapacityRoute, type CapacitySource } from './capacity-route.ts';
import { registerPlannerMetrics } from './planner-metrics.ts';
import { registerDrillsRoutes, type DrillsDeps } from './drills-route.ts';
import { createDashboard, registerDashboardRoutes } from '../dashboard/index.ts';
import type { Clock } from '../core/index.ts';
import { registerLimiterMetrics, type AdmissionLimiter, type QuotaEnforcer } from '../../ratelimit/index.ts';
import { traceGroupReceive, traceReceive, traceSend } from '../tracing/index.ts';
import { checkBatches, checkRecords, recordBytes, parseJsonRecords, parseProtobufBatches, parseValueEncoding, toJsonRecord, type GatewayRecord } from './records.ts';

/** What the app is built from. */
export interface GatewayDeps {
  client: EdgeqClient;
  /** null or absent: no auth (the local deployment). */
  auth?: Authenticator | null;
  limits?: Partial<GatewayLimits>;
  /** Prometheus default process metrics in `/metrics`; on by default. */
  processMetrics?: boolean;
  /** The mesh between regions (`/v1/mesh`, global topics); absent: a gateway of one region alone. */
  mesh?: GatewayMesh | null;
  /** The region this gateway serves: the origin shown for records of global topics written here. Default `local`. */
  region?: string;
  /** The quotas enforced on produce (429 over quota) and managed at /v1/quotas; absent: none. */
  quotas?: QuotaEnforcer | null;
  /** The admission limiter of the produce route (issue 14) and `GET /v1/limiter`; absent: none (404 there). */
  limiter?: AdmissionLimiter | null;
  /** The forecast planner (issue 15): `GET /v1/capacity` and its gauges; absent: none (404 there). */
  capacity?: CapacitySource | null;
  /** The drill reports and drill starts (issue 16): `/v1/drills`; absent: none (404 there). */
  drills?: DrillsDeps | null;
  /** The capacity dashboard (issue 17): `/dashboard` and `/v1/dashboard/*`; absent or false: none (404 there). */
  dashboard?: boolean | { clock?: Clock };
}

/** The app plus what it holds open. */
export type GatewayApp = Hono<{ Variables: AuthVariables }> & {
  /** Ends streams, closes group members (they leave their groups), producers and consumers. */
  close(): Promise<void>;
  /** Ends every open SSE stream, so an HTTP server's close is not held open by them. */
  endStreams(): void;
  readonly metrics: GatewayMetrics;
};

type Ctx = Context<{ Variables: AuthVariables }>;

/** Default records per read when `maxRecords` is absent. */
export const READ_RECORDS_DEFAULT = 100;

/**
 * Bound on one /readyz check (the metadata, then a round trip to every leader). A live cell
 * answers in milliseconds; 2 s leaves room for a loaded machine. A probe's own timeout must be
 * above it (Kubernetes' default `timeoutSeconds: 1` is not).
 */
export const READYZ_TIMEOUT_MS = 2_000;

/** Retry-After of a not-ready answer. */
const READYZ_RETRY_AFTER_MS = 1_000;

/** A query or path number: a non-negative safe integer, or INVALID_ARGUMENT naming the parameter. */
function intParam(raw: string | undefined, name: string, o: { fallback?: number; min?: number; max?: number } = {}): number {
  if (raw === undefined || raw === '') {
    if (o.fallback !== undefined) return o.fallback;
    throw new EdgeqError('INVALID_ARGUMENT', `${name} is required`, { details: { parameter: name } });
  }
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n)) throw new EdgeqError('INVALID_ARGUMENT', `${name} must be a non-negative integer, got "${raw}"`, { details: { parameter: name } });
  if ((o.min !== undefined && n < o.min) || (o.max !== undefined && n > o.max)) {
    throw new EdgeqError('INVALID_ARGUMENT', `${name} must be within ${o.min ?? 0}..${o.max ?? Number.MAX_SAFE_INTEGER}, got ${n}`, { details: { parameter: name } });
  }
  return n;
}

/** How long a created topic may take to show in the metadata of the broker a describe reaches. */
const CREATED_VISIBLE_MS_MAX = 5_000;

/** acks=geo's wait when the request names none: the gateway's usual produce bound. */
const GEO_TIMEOUT_MS_DEFAULT = 30_000;
/** Longest acks=geo wait a request may ask for. */
const GEO_TIMEOUT_MS_MAX = 300_000;

function parseAcks(raw: string | undefined): AcksOption | null {
  if (raw === undefined) return null;
  if (raw === '0') return 0;
  if (raw === '1') return 1;
  if (raw === 'all' || raw === '-1') return 'all';
  throw new EdgeqError('INVALID_ARGUMENT', `acks must be 0, 1, all or geo, got "${raw}"`, { details: { parameter: 'acks' } });
}

function acksFromWire(v: AcksValue | undefined): AcksOption | null {
  return v === Acks.NONE ? 0 : v === Acks.LEADER ? 1 : v === Acks.ALL ? 'all' : null;
}

/** A topic to create and its scope (`local`, the default, or `global`: every region). */
function parseNewTopic(body: Buffer): NewTopic & { scope: 'local' | 'global' } {
  const { name, partitions, replicationFactor, config, scope } = parseJsonObject(body);
  if (scope !== undefined && scope !== 'local' && scope !== 'global') throw new EdgeqError('INVALID_ARGUMENT', '"scope" must be "local" or "global"', { details: { field: 'scope' } });
  if (typeof name !== 'string' || name === '') throw new EdgeqError('INVALID_ARGUMENT', '"name" must be a non-empty string');
  if (typeof partitions !== 'number' || !Number.isSafeInteger(partitions) || partitions < 1) throw new EdgeqError('INVALID_ARGUMENT', '"partitions" must be a positive integer');
  if (replicationFactor !== undefined && (typeof replicationFactor !== 'number' || !Number.isSafeInteger(replicationFactor) || replicationFactor < 1)) {
    throw new EdgeqError('INVALID_ARGUMENT', '"replicationFactor" must be a positive integer');
  }
  const cfg: Record<string, string> = {};
  if (config !== undefined) {
    if (!isPlainObject(config)) throw new EdgeqError('INVALID_ARGUMENT', '"config" must be an object of strings');
    for (const [k, v] of Object.entries(config)) {
      if (typeof v !== 'string' && typeof v !== 'number') throw new EdgeqError('INVALID_ARGUMENT', `config "${k}" must be a string`);
      cfg[k] = String(v);
    }
  }
  if ('scope' in cfg) throw new EdgeqError('INVALID_ARGUMENT', 'give the scope as the "scope" field, not in "config"', { details: { field: 'config.scope' } });
  return { name, partitions, ...(replicationFactor !== undefined ? { replicationFactor } : {}), config: cfg, scope: (scope as 'local' | 'global' | undefined) ?? 'local' };
}

function parseJoin(body: Buffer): JoinRequest {
  const { topics, fromBeginning } = parseJsonObject(body);
  if (!Array.isArray(topics) || topics.length === 0 || topics.length > MEMBER_TOPICS_MAX || !topics.every((t) => typeof t === 'string' && t !== '')) {
    throw new EdgeqError('INVALID_ARGUMENT', `"topics" must be an array of 1..${MEMBER_TOPICS_MAX} topic names`);
  }
  if (fromBeginning !== undefined && typeof fromBeginning !== 'boolean') throw new EdgeqError('INVALID_ARGUMENT', '"fromBeginning" must be a boolean');
  return { topics: [...new Set(topics as string[])], fromBeginning: fromBeginning ?? false };
}

function parseCommitOffsets(body: Buffer, recordsMax: number): TopicPartitionOffset[] {
  const { offsets } = parseJsonObject(body);
  if (!Array.isArray(offsets) || offsets.length === 0 || offsets.length > recordsMax) throw new EdgeqError('INVALID_ARGUMENT', `"offsets" must be an array of 1..${recordsMax} {topic, partition, offset}`);
  return offsets.map((o: unknown, i) => {
    const ok = isPlainObject(o) && typeof o['topic'] === 'string' && [o['partition'], o['offset']].every((n) => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0);
    if (!ok) throw new EdgeqError('INVALID_ARGUMENT', `offsets[${i}] must be {topic: string, partition: integer >= 0, offset: integer >= 0}`, { details: { index: i } });
    const r = o as { topic: string; partition: number; offset: number };
    return { topic: r.topic, partition: r.partition, offset: r.offset };
  });
}

function requireJson(c: Ctx): void {
  if (mediaType(c) !== 'application/json') throw new EdgeqError('UNSUPPORTED_MEDIA_TYPE', `expected application/json, got "${c.req.header('content-type') ?? ''}"`);
}

function wantsProtobuf(c: Ctx): boolean {
  return (c.req.header('accept') ?? '').toLowerCase().includes('application/x-protobuf');
}

/** Builds the gateway app over `deps.client`. `close()` closes the producers and consumers it made. */
export function createGatewayApp(deps: GatewayDeps): GatewayApp {
  const limits = resolveLimits(deps.limits);
  const backend = new GatewayBackend(deps.client, limits);
  const region = deps.region ?? 'local';
  const streamSlots = new StreamSlots(limits.streamsMax);
  const groups = new GroupMembers(deps.client, limits);
  const app = new Hono<{ Variables: AuthVariables }>();
  app.onError(onGatewayError);
  app.notFound(onGatewayNotFound);
  const metrics = new GatewayMetrics({ processMetrics: deps.processMetrics ?? true });
  if (deps.limiter) registerLimiterMetrics(metrics.registry, deps.limiter);
  if (deps.capacity) registerPlannerMetrics(metrics.registry, deps.capacity);
  /**
   * Runs a produce and records its latency, and its records and bytes when it succeeded. The
   * limiter (issue 14) admits it first, the request already parsed and checked: a refusal (503)
   * is thrown before anything is sent, so it writes nothing.
   */
  async function observed<T>(c: Ctx, acks: AcksOption, produce: () => Promise<T>, size: { records: number; bytes: number }, unquota: () => void = () => {}): Promise<T> {
    const label: GatewayAcksLabel = acks === 0 ? '0' : acks === 1 ? '1' : 'all';
    let ticket;
    try {
      ticket = deps.limiter?.admit(c.get('principal')?.tenant ?? 'anonymous', size.records);
    } catch (err) {
      // Refused by the limiter after the quota admitted it: a refused request takes nothing.
      unquota();
      throw err;
    }
    const startedMs = performance.now();
    try {
      const out = await produce();
      const ms = performance.now() - startedMs;
      metrics.observeProduce(label, ms, size);
      ticket?.done(true, ms);
      return out;
    } catch (err) {
      const ms = performance.now() - startedMs;
      metrics.observeProduce(label, ms, null);
      ticket?.done(false, ms);
      throw err;
    }
  }
  // The patterns of every app.use below (Hono reports '*' as '/*'): a request whose last match is one of them matched no route.
  app.use('*', metrics.middleware(['*', '/*', '/v1/*']));

  // Scraped without a key, like the probes: it carries no record data.
  app.get('/metrics', async (c) => c.body(await metrics.scrape(), 200, { 'content-type': metrics.contentType }));

  // Probes answer without a key: orchestrators call them.
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  // Ready while the gateway gets answers from the cell for every partition: the metadata, and a
  // round trip to each partition's leader, within READYZ_TIMEOUT_MS (docs/http-api.md, /readyz).
  app.get('/readyz', async (c) => {
    let readiness;
    try {
      readiness = await backend.admin.readiness({ timeoutMs: READYZ_TIMEOUT_MS });
    } catch (err) {
      throw new EdgeqError('BROKER_NOT_AVAILABLE', `the cell did not answer: ${(err as Error).message}`, { cause: err, details: { retryAfterMs: READYZ_RETRY_AFTER_MS } });
    }
    const { leaderless, silentLeaders } = readiness;
    if (leaderless.length > 0) {
      throw new EdgeqError('LEADER_NOT_AVAILABLE', `${leaderless.length} partition(s) have no leader, e.g. ${leaderless[0]!.topic}-${leaderless[0]!.partition}`, {
        details: { leaderless, retryAfterMs: READYZ_RETRY_AFTER_MS },
      });
    }
    if (silentLeaders.length > 0) {
      throw new EdgeqError('BROKER_NOT_AVAILABLE', `broker(s) ${silentLeaders.join(', ')} lead partitions and did not answer within ${READYZ_TIMEOUT_MS} ms`, {
        details: { silentLeaders, retryAfterMs: READYZ_RETRY_AFTER_MS },
      });
    }
    return c.json({ status: 'ready' });
  });

  app.use('/v1/*', auth(deps.auth ?? null));

  app.get('/v1/cell', async (c) => {
    authorize(c, 'admin', '*');
    return c.json(await backend.admin.cellStatus());
  });

  app.get('/v1/mesh', (c) => {
    authorize(c, 'admin', '*');
    if (!deps.mesh) throw new EdgeqError('NOT_FOUND', 'this gateway runs without a mesh agent (start it with --mesh-port)');
    return c.json(deps.mesh.view());
  });

  app.post('/v1/topics', async (c) => {
    requireJson(c);
    const { scope, ...topic } = parseNewTopic(await readBody(c, limits.bodyBytesMax));
    authorize(c, 'admin', topic.name);
    // A topic's scope is fixed at creation: asking for the other scope on an existing name is a
    // conflict that names both, not the plain "already exists" (which would hide the mismatch).
    const existing = await backend.admin.describeTopics([topic.name]).then(
      ([d]) => d,
      () => undefined,
    );
    if (existing) {
      const had = existing.config['scope'] === 'global' ? 'global' : 'local';
      if (had !== scope) {
        throw new EdgeqError('TOPIC_ALREADY_EXISTS', `topic "${topic.name}" exists with scope ${had}; a topic's scope cannot change (asked for ${scope})`, { details: { topic: topic.name, scope: had, requested: scope } });
      }
    }
    if (scope === 'global') {
      if (!deps.mesh) throw noMesh();
      await deps.mesh.createGlobal({ name: topic.name, partitions: topic.partitions, config: topic.config ?? {}, ...(topic.replicationFactor !== undefined ? { replicationFactor: topic.replicationFactor } : {}) });
    } else await backend.admin.createTopics([topic]);
    backend.forget(topic.name);
    return c.json((await describeCreated(topic.name)) ?? { name: topic.name }, 201);
  });

  /**
   * The description of a topic just created: the broker that answers may not have the new
   * metadata yet (a cell of several brokers), so UNKNOWN_TOPIC is asked again for a bounded while.
   */
  async function describeCreated(name: string) {
    const deadline = Date.now() + CREATED_VISIBLE_MS_MAX;
    for (;;) {
      try {
        return (await backend.admin.describeTopics([name]))[0];
      } catch (err) {
        if (!(err instanceof EdgeqError && err.code === 'UNKNOWN_TOPIC_OR_PARTITION') || Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  app.get('/v1/topics', async (c) => {
    const p = c.get('principal');
    const names = await backend.admin.listTopics();
    return c.json({ topics: p ? names.filter((n) => p.seesTopic(n)) : names });
  });

  app.get('/v1/topics/:name', async (c) => {
    const name = c.req.param('name');
    // Readers and writers need the partition count too, so any grant on the topic may describe it.
    authorize(c, ['read', 'write', 'admin'], name);
    const [described] = await backend.admin.describeTopics([name]);
    return c.json(described);
  });

  app.delete('/v1/topics/:name', async (c) => {
    const name = c.req.param('name');
    authorize(c, 'admin', name);
    // A global topic goes in every region; a local one here only.
    if (deps.mesh?.isGlobal(name)) await deps.mesh.deleteGlobal(name);
    else await backend.admin.deleteTopics([name]);
    backend.forget(name);
    backend.dropConsumers(name);
    return c.body(null, 204);
  });

  /**
   * Quotas on a produce: the body's size alone, before it is read, when Content-Length gives it
   * (a body already over the bytes budget is not read nor parsed); then the records and bytes
   * once parsed and checked, before anything is sent. Admitted answers carry the RateLimit fields.
   */
  function quotaPrecheck(c: Ctx, tenant: string, topic: string): void {
    const declared = Number(c.req.header('content-length'));
    if (deps.quotas && Number.isSafeInteger(declared) && declared > 0) deps.quotas.precheck(tenant, topic, declared);
  }
  /** Admits on the quotas; returns what gives the tokens back if the limiter then refuses. */
  function quotaAdmit(c: Ctx, tenant: string, topic: string, records: number, bytes: number): () => void {
    const quotas = deps.quotas;
    if (!quotas) return () => {};
    for (const [k, v] of Object.entries(quotas.admit(tenant, topic, records, bytes))) c.header(k, v);
    return () => quotas.release(tenant, topic, records, bytes);
  }

  app.post('/v1/topics/:name/records', async (c) => {
    const topic = c.req.param('name');
    authorize(c, 'write', topic);
    const tenant = c.get('principal')?.tenant ?? 'anonymous';
    const geo = await parseGeo(c.req.query('acks'), c.req.query('regions'), c.req.query('timeoutMs'), topic);
    let acks = geo ? 'all' : parseAcks(c.req.query('acks'));
    const type = mediaType(c);
    if (type !== 'application/json' && type !== 'application/x-protobuf' && type !== 'application/octet-stream') {
      throw new EdgeqError('UNSUPPORTED_MEDIA_TYPE', `expected application/json, application/x-protobuf or application/octet-stream, got "${c.req.header('content-type') ?? ''}"`);
    }
    quotaPrecheck(c, tenant, topic);
    // Refused before the body is read when there is no capacity for even one record: cheap shedding.
    deps.limiter?.precheck(tenant);
    const body = await readBody(c, limits.bodyBytesMax);
    if (type === 'application/x-protobuf') {
      const parsed = await parseProtobufBatches(body, topic, limits);
      acks ??= acksFromWire(parsed.acks);
      checkBatches(parsed.batches, { topic, partitionCount: await backend.partitionCount(topic), recordsMax: limits.recordsMax });
      const unquota = quotaAdmit(c, tenant, topic, parsed.batches.reduce((n, b) => n + b.records, 0), body.length);
      const acksUsed = acks ?? 'all';
      const baseOffsets = await observed(c, acksUsed, () => backend.produceBatches(topic, parsed.batches, acksUsed), {
        records: parsed.batches.reduce((n, b) => n + b.records, 0),
        bytes: parsed.batches.reduce((n, b) => n + b.recordBytes, 0),
      }, unquota);
      if (wantsProtobuf(c)) {
        // One result per partition: its first offset in this request, like the broker's base offset.
        const first = new Map<number, number>();
        parsed.batches.forEach((b, i) => {
          const o = baseOffsets[i]!;
          if (!first.has(b.partition) || o < first.get(b.partition)!) first.set(b.partition, o);
        });
        const res: ProduceResponse = {
          topics: [{ name: topic, partitions: [...first].map(([partition, baseOffset]) => ({ partition, baseOffset, logAppendTimeMs: -1, logStartOffset: -1, leaderEpoch: -1 })) }],
        };
        return c.body(new Uint8Array(encodeMessage('ProduceResponse', res)), 200, { 'content-type': 'application/x-protobuf' });
      }
      const offsets = parsed.batches.flatMap((b, i) => Array.from({ length: b.records }, (_, j) => ({ partition: b.partition, offset: baseOffsets[i]! < 0 ? -1 : baseOffsets[i]! + j })));
      if (geo) return c.json({ offsets, appliedIn: await waitGeo(topic, offsets, geo) });
      return c.json({ offsets });
    }
    let records: GatewayRecord[];
    if (type === 'application/json') records = parseJsonRecords(body);
    else {
      const rawPartition = c.req.header('x-edgeq-partition');
      const key = c.req.header('x-edgeq-key');
      records = [{ key: key === undefined ? null : Buffer.from(key, 'utf8'), value: body, headers: {}, partition: rawPartition === undefined ? null : intParam(rawPartition, 'X-Edgeq-Partition') }];
    }
    const partitionCount = await backend.partitionCount(topic);
    // Every record is checked before any is sent: a refused request writes nothing.
    checkRecords(records, { topic, partitionCount, recordBytesMax: limits.recordBytesMax, recordsMax: limits.recordsMax });
    const unquota = quotaAdmit(c, tenant, topic, records.length, body.length);
    const acksUsed = acks ?? 'all';
    const sent = await observed(c, acksUsed, () => traceSend(topic, c.req.header('traceparent'), records, (rs) => backend.produce(topic, rs, acksUsed)), {
      records: records.length,
      bytes: records.reduce((n, r) => n + recordBytes(r), 0),
    }, unquota);
    const offsets = sent.map((m) => ({ partition: m.partition, offset: m.offset }));
    if (geo) return c.json({ offsets, appliedIn: await waitGeo(topic, offsets, geo) });
    return c.json({ offsets });
  });

  /**
   * `acks=geo&regions=N[&timeoutMs=T]`: checked before anything is written (a global topic, a mesh,
   * 1 <= N <= the other regions); null for any other acks.
   */
  async function parseGeo(rawAcks: string | undefined, rawRegions: string | undefined, rawTimeout: string | undefined, topic: string): Promise<{ regions: number; timeoutMs: number } | null> {
    if (rawAcks !== 'geo') {
      if (rawRegions !== undefined) throw new EdgeqError('INVALID_ARGUMENT', '"regions" goes with acks=geo only', { details: { parameter: 'regions' } });
      return null;
    }
    if (!deps.mesh) throw noMesh();
    if (!(await backend.isGlobal(topic))) {
      throw new EdgeqError('INVALID_ARGUMENT', `acks=geo needs a global topic; "${topic}" is local (its records never leave this region)`, { details: { parameter: 'acks', topic } });
    }
    const others = deps.mesh.otherRegions().length;
    if (others === 0) throw new EdgeqError('INVALID_ARGUMENT', 'acks=geo: this region knows no other region yet', { details: { parameter: 'regions' } });
    const regions = intParam(rawRegions, 'regions', { fallback: 1, min: 1, max: others });
    const timeoutMs = intParam(rawTimeout, 'timeoutMs', { fallback: GEO_TIMEOUT_MS_DEFAULT, min: 1, max: GEO_TIMEOUT_MS_MAX });
    return { regions, timeoutMs };
  }

  /** Waits until `geo.regions` other regions applied the highest offset written to each partition. */
  async function waitGeo(topic: string, offsets: { partition: number; offset: number }[], geo: { regions: number; timeoutMs: number }): Promise<string[]> {
    const last = new Map<number, number>();
    for (const o of offsets) last.set(o.partition, Math.max(last.get(o.partition) ?? -1, o.offset));
    const applied = await Promise.all([...last].map(([p, offset]) => deps.mesh!.waitGeo(topic, p, offset, geo.regions, geo.timeoutMs)));
    // The regions that have every partition's records.
    return applied.reduce((acc, regions) => acc.filter((r) => regions.includes(r)));
  }

  app.get('/v1/topics/:name/partitions/:partition/records', async (c) => {
    const topic = c.req.param('name');
    authorize(c, 'read', topic);
    const partition = intParam(c.req.param('partition'), 'partition');
    const offset = intParam(c.req.query('offset'), 'offset', { fallback: 0 });
    const maxRecords = intParam(c.req.query('maxRecords'), 'maxRecords', { fallback: Math.min(READ_RECORDS_DEFAULT, limits.recordsMax), min: 1, max: limits.recordsMax });
    const waitMs = intParam(c.req.query('waitMs'), 'waitMs', { fallback: 0, max: limits.waitMsMax });
    const encoding = parseValueEncoding(c.req.query('valueEncoding'));
    await backend.checkPartition(topic, partition);
    const res = await traceReceive(topic, partition, c.req.header('traceparent'), () => backend.read(topic, partition, { offset, maxRecords, waitMs }));
    const ownRegion = (await backend.isGlobal(topic)) ? region : null;
    return c.json({ records: res.records.map((r) => toJsonRecord(r, encoding, ownRegion)), nextOffset: res.nextOffset, highWatermark: res.highWatermark });
  });

  app.get('/v1/topics/:name/partitions/:partition/stream', async (c) => {
    const topic = c.req.param('name');
    authorize(c, 'read', topic);
    const partition = intParam(c.req.param('partition'), 'partition');
    // EventSource reconnects send the last id seen; the stream resumes after it.
    const lastEventId = c.req.header('last-event-id');
    const offset = c.req.query('offset') === undefined && lastEventId !== undefined ? intParam(lastEventId, 'Last-Event-ID') + 1 : intParam(c.req.query('offset'), 'offset', { fallback: 0 });
    await backend.checkPartition(topic, partition);
    // Refused like a read: past the end, the consumer would silently jump to the latest offset instead.
    const [latest] = await backend.admin.listOffsets(topic, { partitions: [partition] });
    const highWatermark = latest?.offset ?? 0;
    if (offset > highWatermark) throw new EdgeqError('OFFSET_OUT_OF_RANGE', `offset ${offset} is past the high watermark ${highWatermark}`, { details: { topic, partition, offset, highWatermark } });
    const ownRegion = (await backend.isGlobal(topic)) ? region : null;
    streamSlots.acquire();
    return streamPartition(c, deps.client, limits, streamSlots, { topic, partition, offset, ownRegion });
  });

  app.post('/v1/groups/:group/members', async (c) => {
    const group = c.req.param('group');
    checkGroupId(group);
    requireJson(c);
    const req = parseJoin(await readBody(c, limits.bodyBytesMax));
    for (const t of req.topics) authorize(c, 'read', t);
    // Unknown topics are refused now rather than leaving a member that never gets records.
    for (const t of req.topics) await backend.partitionCount(t);
    const joined = groups.join(group, req);
    return c.json({ memberId: joined.memberId, group, topics: joined.topics }, 201);
  });

  /** Grants are checked on every member call: a member is usable only by keys that may read all its topics. */
  const authorizeMember = (c: Ctx, group: string, id: string): void => {
    for (const t of groups.topicsOf(group, id)) authorize(c, 'read', t);
  };

  app.get('/v1/groups/:group/members/:id/records', async (c) => {
    const group = c.req.param('group');
    const id = c.req.param('id');
    authorizeMember(c, group, id);
    const maxRecords = intParam(c.req.query('maxRecords'), 'maxRecords', { fallback: Math.min(READ_RECORDS_DEFAULT, limits.recordsMax), min: 1, max: limits.recordsMax });
    const waitMs = intParam(c.req.query('waitMs'), 'waitMs', { fallback: 0, max: limits.waitMsMax });
    const encoding = parseValueEncoding(c.req.query('valueEncoding'));
    const records = await traceGroupReceive(group, c.req.header('traceparent'), () => groups.poll(group, id, { maxRecords, waitMs }));
    const global = new Map<string, boolean>();
    for (const t of new Set(records.map((r) => r.topic))) global.set(t, await backend.isGlobal(t));
    return c.json({ records: records.map((r) => ({ topic: r.topic, partition: r.partition, ...toJsonRecord(r, encoding, global.get(r.topic) ? region : null) })) });
  });

  app.post('/v1/groups/:group/members/:id/commit', async (c) => {
    const group = c.req.param('group');
    const id = c.req.param('id');
    authorizeMember(c, group, id);
    const body = await readBody(c, limits.bodyBytesMax);
    let offsets: TopicPartitionOffset[] | undefined;
    if (body.length > 0) {
      requireJson(c);
      offsets = parseCommitOffsets(body, limits.recordsMax);
      const topics = new Set(groups.topicsOf(group, id));
      for (const o of offsets) if (!topics.has(o.topic)) throw new EdgeqError('INVALID_ARGUMENT', `member "${id}" is not subscribed to "${o.topic}"`, { details: { topic: o.topic } });
    }
    await groups.commit(group, id, offsets);
    return c.body(null, 204);
  });

  registerFailoverRoute(app, { mesh: deps.mesh, bodyBytesMax: limits.bodyBytesMax, requireJson });
  registerQuotaRoutes(app, { quotas: deps.quotas, bodyBytesMax: limits.bodyBytesMax, requireJson });
  registerTracingRoutes(app, { bodyBytesMax: limits.bodyBytesMax, requireJson });
  registerLimiterRoute(app, { limiter: deps.limiter });
  registerCapacityRoute(app, { capacity: deps.capacity });
  registerDrillsRoutes(app, { drills: deps.drills, bodyBytesMax: limits.bodyBytesMax, requireJson });
  const dashboard = deps.dashboard
    ? createDashboard({
        region: deps.region ?? 'local',
        ...(typeof deps.dashboard === 'object' && deps.dashboard.clock ? { clock: deps.dashboard.clock } : {}),
        mesh: deps.mesh ? () => deps.mesh!.view() : undefined,
        capacity: deps.capacity ? () => deps.capacity!.report() : undefined,
        limiter: deps.limiter ? () => deps.limiter!.view() : undefined,
        cell: () => backend.admin.cellStatus(),
        drills: deps.drills ? async () => (await deps.drills!.store.list()).drills : undefined,
      })
    : null;
  const dashboardRoutes = registerDashboardRoutes(app, dashboard);

  app.delete('/v1/groups/:group/members/:id', async (c) => {
    const group = c.req.param('group');
    const id = c.req.param('id');
    authorizeMember(c, group, id);
    await groups.leave(group, id);
    return c.body(null, 204);
  });

  return Object.assign(app, {
    metrics,
    endStreams: () => {
      streamSlots.endAll();
      dashboardRoutes.endStreams();
    },
    close: async () => {
      streamSlots.endAll();
      dashboardRoutes.endStreams();
      dashboard?.stop();
      await groups.close();
      await backend.close();
      metrics.close();
    },
  });
}
