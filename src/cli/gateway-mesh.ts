/**
 * The gateway's mesh agent and what runs on it, wired for `edgeq gateway`: the agent (one member
 * per gateway, tagged with its region), this region's entry published every second, the catalogue
 * of global topics reconciled against the region's cell, the mesh's Prometheus metrics in the
 * gateway's registry, and the `GatewayMesh` the HTTP routes use.
 *
 * The mesh key comes from the environment (`EDGEQ_MESH_KEY`, and `EDGEQ_MESH_KEY_SECONDARY` while
 * keys rotate), base64 or hex, never from a flag (flags show in process listings). The address
 * map (`EDGEQ_MESH_ADDRESS_MAP`, JSON `{"udp": {advertised: local}, "tcp": {…}}`) is what the dev
 * deployment hands each region: the only way it reaches other regions is its own end of the
 * emulated links.
 *
 * Mesh security beyond the key (`addMeshSecurityOptions`, `meshSecurityFrom`): push-pull over
 * mutual TLS with `--mesh-tls-ca` (the CA every member's certificate is checked against: it
 * decides who is a member, so it is never taken from the HTTPS listener's `--tls-ca`, which is
 * about HTTP clients), presenting `--mesh-tls-cert`/`--mesh-tls-key`, by default the gateway's
 * own `--tls-cert`/`--tls-key` (which then need both server and client usages), reloaded when
 * the files change; and `--mesh-mac-only` for a rolling upgrade from the MAC-only wire.
 */
import type { TlsClientSource } from '../protocol/index.ts';
import type { Command } from 'commander';
import type { Registry } from 'prom-client';
import { MAC_ONLY_MODES, MeshAgent, registerMeshMetrics, type MacOnlyMode, type MeshKey } from '../../gossip/index.ts';
import { FileTlsMaterial, tlsFilesFromFlags, type TlsMaterial } from '../tls/index.ts';
import { GlobalCatalogue, MeshKeys, RegionPublisher, type ForecastSummary, type RegionHealth, type RegionInfo } from '../../gossip/region/index.ts';
import { ClusterCells, Exchange, exchangeLimits, parseCursorKey, registerExchangeMetrics, type ExchangeLimits, type PartitionCursors } from '../../gossip/exchange/index.ts';
import { ClusterGeoCell, GeoGroups } from '../../gossip/failover/index.ts';
import type { EdgeqClient } from '../client/index.ts';
import { EdgeqError, type Logger } from '../core/index.ts';
import type { GatewayMesh, MeshView } from '../gateway/index.ts';
import { AdminRegionCell } from './region-cell.ts';

/** What `edgeq gateway` passes in. */
export interface GatewayMeshOptions {
  region: string;
  member: string;
  bindHost: string;
  bindPort: number;
  advertise?: string;
  seeds: string[];
  clusterName: string;
  /** This gateway's URL and the broker addresses other regions fetch from. */
  gatewayUrl: string;
  brokers: string[];
  /** This region's brokers as the gateway reaches them (the exchange appends there). */
  localBrokers: string[];
  /** Bounds of the record exchange (`--geo-bandwidth`, …); the defaults otherwise. */
  exchange?: Partial<ExchangeLimits>;
  client: EdgeqClient;
  registry: Registry;
  /** The gateway's cumulative ingress (its produce counters). */
  ingressTotals: () => { records: number; bytes: number };
  /** The region's forecast and plan for the mesh's forecast slot (the planner's; absent: none). */
  forecast?: () => ForecastSummary;
  /** From `meshKeysFrom` and `addressMapFrom`, read before anything starts. */
  keys: MeshKey[];
  translate: (advertised: string, kind: 'udp' | 'tcp') => string;
  logger: Logger;
  /** How the exchange and group failover reach brokers that serve TLS or need credentials (the gateway's own). */
  brokerSecurity?: { tls?: TlsClientSource; apiKey?: string };
  /** Push-pull over mutual TLS (from `meshSecurityFrom`); closed with the mesh. */
  tls?: TlsMaterial;
  /** The MAC-only wire's rolling-upgrade step (`--mesh-mac-only`); absent: off. */
  macOnly?: MacOnlyMode;
}

/** The mesh security flags. */
export interface MeshSecurityFlags {
  meshTlsCa?: string;
  meshTlsCert?: string;
  meshTlsKey?: string;
  meshTlsMinVersion?: string;
  meshMacOnly?: string;
  /** The gateway's own certificate, the default of the mesh's. */
  tlsCert?: string;
  tlsKey?: string;
}

/** Adds the mesh security flags to `edgeq gateway`. */
export function addMeshSecurityOptions(command: Command): Command {
  return command
    .option('--mesh-tls-ca <file>', 'PEM CA of the mesh: push-pull (TCP) runs over mutual TLS and only its certificates are members (EDGEQ_MESH_TLS_CA)')
    .option('--mesh-tls-cert <file>', 'PEM certificate this member presents, with server and client usages (EDGEQ_MESH_TLS_CERT; default --tls-cert); reloaded when the file changes')
    .option('--mesh-tls-key <file>', 'PEM private key of --mesh-tls-cert (EDGEQ_MESH_TLS_KEY; default --tls-key)')
    .option('--mesh-tls-min-version <v>', 'lowest TLS version of the mesh: 1.3 (default) or 1.2 (EDGEQ_MESH_TLS_MIN_VERSION)')
    .option('--mesh-mac-only <mode>', 'the MAC-only (unencrypted) mesh wire of the first release: off (default), accept, or send: the steps of a rolling upgrade (EDGEQ_MESH_MAC_ONLY; docs/security.md)');
}

/** The mesh's TLS material and wire mode from the flags, then EDGEQ_MESH_*, checked before anything binds. */
export async function meshSecurityFrom(flags: MeshSecurityFlags, meshOn: boolean, logger: Logger, env: NodeJS.ProcessEnv = process.env): Promise<{ tls?: TlsMaterial; macOnly?: MacOnlyMode }> {
  const get = (flag: string | undefined, name: string): string | undefined => flag ?? (env[name] === '' ? undefined : env[name]);
  const ca = get(flags.meshTlsCa, 'EDGEQ_MESH_TLS_CA');
  const ownCert = get(flags.meshTlsCert, 'EDGEQ_MESH_TLS_CERT');
  const ownKey = get(flags.meshTlsKey, 'EDGEQ_MESH_TLS_KEY');
  const rawMode = get(flags.meshMacOnly, 'EDGEQ_MESH_MAC_ONLY');
  if (!meshOn) {
    if (ca !== undefined || ownCert !== undefined || ownKey !== undefined || rawMode !== undefined) {
      throw new EdgeqError('INVALID_CONFIG', '--mesh-tls-* and --mesh-mac-only need a mesh (--mesh-port)', { details: { key: '--mesh-port' } });
    }
    return {};
  }
  let macOnly: MacOnlyMode | undefined;
  if (rawMode !== undefined) {
    if (!MAC_ONLY_MODES.includes(rawMode as MacOnlyMode)) throw new EdgeqError('INVALID_CONFIG', `--mesh-mac-only must be one of ${MAC_ONLY_MODES.join(', ')}, got ${rawMode}`, { details: { key: '--mesh-mac-only' } });
    macOnly = rawMode as MacOnlyMode;
    if (macOnly !== 'off') logger.warn({ macOnly }, 'the mesh accepts MAC-only (unencrypted) messages: a rolling-upgrade step, to be turned off once every member runs the encrypted wire');
  }
  if (ca === undefined) {
    if (ownCert !== undefined || ownKey !== undefined) throw new EdgeqError('INVALID_CONFIG', '--mesh-tls-cert/--mesh-tls-key need --mesh-tls-ca: the CA decides who is a member of the mesh', { details: { key: '--mesh-tls-ca' } });
    return macOnly ? { macOnly } : {};
  }
  const useOwn = ownCert !== undefined || ownKey !== undefined;
  if (!useOwn && get(flags.tlsCert, 'EDGEQ_TLS_CERT') === undefined) {
    throw new EdgeqError('INVALID_CONFIG', '--mesh-tls-ca needs a certificate for this member: --mesh-tls-cert and --mesh-tls-key, or the gateway\'s --tls-cert and --tls-key', { details: { key: '--mesh-tls-cert' } });
  }
  const files = tlsFilesFromFlags(
    {
      tlsCa: ca,
      tlsCert: useOwn ? ownCert : get(flags.tlsCert, 'EDGEQ_TLS_CERT'),
      tlsKey: useOwn ? ownKey : get(flags.tlsKey, 'EDGEQ_TLS_KEY'),
      tlsMinVersion: get(flags.meshTlsMinVersion, 'EDGEQ_MESH_TLS_MIN_VERSION'),
    },
    { role: 'server', prefix: useOwn ? '--mesh-tls' : '--tls' },
  );
  const tls = await FileTlsMaterial.load(files!, { logger: logger.child({ component: 'mesh-tls' }) });
  return { tls, ...(macOnly ? { macOnly } : {}) };
}

/** A running mesh for one gateway. */
export interface GatewayMeshHandle {
  mesh: GatewayMesh;
  agent: MeshAgent;
  close(): Promise<void>;
}

/** Reads a key given as base64 or hex (at least 32 bytes outside the dev deployment, which the agent checks). */
function keyFrom(raw: string, name: string): MeshKey {
  const text = raw.trim();
  const bytes = /^[0-9a-fA-F]+$/.test(text) && text.length % 2 === 0 ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
  if (bytes.length === 0) throw new EdgeqError('INVALID_CONFIG', `${name} is not base64 or hex`, { details: { key: name } });
  return bytes;
}

/** The keys from the environment, primary first. */
export function meshKeysFrom(env: NodeJS.ProcessEnv): MeshKey[] {
  const primary = env.EDGEQ_MESH_KEY;
  if (!primary) throw new EdgeqError('INVALID_CONFIG', 'the mesh needs a key: set EDGEQ_MESH_KEY (base64 or hex, at least 32 bytes) on every gateway of the mesh', { details: { key: 'EDGEQ_MESH_KEY' } });
  const keys = [keyFrom(primary, 'EDGEQ_MESH_KEY')];
  if (env.EDGEQ_MESH_KEY_SECONDARY) keys.push(keyFrom(env.EDGEQ_MESH_KEY_SECONDARY, 'EDGEQ_MESH_KEY_SECONDARY'));
  return keys;
}

/** The address map from the environment: advertised `host:port` → the local end of a link. */
export function addressMapFrom(env: NodeJS.ProcessEnv): (advertised: string, kind: 'udp' | 'tcp') => string {
  const raw = env.EDGEQ_MESH_ADDRESS_MAP;
  if (!raw) return (a) => a;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    throw new EdgeqError('INVALID_CONFIG', `EDGEQ_MESH_ADDRESS_MAP is not JSON: ${(err as Error).message}`, { details: { key: 'EDGEQ_MESH_ADDRESS_MAP' } });
  }
  const map = parsed as { udp?: Record<string, unknown>; tcp?: Record<string, unknown> };
  for (const kind of ['udp', 'tcp'] as const) {
    for (const [k, v] of Object.entries(map?.[kind] ?? {})) {
      if (typeof v !== 'string' || !/^[^:]+:\d{1,5}$/.test(v) || !/^[^:]+:\d{1,5}$/.test(k)) {
        throw new EdgeqError('INVALID_CONFIG', `EDGEQ_MESH_ADDRESS_MAP.${kind}: "${k}" → ${JSON.stringify(v)} is not host:port → host:port`, { details: { key: 'EDGEQ_MESH_ADDRESS_MAP' } });
      }
    }
  }
  return (advertised, kind) => (map?.[kind]?.[advertised] as string | undefined) ?? advertised;
}

/** The cell's health as the region entry carries it. */
async function cellHealth(client: EdgeqClient): Promise<RegionHealth> {
  const st = await client.admin().cellStatus();
  const alive = st.brokers.filter((b) => b.alive).length;
  const leaderless = st.partitions.some((p) => p.leaderId < 0);
  return {
    cellReady: !leaderless && st.unreachable.length === 0 && alive > 0,
    brokersAlive: alive,
    brokersTotal: st.brokers.length,
    underReplicatedPartitions: st.partitions.filter((p) => p.isr.length < p.replicas.length).length,
  };
}

/**
 * This region's writes to global topics not yet applied in the other region furthest behind, from
 * the cursors every region publishes (one pass over the mesh state): per partition, this region's
 * own head minus what the other region has applied of this origin, summed over partitions. Origin
 * offsets, as the replicators count lag: an upper bound on records when the log interleaves
 * records applied from other regions.
 */
export function outboundBacklog(entries: readonly { key: string; value: unknown; deleted?: boolean }[], self: string, others: readonly string[], live: ReadonlySet<string>): number {
  const heads = new Map<string, number>();
  const applied = new Map<string, Map<string, number>>();
  for (const e of entries) {
    const k = parseCursorKey(e.key);
    if (!k || e.deleted || !live.has(k.topic)) continue;
    const c = e.value as PartitionCursors;
    const part = `${k.topic}\u0000${k.partition}`;
    if (k.region === self) heads.set(part, typeof c?.head === 'number' ? c.head : -1);
    else if (typeof c?.applied?.[self] === 'number') {
      let m = applied.get(k.region);
      if (!m) applied.set(k.region, (m = new Map()));
      m.set(part, c.applied[self]);
    }
  }
  let worst = 0;
  for (const r of others) {
    let behind = 0;
    for (const [part, head] of heads) behind += Math.max(0, head - (applied.get(r)?.get(part) ?? -1));
    worst = Math.max(worst, behind);
  }
  return worst;
}

/** Starts the mesh agent and everything on it. */
export async function startGatewayMesh(o: GatewayMeshOptions): Promise<GatewayMeshHandle> {
  // Built (and its options checked: key length, cluster name, bounds) before anything binds.
  const agent = new MeshAgent({
    clusterName: o.clusterName,
    member: o.member,
    region: o.region,
    keys: o.keys,
    bindHost: o.bindHost,
    bindPort: o.bindPort,
    ...(o.advertise ? { advertise: o.advertise } : {}),
    seeds: o.seeds,
    translate: o.translate,
    logger: o.logger,
    ...(o.tls ? { tls: o.tls } : {}),
    ...(o.macOnly ? { macOnly: o.macOnly } : {}),
  });
  await agent.start();
  const stopMetrics = registerMeshMetrics(o.registry, agent);
  const publisher = new RegionPublisher(agent, {
    health: () => cellHealth(o.client),
    ingressTotals: o.ingressTotals,
    ...(o.forecast ? { forecast: o.forecast } : {}),
    gateways: [o.gatewayUrl],
    brokers: o.brokers,
  }, { logger: o.logger });
  publisher.start();
  const catalogue = new GlobalCatalogue(agent, new AdminRegionCell(o.client.admin()), { logger: o.logger });
  catalogue.start();
  const limits = exchangeLimits(o.exchange);
  const regionInfo = (region: string): RegionInfo | undefined => agent.state().find((e) => e.key === MeshKeys.region(region) && !e.deleted)?.value as RegionInfo | undefined;
  const cells = new ClusterCells({
    region: o.region,
    localBrokers: o.localBrokers,
    brokersOf: (region) => regionInfo(region)?.brokers ?? [],
    translate: (a) => o.translate(a, 'tcp'),
    logger: o.logger,
    requestTimeoutMs: limits.fetchTimeoutMs,
    appendTimeoutMs: limits.appendTimeoutMs,
    ...(o.brokerSecurity ? { security: o.brokerSecurity } : {}),
  });
  const exchange = new Exchange({ mesh: agent, cells, topics: () => catalogue.list().map((t) => ({ name: t.name, partitions: t.partitions })), limits, logger: o.logger });
  registerExchangeMetrics(o.registry, exchange);
  exchange.start();
  // Group positions for failover between regions: published and translated by the exchange's gateway.
  const geoCell = new ClusterGeoCell({ region: o.region, localBrokers: o.localBrokers, logger: o.logger, ...(o.brokerSecurity ? { security: o.brokerSecurity } : {}) });
  const geoGroups = new GeoGroups({
    mesh: agent,
    cell: geoCell,
    topics: () => new Set(catalogue.list().map((t) => t.name)),
    otherRegions: () => exchange.otherRegions(),
    active: () => exchange.active,
    logger: o.logger,
  });
  geoGroups.start();

  const mesh: GatewayMesh = {
    view(): MeshView {
      const self = agent.self();
      const regions = agent
        .state()
        .filter((e) => MeshKeys.isRegion(e.key) && !e.deleted)
        .map((e) => {
          const info = e.value as RegionInfo;
          return { region: info.region, health: info.health, load: info.load, forecast: info.forecast, version: e.version, updatedAt: e.updatedAtMs };
        })
        .sort((a, b) => a.region.localeCompare(b.region));
      return {
        self: { region: self.region, member: self.member, incarnation: self.incarnation, pid: process.pid },
        members: agent.members().map((m) => ({ region: m.region, member: m.member, address: m.address, state: m.state, incarnation: m.incarnation, phi: m.phi, lastHeardMs: m.lastHeardMs, rttMs: m.rttMs })),
        regions,
        catalogue: {
          topics: catalogue.list().map((t) => ({ name: t.name, partitions: t.partitions, region: t.region, version: t.version })),
          conflicts: catalogue.conflicts(),
        },
        replication: exchange.replication(),
        exchange: { active: exchange.active, links: exchange.linkStatus(), gaps: exchange.gaps() },
      };
    },
    otherRegions: () => exchange.otherRegions(),
    waitGeo: (topic, partition, lastOffset, regions, timeoutMs) => exchange.waitApplied(topic, partition, lastOffset, regions, timeoutMs),
    isGlobal: (name) => catalogue.get(name) !== undefined,
    createGlobal: async (def) => {
      await catalogue.create(def);
    },
    deleteGlobal: (name) => catalogue.delete(name),
    failover: (group, from) => geoGroups.failover(group, from),
    replicationBacklogRecords: () => outboundBacklog(agent.state(), o.region, exchange.otherRegions(), new Set(catalogue.list().map((t) => t.name))),
  };
  return {
    mesh,
    agent,
    close: async () => {
      geoGroups.stop();
      await geoCell.close();
      await exchange.stop();
      await cells.close();
      await publisher.stop();
      await catalogue.stop();
      stopMetrics();
      // Leaving says so (left, not dead), so the others do not wait out a suspicion.
      await agent.leave().catch(() => undefined);
      o.tls?.close();
    },
  };
}
