/**
 * `edgeq dev` (what `npm start` runs): the local multi-region deployment on one machine, as
 * separate OS processes on 127.0.0.1. Each region (3 by default: us-east, eu-west, ap-south) is an
 * embedded arbiter, a cell of brokers and a gateway with its mesh agent, supervised (a process
 * that dies is restarted). Between regions every byte goes through the link emulator this process
 * runs (src/wan): each region reaches another only through its own end of the directed link,
 * given to its gateway as an address map, so a cut link cuts that pair and nothing else. The
 * control API (src/cli/dev) changes links and lists processes. Ctrl-C or SIGTERM stops the
 * gateways, then the brokers (they flush and leave their cells), then the arbiters; starting
 * again on the same data folder brings every topic and record back.
 */
import type { Command } from 'commander';
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { EdgeqError } from '../../core/errors.ts';
import { createLogger } from '../../core/logger.ts';
import { Authenticator } from '../../gateway/index.ts';
import { LinkEmulator } from '../../wan/index.ts';
import { startControlApi, type DevDeployment, type DevProcess } from '../dev/control-api.ts';
import { faultStorageKind } from '../../log/fault-storage.ts';
import { checkPortsFree } from '../dev/ports-free.ts';
import { planTopology, type RegionPlan, type Topology } from '../dev/topology.ts';
import { Supervisor } from '../supervisor.ts';
import { resolveTracingConfig, TRACING_OPTIONS, type TracingFlags } from '../../tracing/index.ts';

interface DevFlags extends TracingFlags {
  dataDir?: string;
  port?: string;
  brokers?: string;
  brokersPerRegion?: string;
  brokerPort?: string;
  arbiterPort?: string;
  regions?: string;
  wanLatencyMs?: string;
  controlPort?: string;
  keys?: string;
}

/** Where one region's processes reach the others: advertised address → this region's end of the link. */
export interface AddressMap {
  udp: Record<string, string>;
  tcp: Record<string, string>;
}

const loopback = (port: number) => `127.0.0.1:${port}`;

/** Routes every region needs into every other one (mesh UDP and TCP, each broker), and each region's map. */
async function wire(emulator: LinkEmulator, t: Topology): Promise<Map<string, AddressMap>> {
  const maps = new Map<string, AddressMap>();
  for (const from of t.regions) {
    const map: AddressMap = { udp: {}, tcp: {} };
    for (const to of t.regions) {
      if (to === from) continue;
      const mesh = loopback(to.meshPort);
      map.udp[mesh] = hostPort(await emulator.addRoute(from.name, to.name, { kind: 'udp', target: mesh }));
      map.tcp[mesh] = hostPort(await emulator.addRoute(from.name, to.name, { kind: 'tcp', target: mesh }));
      for (const port of to.brokerPorts) map.tcp[loopback(port)] = hostPort(await emulator.addRoute(from.name, to.name, { kind: 'tcp', target: loopback(port) }));
    }
    maps.set(from.name, map);
  }
  return maps;
}

const hostPort = (a: { host: string; port: number }) => `${a.host}:${a.port}`;

/**
 * Bound on a broker printing its listening line: it first recovers its logs (after a crash, or a
 * power loss in the campaign, it checks the unsynced tail of every partition and rebuilds the
 * producer and origin states by scanning), which grows with its partitions; the supervisor's
 * default 30 s was overrun by a broker of a cell that lost power after 20 campaign rounds' topics.
 */
const BROKER_START_MS_MAX = 120_000;

/** The child processes of one region, in start order; `keysFile` (absolute) turns the gateways' auth on. */
function regionChildren(r: RegionPlan, t: Topology, map: AddressMap, meshKey: string, keysFile: string | null, controlUrl: string) {
  const level = process.env.EDGEQ_LOG_LEVEL ?? 'warn';
  const brokers = r.brokerPorts.map(loopback).join(',');
  const logFile = (name: string) => join(r.dataDir, 'logs', `${name}.log`);
  const arbiter = { name: `${r.name}/arbiter`, region: r.name, role: 'arbiter' as const, args: ['arbiter', '--port', String(r.arbiterPort), '--data-dir', join(r.dataDir, 'arbiter')], logFile: logFile('arbiter') };
  const brokerSpecs = r.brokerPorts.map((port, i) => ({
    name: `${r.name}/broker-${i + 1}`,
    region: r.name,
    role: 'broker' as const,
    args: [
      'broker',
      '--id', String(i + 1),
      '--host', '127.0.0.1',
      '--port', String(port),
      '--data-dir', join(r.dataDir, `broker-${i + 1}`),
      '--region', r.name,
      '--arbiter', 'embedded',
      '--arbiter-endpoints', loopback(r.arbiterPort),
      '--cell-id', r.name,
      '--admin-port', String(r.adminPorts[i]),
      // The local deployment only: brokers serve unauthenticated clients (said at start).
      '--auth', 'none',
    ],
    env: { EDGEQ_CELL__SIZE: String(t.brokersPerRegion), EDGEQ_LOG_LEVEL: level },
    logFile: logFile(`broker-${i + 1}`),
    startTimeoutMs: BROKER_START_MS_MAX,
  }));
  const seeds = t.regions.filter((o) => o !== r).map((o) => loopback(o.meshPort));
  // The local deployment runs without API keys unless given a keys file (`--keys`, e.g. for a
  // bench that needs tenants told apart); the gateway's listening line says which.
  const gateway = {
    name: `${r.name}/gateway`,
    region: r.name,
    role: 'gateway' as const,
    args: [
      'gateway',
      '--brokers', brokers,
      '--host', '127.0.0.1',
      '--port', String(r.gatewayPort),
      ...(keysFile === null ? ['--no-auth'] : ['--keys', keysFile]),
      '--region', r.name,
      '--member', `${r.name}-gw`,
      '--mesh-port', String(r.meshPort),
      ...(seeds.length > 0 ? ['--mesh-seeds', seeds.join(',')] : []),
      // Every region's gateway serves the same drill reports (one machine, one data folder) and starts drills through this control API.
      '--drills-dir', resolve(t.dataDir, 'drills'),
      '--drill-control', controlUrl,
    ],
    // Everything else of the supervisor's environment (EDGEQ_LIMITER*, EDGEQ_TENANT_WEIGHTS, …)
    // reaches every child as it is: Supervisor.start spawns with process.env under spec.env.
    env: { EDGEQ_LOG_LEVEL: level, EDGEQ_MESH_KEY: meshKey, EDGEQ_MESH_ADDRESS_MAP: JSON.stringify(map) },
    logFile: logFile('gateway'),
  };
  return { arbiter, brokers: brokerSpecs, gateway };
}

/** Registers `edgeq dev`. */
export function registerDevCommand(program: Command): void {
  program
    .command('dev')
    .description('run the local multi-region deployment on 127.0.0.1: per region an embedded arbiter, a cell of brokers and a gateway with its mesh agent, supervised, with emulated WAN links between regions')
    .option('--data-dir <dir>', 'data folder (EDGEQ_DATA_DIR, default ./data); each region gets <dir>/<region>')
    .option('--regions <n|a,b,c>', 'how many regions (1..10 of us-east, eu-west, ap-south, …) or their names (default 3)')
    .option('--brokers-per-region <n>', 'brokers in each region\'s cell, 1..9 (default 3)')
    .option('--brokers <n>', 'the same as --brokers-per-region')
    .option('--wan-latency-ms <n>', 'one-way latency of every link between regions (default 25)')
    .option('--port <n>', 'first gateway HTTP port; region i gets port + i (EDGEQ_PORT, default 8080)')
    .option('--broker-port <n>', 'first broker port; broker b of region i listens on port + 10 i + b - 1 (EDGEQ_BROKER_PORT, default 9092)')
    .option('--arbiter-port <n>', 'first arbiter port; region i gets port + i (EDGEQ_ARBITER_PORT, default 7090)')
    .option('--control-port <n>', 'port of the control API (EDGEQ_CONTROL_PORT, default 8090)')
    .option('--keys <file>', 'API keys file (JSON; see docs/http-api.md) for every gateway, instead of running them without auth')
    .option(TRACING_OPTIONS[0]![0], `${TRACING_OPTIONS[0]![1]}; every broker and gateway`)
    .option(TRACING_OPTIONS[1]![0], TRACING_OPTIONS[1]![1])
    .action(async (flags: DevFlags) => {
      const logger = createLogger({ level: process.env.EDGEQ_LOG_LEVEL ?? 'info', name: 'dev' });
      const env = process.env;
      // Tracing reaches every child through the standard variables (they inherit this environment); checked now.
      resolveTracingConfig({ flags, env });
      if (flags.otlpEndpoint !== undefined) env.OTEL_EXPORTER_OTLP_ENDPOINT = flags.otlpEndpoint;
      if (flags.traceSampleRatio !== undefined) env.OTEL_TRACES_SAMPLER_ARG = flags.traceSampleRatio;
      const t = planTopology({
        ...(flags.regions !== undefined ? { regions: flags.regions } : {}),
        ...((flags.brokersPerRegion ?? flags.brokers) !== undefined ? { brokersPerRegion: flags.brokersPerRegion ?? flags.brokers } : {}),
        dataDir: flags.dataDir ?? env.EDGEQ_DATA_DIR ?? './data',
        ...optional('gatewayPort', flags.port ?? env.EDGEQ_PORT),
        ...optional('brokerPort', flags.brokerPort ?? env.EDGEQ_BROKER_PORT),
        ...optional('arbiterPort', flags.arbiterPort ?? env.EDGEQ_ARBITER_PORT),
        ...optional('meshPort', env.EDGEQ_MESH_PORT),
        ...optional('adminPort', env.EDGEQ_ADMIN_PORT),
        ...optional('controlPort', flags.controlPort ?? env.EDGEQ_CONTROL_PORT),
        ...optional('wanLatencyMs', flags.wanLatencyMs),
      });
      // The keys file is read and validated here, before anything starts: a gateway that refused it
      // later would only say that it exited before it was ready. Absolute, so a child started from
      // another folder reads the same file.
      const keysFile = flags.keys === undefined ? null : resolve(flags.keys);
      if (keysFile !== null) {
        await Authenticator.fromFile(keysFile).catch((err: unknown) => {
          const why = err instanceof Error ? err.message : String(err);
          throw new EdgeqError('INVALID_CONFIG', `--keys: ${why}`, { cause: err, details: { key: 'keys' } });
        });
      }
      // Every port is checked before anything starts: a taken one is a clear error, nothing started.
      await checkPortsFree(t);
      await mkdir(t.dataDir, { recursive: true });
      const emulator = new LinkEmulator({ defaults: { latencyMs: t.wanLatencyMs }, logger });
      // EDGEQ_DEV_RESTART_DELAY_MS: how long a dead process stays dead before its restart (as a
      // crash-loop backoff would), e.g. for a test that watches the mesh declare a gateway dead.
      const restartDelayMs = env.EDGEQ_DEV_RESTART_DELAY_MS === undefined ? undefined : Number(env.EDGEQ_DEV_RESTART_DELAY_MS);
      if (restartDelayMs !== undefined && !(Number.isSafeInteger(restartDelayMs) && restartDelayMs >= 0 && restartDelayMs <= 600_000)) {
        throw new EdgeqError('INVALID_CONFIG', `EDGEQ_DEV_RESTART_DELAY_MS must be an integer in [0, 600000], got ${env.EDGEQ_DEV_RESTART_DELAY_MS}`, { details: { key: 'EDGEQ_DEV_RESTART_DELAY_MS' } });
      }
      const sup = new Supervisor({ logger, ...(restartDelayMs !== undefined ? { restartDelayMs } : {}) });
      const specs = new Map<string, { region: string; role: DevProcess['role'] }>();
      let control: Awaited<ReturnType<typeof startControlApi>> | null = null;
      let stopping: Promise<void> | null = null;
      const stopAll = () =>
        (stopping ??= (async () => {
          // Gateways first (no new requests), then brokers (they flush), then arbiters.
          await sup.stop([
            ...t.regions.map((r) => `${r.name}/gateway`),
            ...t.regions.flatMap((r) => r.brokerPorts.map((_, i) => `${r.name}/broker-${i + 1}`)),
            ...t.regions.map((r) => `${r.name}/arbiter`),
          ]);
          await control?.close();
          await emulator.close();
        })());
      // From here on a SIGINT or SIGTERM stops everything, also while the deployment is still
      // coming up: by default the signal would end this process and orphan every child started so far.
      let signalled: string | null = null;
      const stoppedBySignal = new Promise<void>((resolve) => {
        const onSignal = (signal: string) => {
          signalled ??= signal;
          logger.info({ signal }, 'stopping the local deployment');
          void stopAll().then(resolve);
        };
        process.once('SIGTERM', () => onSignal('SIGTERM'));
        process.once('SIGINT', () => onSignal('SIGINT'));
      });
      try {
        const maps = await wire(emulator, t);
        // A fresh key per deployment unless one is given (tests craft messages under it): the mesh
        // authenticates every message (HMAC-SHA256).
        const meshKey = env.EDGEQ_MESH_KEY || randomBytes(32).toString('base64');
        control = await startControlApi({
          host: '127.0.0.1',
          port: t.controlPort,
          emulator,
          processes: () =>
            sup.status().map((s) => ({ ...(specs.get(s.name) ?? { region: '', role: 'broker' as const }), name: s.name, pid: s.pid, held: s.held })),
          hold: (name, signal) => sup.hold(name, signal),
          release: (name) => sup.release(name),
          deployment: () => describeDeployment(t, faultStorageKind(env)),
        });
        await Promise.all(
          t.regions.map(async (r) => {
            const c = regionChildren(r, t, maps.get(r.name)!, meshKey, keysFile, `http://127.0.0.1:${t.controlPort}`);
            for (const s of [c.arbiter, ...c.brokers, c.gateway]) specs.set(s.name, { region: s.region, role: s.role });
            await sup.start(c.arbiter);
            await Promise.all(c.brokers.map((b) => sup.start(b)));
            await sup.start(c.gateway);
          }),
        );
      } catch (err) {
        await stopAll();
        // Stopped on purpose while starting: not a failure to report.
        if (signalled !== null) return;
        throw err;
      }
      if (signalled !== null) return void (await stopAll());
      const regions = t.regions.map((r) => ({
        region: r.name,
        gateway: `http://127.0.0.1:${r.gatewayPort}`,
        brokers: r.brokerPorts.map(loopback).join(','),
        arbiter: loopback(r.arbiterPort),
        mesh: loopback(r.meshPort),
        metrics: r.adminPorts.map((p) => `http://127.0.0.1:${p}/metrics`),
        dashboard: `http://127.0.0.1:${r.gatewayPort}/dashboard`,
      }));
      const first = regions[0]!;
      const controlUrl = `http://127.0.0.1:${t.controlPort}`;
      const processes = sup.status().map((s) => ({ name: s.name, ...specs.get(s.name), pid: s.pid }));
      // One machine-readable line (tests, tools); the first region's fields keep the single-region shape.
      process.stdout.write(
        `${JSON.stringify({ event: 'ready', gateway: first.gateway, brokers: first.brokers, arbiter: first.arbiter, metrics: first.metrics, regions, control: controlUrl, wanLatencyMs: t.wanLatencyMs, dataDir: t.dataDir, auth: keysFile !== null, processes })}\n`,
      );
      process.stderr.write(
        [
          `edgeq dev: ${t.regions.length} region(s), ${t.brokersPerRegion} broker(s) each, ${keysFile === null ? 'auth off (local deployment)' : `auth on (keys ${keysFile})`}; data in ${t.dataDir}`,
          '  brokers: binary protocol without TLS or authentication (--auth none): the local deployment only, never on a shared network (docs/security.md)',
          ...regions.map((r) => `  ${r.region}: gateway ${r.gateway}  dashboard ${r.dashboard}  brokers ${r.brokers}  arbiter ${r.arbiter}  mesh ${r.mesh}`),
          `  logs: ${t.regions.map((r) => join(r.dataDir, 'logs')).join(', ')} (one file per process; EDGEQ_LOG_LEVEL=info|debug for more than warnings)`,
          `  control API ${controlUrl} (GET /v1/dev/links, PUT /v1/dev/links/{from}/{to}, GET /v1/dev/processes, POST /v1/dev/processes/{name}/hold|release, GET /v1/dev/deployment); links between regions: ${t.wanLatencyMs} ms one way`,
          '  Ctrl-C stops everything',
          '',
        ].join('\n'),
      );
      await stoppedBySignal;
    });
}

/** Where every part of the deployment is, for `GET /v1/dev/deployment` (drills find brokers' data folders there). */
function describeDeployment(t: Topology, faultStorage: DevDeployment['faultStorage']): DevDeployment {
  return {
    dataDir: resolve(t.dataDir),
    faultStorage,
    regions: t.regions.map((r) => ({
      region: r.name,
      gateway: `http://127.0.0.1:${r.gatewayPort}`,
      gatewayName: `${r.name}/gateway`,
      arbiter: { name: `${r.name}/arbiter`, address: loopback(r.arbiterPort), dataDir: resolve(r.dataDir, 'arbiter') },
      brokers: r.brokerPorts.map((port, i) => ({
        name: `${r.name}/broker-${i + 1}`,
        id: i + 1,
        address: loopback(port),
        admin: `http://127.0.0.1:${r.adminPorts[i]}`,
        dataDir: resolve(r.dataDir, `broker-${i + 1}`),
      })),
    })),
  };
}

function optional<K extends string>(key: K, value: string | undefined): Partial<Record<K, string>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, string>);
}
