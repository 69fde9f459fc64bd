/**
 * The gateways the HTTP conformance test talks to: one in-process cell of 3 brokers (real TCP,
 * real logs, each serving its Prometheus /metrics), and two gateway apps over it served over real
 * HTTP on 127.0.0.1, one without auth and one with API keys. Every request goes through `call`,
 * which checks the exchange against docs/openapi.yaml and fails the test on the first mismatch.
 */
import { EdgeqError, FakeClock, silentLogger } from '../../src/core/index.ts';
import { AdmissionLimiter, type LoadSignals } from '../../ratelimit/index.ts';
import { serve, type ServerType } from '@hono/node-server';
import { expect } from 'vitest';
import { createClient, type EdgeqClient } from '../../src/client/index.ts';
import { MemoryQuotaAdmin, QuotaEnforcer } from '../../ratelimit/index.ts';
import { Authenticator, createGatewayApp, hashApiKey, type GatewayApp, type GatewayLimits, type GatewayMesh, type MeshView } from '../../src/gateway/index.ts';
import { TestCell } from '../helpers/cell.ts';
import { ClusterGeoCell, failoverGroup, groupKey, GroupTranslator, type FailoverResult } from '../../gossip/failover/index.ts';
import { InstantMesh } from '../../gossip/exchange/test-support.ts';
import type { OpenApiContract } from './openapi-contract.ts';
import { startGatewayPlanner, type GatewayPlannerHandle } from '../../src/cli/gateway-planner.ts';
import type { IngressStep } from '../../forecast/planner/index.ts';
import { waitFor } from '../../src/testing/index.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DrillStore } from '../../drill/store/index.ts';
import type { DrillChild, DrillsDeps } from '../../src/gateway/drills-route.ts';

/** Small bounds, so every 413 and 429 of the document can be reached with a few requests. */
export const LIMITS: Partial<GatewayLimits> = {
  bodyBytesMax: 64 * 1024,
  recordBytesMax: 4 * 1024,
  recordsMax: 100,
  waitMsMax: 5_000,
  readsInflightMax: 2,
  streamsMax: 1,
  streamHeartbeatMs: 300,
  membersMax: 2,
};

/** The keyed gateway's topic: the grants below name it. */
export const KEYED_TOPIC = 'k-main';
/** Groups the stub mesh's other region (eu-west) has published: failovers of them from eu-west are answered. */
export const STUB_PUBLISHED_GROUPS = ['k-moved', 'k-busy'] as const;

/** API keys of the keyed gateway, by what they may do. */
export const KEYS = {
  admin: 'conformance-admin-0123456789',
  writer: 'conformance-writer-0123456789',
  reader: 'conformance-reader-0123456789',
  /** A valid key with grants on another topic only. */
  stranger: 'conformance-stranger-0123456789',
} as const;

function keysDoc() {
  const sha = (k: string) => hashApiKey(k).toString('hex');
  return {
    keys: [
      { sha256: sha(KEYS.admin), tenant: 'ops', grants: [{ topic: '*', actions: ['admin', 'read', 'write'] as const }] },
      { sha256: sha(KEYS.writer), tenant: 'shop', grants: [{ topic: KEYED_TOPIC, actions: ['write'] as const }] },
      { sha256: sha(KEYS.reader), tenant: 'analytics', grants: [{ topic: KEYED_TOPIC, actions: ['read'] as const }] },
      { sha256: sha(KEYS.stranger), tenant: 'elsewhere', grants: [{ topic: 'unrelated', actions: ['read'] as const }] },
    ],
  };
}

/** What a call sends. */
export interface CallOptions {
  /** Sent as `Authorization: Bearer <key>`. */
  key?: string;
  json?: unknown;
  body?: Uint8Array | string;
  /** Content-Type of `body`. */
  type?: string;
  headers?: Record<string, string>;
}

/** One answer, already checked against the document. */
export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json<T = Record<string, unknown>>(): T;
}

/** An open SSE stream, checked when its headers arrived. */
export interface OpenStream {
  status: number;
  /** Reads until the first event or heartbeat comment arrives. */
  /** The first event's frame (heartbeat comments skipped), or what came before the end or the timeout. */
  firstFrame(timeoutMs: number): Promise<string>;
  close(): Promise<void>;
}

/** A gateway served over HTTP. */
export class ServedGateway {
  constructor(
    readonly name: string,
    readonly app: GatewayApp,
    private readonly server: ServerType,
    readonly url: string,
    private readonly contract: OpenApiContract,
  ) {}

  private request(method: string, path: string, o: CallOptions): { init: RequestInit; headers: Record<string, string> } {
    const headers: Record<string, string> = { ...(o.headers ?? {}) };
    if (o.key !== undefined) headers['authorization'] = `Bearer ${o.key}`;
    let body: Uint8Array | string | undefined = o.body;
    if (o.json !== undefined) {
      body = JSON.stringify(o.json);
      headers['content-type'] ??= 'application/json';
    }
    if (o.type !== undefined) headers['content-type'] = o.type;
    return { init: { method, headers, ...(body === undefined ? {} : { body }) }, headers };
  }

  private expectConforming(method: string, path: string, sent: Record<string, string>, o: CallOptions, res: Response, text: string | null): void {
    const problems = this.contract.check({ method, url: path, requestHeaders: sent, requestJson: o.json, status: res.status, responseHeaders: res.headers, responseText: text });
    expect(problems, `${this.name}: ${method} ${path}\n${problems.join('\n')}\nbody: ${text?.slice(0, 500) ?? '(stream)'}`).toEqual([]);
  }

  /** Sends a request, reads the whole answer and checks it against the document. */
  async call(method: string, path: string, o: CallOptions = {}): Promise<Answer> {
    const { init, headers } = this.request(method, path, o);
    const res = await fetch(`${this.url}${path}`, init);
    const text = await res.text();
    this.expectConforming(method, path, headers, o, res, text);
    return { status: res.status, headers: res.headers, text, json: <T>() => JSON.parse(text) as T };
  }

  /** Opens an SSE stream (any answer that is not a stream is read and checked like `call`). */
  async stream(path: string, o: CallOptions = {}): Promise<OpenStream> {
    const { init, headers } = this.request('GET', path, o);
    const abort = new AbortController();
    const res = await fetch(`${this.url}${path}`, { ...init, signal: abort.signal });
    const isStream = res.status === 200;
    const text = isStream ? null : await res.text();
    this.expectConforming('GET', path, headers, o, res, text);
    const reader = isStream ? res.body!.getReader() : null;
    return {
      status: res.status,
      async firstFrame(timeoutMs: number) {
        if (!reader) throw new Error(`not a stream: ${res.status}`);
        const decoder = new TextDecoder();
        let got = '';
        const timer = setTimeout(() => abort.abort(), timeoutMs);
        // The first event: comment frames (`: heartbeat`, sent while a read is still empty) are skipped.
        const firstEvent = () => got.split('\n\n').slice(0, -1).find((f) => f.split('\n').some((l) => l !== '' && !l.startsWith(':')));
        try {
          while (firstEvent() === undefined) {
            const { done, value } = await reader.read();
            if (done) break;
            got += decoder.decode(value, { stream: true });
          }
        } finally {
          clearTimeout(timer);
        }
        const event = firstEvent();
        return event === undefined ? got : `${event}\n\n`;
      },
      async close() {
        abort.abort();
        await reader?.cancel().catch(() => undefined);
      },
    };
  }

  async close(): Promise<void> {
    this.app.endStreams();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await this.app.close();
  }
}

/**
 * A mesh for the keyed gateway: global topics become topics of this one cell (scope global), and
 * the view is a fixed, realistic one, so `/v1/mesh` and global topics are checked against the
 * document too. The real mesh is driven by the multi-region tests.
 */
export class StubMesh implements GatewayMesh {
  private readonly globals = new Set<string>();
  /** Failover runs for real over this cell; eu-west's published group positions sit in a shared in-memory mesh state. */
  private readonly geoMesh = new InstantMesh();
  private readonly geoCell: ClusterGeoCell;
  private readonly translator: GroupTranslator;

  constructor(
    private readonly client: EdgeqClient,
    brokers: string[],
  ) {
    const here = this.geoMesh.member('us-east');
    const there = this.geoMesh.member('eu-west');
    this.geoCell = new ClusterGeoCell({ region: 'us-east', localBrokers: brokers, logger: silentLogger });
    this.translator = new GroupTranslator({ mesh: here, cell: this.geoCell, otherRegions: () => this.otherRegions() });
    // eu-west published these groups (nothing consumed yet: an empty vector starts at the log start).
    for (const g of STUB_PUBLISHED_GROUPS) there.setState(groupKey('eu-west', g), { topics: { [KEYED_TOPIC]: { '0': { offset: 0, vector: {} } } }, atMs: Date.now() });
  }

  failover(group: string, from: string): Promise<FailoverResult> {
    return failoverGroup({ self: 'us-east', otherRegions: () => this.otherRegions(), translator: this.translator, cell: this.geoCell }, group, from);
  }

  close(): Promise<void> {
    return this.geoCell.close();
  }

  view(): MeshView {
    return {
      self: { region: 'us-east', member: 'us-east-gw', incarnation: 0, pid: process.pid },
      members: [
        { region: 'us-east', member: 'us-east-gw', address: '127.0.0.1:7946', state: 'alive', incarnation: 0, phi: 0, lastHeardMs: 0, rttMs: null },
        { region: 'eu-west', member: 'eu-west-gw', address: '127.0.0.1:7947', state: 'suspect', incarnation: 2, phi: 3.5, lastHeardMs: 1200, rttMs: 41.3 },
      ],
      regions: [
        {
          region: 'eu-west',
          health: { cellReady: true, brokersAlive: 3, brokersTotal: 3, underReplicatedPartitions: 0 },
          load: { ingressRecordsPerSec: 10, ingressBytesPerSec: 1000, capacityRecordsPerSec: null, headroomRecordsPerSec: null },
          forecast: { kind: 'none' },
          version: 1,
          updatedAt: Date.now(),
        },
      ],
      catalogue: { topics: [...this.globals].map((name) => ({ name, partitions: 1, region: 'us-east', version: 1 })), conflicts: [] },
      replication: [{ origin: 'eu-west', topic: 'orders', partition: 0, appliedOriginOffset: 41, lagRecords: 3, lagMs: 62, source: 'eu-west', stalled: false, lastError: null, appliedRecords: 42 }],
      exchange: {
        active: true,
        links: [{ source: 'eu-west', healthy: true, bytesTotal: 4096, bytesPerSec: 512, recordsTotal: 42 }],
        gaps: [{ origin: 'eu-west', topic: 'orders', partition: 0, firstMissingOriginOffset: 0, lastMissingOriginOffset: 9, records: 10, detectedAtMs: Date.now() }],
      },
    };
  }

  otherRegions(): string[] {
    return ['eu-west'];
  }

  async waitGeo(topic: string, partition: number, lastOffset: number, regions: number, timeoutMs: number): Promise<string[]> {
    // One other region, which never applies anything: acks=geo answers GEO_TIMEOUT (checked against the document).
    void topic, partition, lastOffset, regions;
    await new Promise((r) => setTimeout(r, Math.min(timeoutMs, 50)));
    throw new EdgeqError('GEO_TIMEOUT', 'the records are durable in us-east and will still be exchanged, but 1 other region(s) had not applied them', { details: { appliedIn: [] } });
  }

  isGlobal(name: string): boolean {
    return this.globals.has(name);
  }

  async createGlobal(def: { name: string; partitions: number; replicationFactor?: number; config: Record<string, string> }): Promise<void> {
    await this.client.admin().createTopics([{ ...def, config: { ...def.config, scope: 'global' } }]);
    this.globals.add(def.name);
  }

  async deleteGlobal(name: string): Promise<void> {
    await this.client.admin().deleteTopics([name]);
    this.globals.delete(name);
  }
}

/**
 * The keyed gateway's admission limiter (the open one has none: its /v1/limiter answers 404). It
 * runs on a fake clock the test steps, with signals the test injects, so a 503 can be had on
 * demand; its capacity is far above what the other cases send.
 */
export class RigLimiter {
  readonly clock = new FakeClock();
  /** The signals its next interval reads. */
  injected: Partial<LoadSignals> = {};
  readonly limiter = new AdmissionLimiter({ controller: 'edgeq', initialPerSec: 100_000, targets: { produceP99Ms: 50 }, signals: { read: () => ({ ...this.injected }) }, clock: this.clock });

  /** One interval with `signals`. */
  interval(signals: Partial<LoadSignals>): void {
    this.injected = signals;
    this.clock.advance(1000);
    this.limiter.tick();
  }
}

/**
 * The keyed gateway's planner (the open one has none: its /v1/capacity answers 404), over an
 * in-memory history of a daily-like shape (a season of 10 one-second steps) on a fake clock.
 */
export class RigPlanner {
  readonly clock = new FakeClock(1_800_000_000_000);
  private readonly steps: IngressStep[] = [];
  private readonly listeners: ((s: IngressStep) => void)[] = [];
  readonly handle: GatewayPlannerHandle;

  constructor(limiter: AdmissionLimiter) {
    for (let i = 0; i < 40; i++) this.push(i);
    this.handle = startGatewayPlanner({
      region: 'eu-west',
      stepMs: 1000,
      settings: { leadMs: 2000, seasonSteps: 10, perInstance: { broker: 500, gateway: 250 }, headroom: 0.1, maxInstances: 100, retrainEveryMs: 86_400_000, prewarm: true },
      history: { steps: () => [...this.steps], lastStep: () => this.steps[this.steps.length - 1] ?? null, on: (_e, cb) => void this.listeners.push(cb) },
      limiter,
      mesh: () => null,
      clock: this.clock,
    });
  }

  private push(i: number): IngressStep {
    const records = i % 10 >= 6 ? 900 : 100;
    const step = { t: this.clock.nowMs() - 40_000 + i * 1000, records, recordsMax: records, bytes: records * 100, bytesMax: records * 100 };
    this.steps.push(step);
    return step;
  }

  /** Waits until the planner has planned from the history. */
  async planned(): Promise<void> {
    await waitFor('the rig planner to plan', 10_000, () => (this.handle.source.report().plan.length > 0 ? true : undefined));
  }
}

/**
 * The keyed gateway's drills (the open one has none: /v1/drills answers 404): a store in a temp
 * folder and a spawner that starts nothing, so POST /v1/drills is checked without a deployment.
 */
export class RigDrills {
  readonly dir = mkdtempSync(join(tmpdir(), 'edgeq-conformance-drills-'));
  readonly store = new DrillStore(join(this.dir, 'drills'));
  /** argv of every drill started. */
  readonly started: (readonly string[])[] = [];
  readonly deps: DrillsDeps = {
    store: this.store,
    control: 'http://127.0.0.1:1',
    regions: async () => ['us-east', 'eu-west'],
    spawn: (argv): DrillChild => {
      this.started.push(argv);
      return { exited: new Promise(() => {}) };
    },
  };

  close(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The cell and the two gateways. */
export class ConformanceRig {
  private constructor(
    readonly cell: TestCell,
    readonly client: EdgeqClient,
    readonly open: ServedGateway,
    readonly keyed: ServedGateway,
    private readonly stub: StubMesh,
    readonly limiter: RigLimiter,
    readonly planner: RigPlanner,
    readonly drills: RigDrills,
  ) {}

  static async start(contract: OpenApiContract): Promise<ConformanceRig> {
    const cell = await new TestCell({ broker: { adminPort: 0 } }).start();
    const client = createClient({ brokers: cell.addresses(), metadataMaxAgeMs: 500 });
    // Quotas over in-memory storage (the cell's storage of them is tested with the broker).
    const quotas = () => new QuotaEnforcer({ admin: new MemoryQuotaAdmin() });
    const open = await serveGateway('open', createGatewayApp({ client, limits: LIMITS, quotas: quotas() }), contract);
    const stub = new StubMesh(client, cell.addresses());
    const limiter = new RigLimiter();
    const planner = new RigPlanner(limiter.limiter);
    await planner.planned();
    const drills = new RigDrills();
    const keyed = await serveGateway('keyed', createGatewayApp({ client, limits: LIMITS, auth: Authenticator.fromJson(keysDoc()), mesh: stub, limiter: limiter.limiter, quotas: quotas(), capacity: planner.handle.source, drills: drills.deps, dashboard: true }), contract);
    return new ConformanceRig(cell, client, open, keyed, stub, limiter, planner, drills);
  }

  /** Every broker's /metrics URL. */
  brokerMetricsUrls(): string[] {
    return [...this.cell.brokers.values()].map((b) => `http://127.0.0.1:${b.adminPort}/metrics`);
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.open.close(), this.keyed.close()]);
    await this.planner.handle.close();
    this.limiter.limiter.close();
    await this.stub.close();
    this.drills.close();
    await this.client.close();
    await this.cell.close();
  }
}

async function serveGateway(name: string, app: GatewayApp, contract: OpenApiContract): Promise<ServedGateway> {
  return new Promise((resolve) => {
    const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info) => {
      resolve(new ServedGateway(name, app, server, `http://127.0.0.1:${info.port}`, contract));
    });
  });
}
