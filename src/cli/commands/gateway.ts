/**
 * `edgeq gateway`: the regional HTTP gateway in front of one cell. Binds 127.0.0.1 unless told
 * otherwise. Auth is on by default: it needs `--keys FILE`, or an explicit `--no-auth` (what the
 * local deployment passes), and the "listening" line says which. SIGTERM and SIGINT stop it cleanly: the HTTP
 * server stops accepting, then producers flush and connections close.
 */
import { createServer, type RequestListener, type ServerOptions } from 'node:http';
import { serve } from '@hono/node-server';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { followReloads, registerTlsMetrics, tlsServerOptions } from '../../tls/index.ts';
import { addBrokerClientOptions, addServerTlsOptions, loadBrokerClientSecurity, loadServerTls, type BrokerClientFlags, type ServerTlsFlags } from '../tls-flags.ts';
import { shedding } from '../../gateway/shed.ts';
import type { Command } from 'commander';
import { createClient } from '../../client/index.ts';
import { EdgeqError } from '../../core/errors.ts';
import { createLogger } from '../../core/logger.ts';
import { GATEWAY_CLIENT_ID } from '../../protocol/index.ts';
import { Authenticator, createGatewayApp, resolveLimits, type GatewayMesh } from '../../gateway/index.ts';
import { addMeshSecurityOptions, addressMapFrom, meshKeysFrom, meshSecurityFrom, startGatewayMesh, type GatewayMeshHandle } from '../gateway-mesh.ts';
import { exchangeLimits, type ExchangeLimits } from '../../../gossip/exchange/index.ts';
import { addBrokersOption, brokersOf } from './topics.ts';
import { QuotaEnforcer } from '../../../ratelimit/index.ts';
import { MeshKeys } from '../../../gossip/region/index.ts';
import { AdmissionLimiter } from '../../../ratelimit/index.ts';
import { GatewayLoadSignals } from '../../gateway/load-signals.ts';
import { limiterSettings, type LimiterFlags } from '../limiter-flags.ts';
import { PLANNER_OPTIONS, plannerSettings, type PlannerFlags } from '../planner-flags.ts';
import { checkPlannerSettings, startGatewayPlanner, type GatewayPlannerHandle } from '../gateway-planner.ts';
import type { CapacitySource } from '../../gateway/capacity-route.ts';
import { checkFromControl, regionsFromControl, spawnDrillChild, type DrillsDeps } from '../../gateway/drills-route.ts';
import { DrillStore } from '../../../drill/store/index.ts';
import { shutdownTracing, tracingFromFlags, TRACING_OPTIONS, type TracingFlags } from '../../tracing/index.ts';
import { access, mkdir } from 'node:fs/promises';
import { constants as fsConstants } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { systemClock } from '../../core/index.ts';
import { APPEND_DELIVERY_MS, IngressHistory, IngressRecorder, ingressHistorySettings, registerIngressHistoryMetrics, topicAppender, topicSource } from '../../gateway/ingress-history/index.ts';

interface GatewayFlags extends LimiterFlags, PlannerFlags, TracingFlags {
  host?: string;
  port?: string;
  keys?: string;
  /** commander's `--no-auth`: true unless the flag is given. */
  auth?: boolean;
  memberIdleMs?: string;
  produceLingerMs?: string;
  produceInflight?: string;
  produceBatchBytes?: string;
  produceTimeoutMs?: string;
  region?: string;
  member?: string;
  meshPort?: string;
  meshHost?: string;
  meshAdvertise?: string;
  meshSeeds?: string;
  meshCluster?: string;
  geoBandwidth?: string;
  geoStallMs?: string;
  brokersAdvertise?: string;
  ingressStepMs?: string;
  ingressRetentionMs?: string;
  drillsDir?: string;
  drillControl?: string;
}

/** A flag that must be a non-negative integer when given; undefined when absent. */
function intFlag(raw: string | undefined, flag: string, key: string): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n)) throw new EdgeqError('INVALID_CONFIG', `${flag} must be a non-negative integer, got ${raw}`, { details: { key } });
  return n;
}

/** Registers `edgeq gateway`. */
export function registerGatewayCommand(program: Command): void {
  // --brokers is the global option the cluster commands share (default $EDGEQ_BROKERS, else 127.0.0.1:9092).
  addBrokersOption(program);
  const command = program
    .command('gateway')
    .description('run the HTTP gateway in front of a cell (bootstrap brokers from the global --brokers)')
    .option('--port <n>', 'HTTP port; 0 picks a free one (default 8080)')
    .option('--host <addr>', 'address to listen on (default 127.0.0.1)')
    .option('--keys <file>', 'API keys file (JSON; see docs/http-api.md); required unless --no-auth')
    .option('--no-auth', 'run without API keys (the local deployment; never on a shared network)')
    .option('--member-idle-ms <n>', 'expire HTTP consumer-group members that have not polled for this long (default 30000)')
    .option('--produce-linger-ms <n>', 'how long produced records wait to share a batch (default 0)')
    .option('--produce-inflight <n>', 'batches per partition in flight to the cell, 1..5 (default 1)')
    .option('--produce-batch-bytes <n>', 'largest batch of records sent to a partition, 1024..67108864 (default 1048576)')
    .option('--produce-timeout-ms <n>', 'how long a produce waits for the cell before it fails with the typed reason, 100..3600000 (EDGEQ_PRODUCE_TIMEOUT_MS, default 120000)')
    .option('--region <name>', 'the region this gateway serves (EDGEQ_REGION, default local)')
    .option('--member <id>', 'this gateway\'s id in the mesh (default <region>-<host>-<port>)')
    .option('--mesh-port <n>', 'UDP and TCP port of the mesh agent between regions (EDGEQ_MESH_PORT); absent: no mesh')
    .option('--mesh-host <addr>', 'address the mesh agent binds (default the --host)')
    .option('--mesh-advertise <host:port>', 'address other regions reach this agent at (default mesh host:port)')
    .option('--mesh-seeds <list>', 'host:port,… of agents to join (EDGEQ_MESH_SEEDS)')
    .option('--mesh-cluster <name>', 'name of the mesh; agents of another one are ignored (EDGEQ_MESH_CLUSTER, default edgeq)')
    .option('--geo-bandwidth <bytes/s>', 'bandwidth the record exchange may use per link to another region, shared fairly by partitions (EDGEQ_GEO_BANDWIDTH; default 0: no limit)')
    .option('--geo-stall-ms <n>', 'a replicator whose cursor has not moved for this long while its origin has is reported stalled and restarted (default 20000)')
    .option('--brokers-advertise <list>', 'host:port,… other regions fetch this region\'s records from (default the --brokers)')
    .option('--limiter <law>', 'admission control of produce requests: edgeq (the gradient law), seeds (the seeds\' rule, a baseline) or none (EDGEQ_LIMITER, default edgeq)')
    .option('--limiter-interval-ms <n>', 'how often the limiter reads the load signals and sets capacity (EDGEQ_LIMITER_INTERVAL_MS, default 1000)')
    .option('--limiter-initial-per-sec <n>', 'admission capacity (records/s) before the first interval, and the seeds\' rule\'s base (EDGEQ_LIMITER_INITIAL_PER_SEC, default 20000)')
    .option('--limiter-target-p99-ms <n>', 'produce p99 the limiter keeps under (EDGEQ_LIMITER_TARGET_P99_MS, default 50)')
    .option('--ingress-step-ms <n>', 'step of the region\'s ingress history, 100..3600000 (EDGEQ_INGRESS_STEP_MS, default 60000)')
    .option('--ingress-retention-ms <n>', 'how long the ingress history is kept, at least 10 steps (EDGEQ_INGRESS_RETENTION_MS, default 2419200000: 28 days)')
    .option('--drills-dir <dir>', 'folder of the drill reports served at /v1/drills (EDGEQ_DRILLS_DIR); absent: no /v1/drills')
    .option('--drill-control <url>', 'the deployment\'s control API that drills started by POST /v1/drills run against (EDGEQ_DRILL_CONTROL); needs --drills-dir')
    .option('--tenant-weights <list>', 'tenant=weight,… for fair shares when demand exceeds capacity, e.g. a=2,b=1 (EDGEQ_TENANT_WEIGHTS; default weight 1)');
  for (const [flag, help] of [...PLANNER_OPTIONS, ...TRACING_OPTIONS]) command.option(flag, help);
  addServerTlsOptions(command, 'HTTPS listener');
  addBrokerClientOptions(command);
  addMeshSecurityOptions(command);
  command.action(async (flags: GatewayFlags, cmd: Command) => {
      const port = Number(flags.port ?? '8080');
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new EdgeqError('INVALID_CONFIG', `--port must be a port in [0, 65535], got ${flags.port}`, { details: { key: 'port' } });
      const brokers = brokersOf(cmd);
      if (brokers.length === 0) throw new EdgeqError('INVALID_CONFIG', '--brokers needs at least one host:port', { details: { key: 'brokers' } });
      const host = flags.host ?? '127.0.0.1';
      const logger = createLogger({ level: process.env.EDGEQ_LOG_LEVEL ?? 'info', name: 'gateway' });
      if (!flags.keys && flags.auth !== false) {
        throw new EdgeqError('INVALID_CONFIG', 'auth is on by default: give --keys FILE (see docs/http-api.md), or --no-auth to run without it', {
          details: { key: 'keys' },
        });
      }
      const memberIdleMsMax = flags.memberIdleMs === undefined ? undefined : Number(flags.memberIdleMs);
      if (memberIdleMsMax !== undefined && !(Number.isSafeInteger(memberIdleMsMax) && memberIdleMsMax > 0)) {
        throw new EdgeqError('INVALID_CONFIG', `--member-idle-ms must be a positive integer, got ${flags.memberIdleMs}`, { details: { key: 'memberIdleMs' } });
      }
      const produceLingerMs = intFlag(flags.produceLingerMs, '--produce-linger-ms', 'produceLingerMs');
      const produceInflightPerPartitionMax = intFlag(flags.produceInflight, '--produce-inflight', 'produceInflightPerPartitionMax');
      const produceBatchBytesMax = intFlag(flags.produceBatchBytes, '--produce-batch-bytes', 'produceBatchBytesMax');
      const produceTimeoutMs = intFlag(flags.produceTimeoutMs ?? process.env.EDGEQ_PRODUCE_TIMEOUT_MS, '--produce-timeout-ms', 'produceTimeoutMs');
      const limits = {
        ...(memberIdleMsMax === undefined ? {} : { memberIdleMsMax }),
        ...(produceLingerMs === undefined ? {} : { produceLingerMs }),
        ...(produceInflightPerPartitionMax === undefined ? {} : { produceInflightPerPartitionMax }),
        ...(produceBatchBytesMax === undefined ? {} : { produceBatchBytesMax }),
        ...(produceTimeoutMs === undefined ? {} : { produceTimeoutMs }),
      };
      // Checked before anything is opened: a bad bound is a start-up error, not a half-started gateway.
      resolveLimits(limits);
      await tracingFromFlags(flags, { service: 'edgeq-gateway', region: flags.region ?? process.env.EDGEQ_REGION ?? 'local', ...(flags.member ? { instance: flags.member } : {}) }, { logger });
      const limiterConfig = limiterSettings(flags);
      const ingressConfig = ingressHistorySettings(flags);
      const plannerConfig = plannerSettings(flags);
      if (plannerConfig) checkPlannerSettings(plannerConfig, ingressConfig.stepMs);
      const drills = await drillSettings(flags);
      const auth = flags.keys ? await Authenticator.fromFile(flags.keys) : null;
      // HTTPS (--tls-cert/--tls-key, reloaded when the files change) and how the cell's brokers
      // are reached (TLS, this gateway's certificate or key): docs/security.md.
      const security = flags as GatewayFlags & ServerTlsFlags & BrokerClientFlags;
      const httpsTls = await loadServerTls(security, logger);
      const brokerSecurity = await loadBrokerClientSecurity(security, logger);
      // The cell's own client id: the broker does not limit it (the gateway limits per tenant itself).
      const client = createClient({ brokers, clientId: GATEWAY_CLIENT_ID, logger, ...brokerSecurity });
      const meshFlags = meshSettings(flags, host, brokers);
      // Mesh TLS (--mesh-tls-*) and the MAC-only upgrade step (--mesh-mac-only), checked before anything binds.
      const meshSecurity = await meshSecurityFrom(security, meshFlags !== null, logger);
      // The mesh starts once the app (and its metrics) exists; until then the routes see none.
      let meshHandle: GatewayMeshHandle | null = null;
      const mesh: GatewayMesh | null = meshFlags && {
        view: () => meshHandle!.mesh.view(),
        isGlobal: (name) => meshHandle?.mesh.isGlobal(name) ?? false,
        createGlobal: (def) => meshHandle!.mesh.createGlobal(def),
        deleteGlobal: (name) => meshHandle!.mesh.deleteGlobal(name),
        otherRegions: () => meshHandle?.mesh.otherRegions() ?? [],
        waitGeo: (...args) => meshHandle!.mesh.waitGeo(...args),
        failover: (group, from) => meshHandle!.mesh.failover(group, from),
        replicationBacklogRecords: () => meshHandle?.mesh.replicationBacklogRecords?.() ?? 0,
      };
      // Records of global topics written here are shown with this region as their origin.
      const region = meshFlags?.region ?? flags.region ?? process.env.EDGEQ_REGION ?? 'local';
      // Quotas are read from the cell every second; global ones follow the mesh once it runs.
      // Not awaited: a gateway starts while its cell is still coming up (a region restarted whole),
      // and the first read, with its retries, must not hold the start (nor, with nothing else
      // keeping the process alive yet, end it). Quotas apply from the first read on.
      const quotas = new QuotaEnforcer({ admin: client.admin(), logger });
      void quotas.start();
      // The admission limiter (issue 14); with `none` it admits everything and only counts.
      const signals = new GatewayLoadSignals({ cell: client.admin(), mesh, intervalMs: limiterConfig.intervalMs, logger });
      const limiter = new AdmissionLimiter({
        controller: limiterConfig.controller,
        intervalMs: limiterConfig.intervalMs,
        initialPerSec: limiterConfig.initialPerSec,
        targets: { produceP99Ms: limiterConfig.targetP99Ms },
        weights: limiterConfig.weights,
        signals,
        logger,
      });
      // The region's history is read from the cell (the recorder, which needs this gateway's mesh
      // member id, starts after the mesh); the planner steps on it from the start.
      const history = new IngressHistory({
        source: topicSource({ admin: client.admin(), consumer: client.consumer({ fromBeginning: true }), retentionMs: ingressConfig.retentionMs, logger }),
        stepMs: ingressConfig.stepMs,
        retentionMs: ingressConfig.retentionMs,
        clock: systemClock,
        logger,
      });
      const plannerHandle: GatewayPlannerHandle | null = plannerConfig
        ? startGatewayPlanner({
            region,
            stepMs: ingressConfig.stepMs,
            settings: plannerConfig,
            history,
            limiter: limiter.kind === 'none' ? null : limiter,
            mesh: () => meshHandle?.mesh.view() ?? null,
            logger,
          })
        : null;
      const capacity: CapacitySource | null = plannerHandle?.source ?? null;
      const app = createGatewayApp({ client, auth, limits, mesh, region, limiter, quotas, capacity, drills, dashboard: true });
      const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
        // Produces the limiter would refuse are answered before the framework (src/gateway/shed.ts).
        const createShedServer = ((options: ServerOptions, listener: RequestListener) =>
          httpsTls
            ? createHttpsServer({ ...options, ...tlsServerOptions(httpsTls.material, httpsTls.clientAuth) }, shedding(listener, { limiter, auth }))
            : createServer(options, shedding(listener, { limiter, auth }))) as unknown as typeof createServer;
        const s = serve({ fetch: app.fetch, hostname: host, port, createServer: createShedServer }, (info) => {
          resolve(s);
        });
      });
      const boundPort = (server.address() as { port: number }).port;
      // New handshakes get a reloaded certificate; open connections keep theirs (none is dropped).
      const stopFollowingTls = httpsTls ? followReloads(server as unknown as HttpsServer, httpsTls.material) : null;
      registerTlsMetrics(app.metrics.registry, { ...(httpsTls ? { https: httpsTls.material } : {}), ...(brokerSecurity.tls ? { brokers_client: brokerSecurity.tls } : {}) });
      signals.start();
      limiter.start();
      if (meshFlags) {
        try {
          meshHandle = await startGatewayMesh({
            ...meshFlags,
            ...meshSecurity,
            member: meshFlags.member ?? `${meshFlags.region}-${host}-${boundPort}`,
            gatewayUrl: `${httpsTls ? 'https' : 'http'}://${host}:${boundPort}`,
            brokerSecurity,
            client,
            registry: app.metrics.registry,
            ingressTotals: () => app.metrics.ingressTotals(),
            ...(plannerHandle ? { forecast: () => plannerHandle.summary() } : {}),
            logger,
          });
          const agent = meshHandle.agent;
          quotas.attachMesh(agent, () => agent.state().filter((e) => !e.deleted && MeshKeys.isRegion(e.key)).length);
        } catch (err) {
          // A mesh that cannot start (its port taken, a bad option) stops the gateway: no half-started process.
          quotas.close();
          await plannerHandle?.close();
          await history.close();
          limiter.close();
          await new Promise<void>((resolve) => server.close(() => resolve()));
          await app.close().catch(() => undefined);
          await client.close().catch(() => undefined);
          throw err;
        }
      }
      const self = meshHandle?.agent.self();
      // Ingress history (issue 15, docs/flow-control.md): this gateway's steps into
      // __ingress_history, and the region's steps read back from it (the planner's input).
      // Neither start is awaited: the cell may still be coming up (see the quotas above).
      const recorder = new IngressRecorder({
        member: self?.member ?? `${region}-${host}-${boundPort}`,
        stepMs: ingressConfig.stepMs,
        totals: () => app.metrics.ingressTotals(),
        append: topicAppender(client.producer({ deliveryTimeoutMs: APPEND_DELIVERY_MS })),
        clock: systemClock,
        logger,
      });
      registerIngressHistoryMetrics(app.metrics.registry, { history, recorder });
      recorder.start();
      history.start();
      // One machine-readable line for supervisors and tests, like the broker's.
      process.stdout.write(
        `${JSON.stringify({ event: 'listening', service: 'gateway', host, port: boundPort, pid: process.pid, auth: auth !== null, tls: httpsTls ? httpsTls.clientAuth : false, brokersTls: brokerSecurity.tls !== undefined, limiter: limiter.kind, ...(self ? { region: self.region, member: self.member, mesh: self.address } : {}) })}\n`,
      );
      await new Promise<void>((resolve) => {
        const stop = (signal: string) => {
          logger.info({ signal }, 'stopping');
          stopFollowingTls?.();
          httpsTls?.material.close();
          brokerSecurity.tls?.close();
          // Open SSE streams would hold the server's close forever: end them as it stops accepting.
          quotas.close();
          limiter.close();
          void recorder.close();
          server.close(() => {
            void (plannerHandle?.close() ?? Promise.resolve())
              .then(() => history.close())
              .then(() => meshHandle?.close())
              .then(() => app.close())
              .then(() => client.close())
              .then(() => shutdownTracing())
              .catch((err: unknown) => logger.error({ err }, 'clean stop failed'))
              .finally(resolve);
          });
          app.endStreams();
        };
        process.once('SIGTERM', () => stop('SIGTERM'));
        process.once('SIGINT', () => stop('SIGINT'));
      });
    });
}

/**
 * The drill routes' settings (issue 16), checked before anything listens: the folder is created
 * and must be writable (a drill's report would otherwise be lost at its end), the control API
 * must be an http(s) URL, and it needs the folder (a started drill's report goes there).
 */
async function drillSettings(flags: GatewayFlags): Promise<DrillsDeps | null> {
  const rawDir = flags.drillsDir ?? process.env.EDGEQ_DRILLS_DIR;
  const rawControl = flags.drillControl ?? process.env.EDGEQ_DRILL_CONTROL;
  const dir = rawDir === undefined || rawDir === '' ? null : resolvePath(rawDir);
  const control = rawControl === undefined || rawControl === '' ? null : rawControl.replace(/\/+$/, '');
  if (control !== null) {
    let url: URL | null = null;
    try {
      url = new URL(control);
    } catch {
      // refused below
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw new EdgeqError('INVALID_CONFIG', `--drill-control must be an http(s) URL, got ${JSON.stringify(rawControl)}`, { details: { key: 'drillControl' } });
    if (dir === null) throw new EdgeqError('INVALID_CONFIG', '--drill-control needs --drills-dir (where the drills it starts keep their reports)', { details: { key: 'drillsDir' } });
  }
  if (dir === null) return null;
  try {
    await mkdir(dir, { recursive: true });
    await access(dir, fsConstants.W_OK);
  } catch (err) {
    throw new EdgeqError('INVALID_CONFIG', `--drills-dir ${dir} cannot be written: ${(err as Error).message}`, { cause: err, details: { key: 'drillsDir' } });
  }
  return { store: new DrillStore(dir), control, spawn: spawnDrillChild, regions: control === null ? async () => [] : regionsFromControl(control), ...(control === null ? {} : { check: checkFromControl(control) }) };
}

/** The mesh settings of the flags and environment, or null when the gateway runs without a mesh. */
function meshSettings(flags: GatewayFlags, host: string, brokers: string[]) {
  const env = process.env;
  const rawPort = flags.meshPort ?? env.EDGEQ_MESH_PORT;
  if (rawPort === undefined || rawPort === '') return null;
  const meshPort = Number(rawPort);
  if (!/^\d+$/.test(rawPort) || meshPort > 65535) throw new EdgeqError('INVALID_CONFIG', `--mesh-port must be a port in [0, 65535], got ${rawPort}`, { details: { key: 'meshPort' } });
  const region = flags.region ?? env.EDGEQ_REGION ?? 'local';
  if (!/^[a-z0-9-]{1,63}$/.test(region)) throw new EdgeqError('INVALID_CONFIG', `--region "${region}" is not a valid site name ([a-z0-9-]{1,63})`, { details: { key: 'region' } });
  const list = (raw: string | undefined) => (raw ?? '').split(',').map((x) => x.trim()).filter((x) => x !== '');
  const seeds = list(flags.meshSeeds ?? env.EDGEQ_MESH_SEEDS);
  for (const s of [...seeds, ...(flags.meshAdvertise ? [flags.meshAdvertise] : [])]) {
    if (!/^[^:\s]+:\d{1,5}$/.test(s)) throw new EdgeqError('INVALID_CONFIG', `mesh address "${s}" is not host:port`, { details: { key: 'meshSeeds' } });
  }
  return {
    region,
    // Read now: a missing or bad key or map fails the start before anything listens.
    keys: meshKeysFrom(env),
    translate: addressMapFrom(env),
    member: flags.member,
    bindHost: flags.meshHost ?? host,
    bindPort: meshPort,
    ...(flags.meshAdvertise ? { advertise: flags.meshAdvertise } : {}),
    seeds,
    clusterName: flags.meshCluster ?? env.EDGEQ_MESH_CLUSTER ?? 'edgeq',
    brokers: flags.brokersAdvertise ? list(flags.brokersAdvertise) : brokers,
    localBrokers: brokers,
    exchange: exchangeFlags(flags, env),
  };
}

/** The exchange's bounds from the flags and environment, checked now (a bad one fails the start). */
function exchangeFlags(flags: GatewayFlags, env: NodeJS.ProcessEnv): Partial<ExchangeLimits> {
  const out: Partial<ExchangeLimits> = {};
  const num = (raw: string | undefined, flag: string, min: number): number | undefined => {
    if (raw === undefined || raw === '') return undefined;
    const n = Number(raw);
    if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n < min) throw new EdgeqError('INVALID_CONFIG', `${flag} must be an integer >= ${min}, got ${JSON.stringify(raw)}`, { details: { key: flag } });
    return n;
  };
  const bw = num(flags.geoBandwidth ?? env.EDGEQ_GEO_BANDWIDTH, '--geo-bandwidth', 0);
  if (bw !== undefined) out.linkBandwidthBytesPerSec = bw;
  const stall = num(flags.geoStallMs, '--geo-stall-ms', 1000);
  if (stall !== undefined) out.stallMs = stall;
  exchangeLimits(out);
  return out;
}
