/**
 * The shape of the local multi-region deployment (`edgeq dev`): which regions, how many brokers
 * each, and every port, worked out and checked before anything starts. A pure function of the
 * flags and environment, so bad input (an unknown or invalid region, a duplicate, ports that
 * collide or fall outside the range) is a clear INVALID_CONFIG and nothing is started.
 *
 * Ports, for region i (0-based) and broker b (1-based):
 *
 *   gateway HTTP   EDGEQ_PORT (8080) + i
 *   mesh (UDP+TCP) EDGEQ_MESH_PORT (7946) + i
 *   arbiter        EDGEQ_ARBITER_PORT (7090) + i
 *   broker b       EDGEQ_BROKER_PORT (9092) + 10·i + (b − 1)
 *   broker admin   EDGEQ_ADMIN_PORT (broker port + 100) + 10·i + (b − 1)
 *   control API    EDGEQ_CONTROL_PORT (8090)
 *
 * so the first region keeps the single-region ports (gateway 8080, brokers 9092-9094).
 */
import { join } from 'node:path';
import { EdgeqError } from '../../core/errors.ts';

/** Regions `--regions N` takes, in order. */
export const DEFAULT_REGIONS: readonly string[] = ['us-east', 'eu-west', 'ap-south', 'us-west', 'eu-north', 'ap-east', 'sa-east', 'af-south', 'me-central', 'ca-central'];
/** A site name: what a region may be called (it becomes a cell id, a mesh tag and a folder). */
export const REGION_NAME = /^[a-z0-9-]{1,63}$/;
/** Brokers per region: the per-region port block is 10 wide. */
export const BROKERS_PER_REGION_MAX = 9;
/** Regions: the gateways take EDGEQ_PORT + i, below the control port's default 8090. */
export const REGIONS_MAX = DEFAULT_REGIONS.length;
/** Largest one-way latency `--wan-latency-ms` takes. */
export const WAN_LATENCY_MS_MAX = 10_000;

/** One region of the deployment. */
export interface RegionPlan {
  name: string;
  index: number;
  dataDir: string;
  arbiterPort: number;
  gatewayPort: number;
  meshPort: number;
  brokerPorts: number[];
  adminPorts: number[];
}

/** The whole deployment. */
export interface Topology {
  regions: RegionPlan[];
  brokersPerRegion: number;
  controlPort: number;
  wanLatencyMs: number;
  dataDir: string;
}

/** What the flags and environment give. */
export interface TopologyInput {
  regions?: string;
  brokersPerRegion?: string;
  dataDir?: string;
  gatewayPort?: string;
  brokerPort?: string;
  arbiterPort?: string;
  meshPort?: string;
  adminPort?: string;
  controlPort?: string;
  wanLatencyMs?: string;
}

const bad = (key: string, message: string): EdgeqError => new EdgeqError('INVALID_CONFIG', message, { details: { key } });

function integer(raw: string | undefined, fallback: number, key: string, min: number, max: number): number {
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n < min || n > max) throw bad(key, `${key} must be an integer in [${min}, ${max}], got ${JSON.stringify(raw)}`);
  return n;
}

/** The region names `--regions` asks for: a count of the default ones, or a comma list of names. */
export function parseRegions(raw: string | undefined): string[] {
  const value = (raw ?? '3').trim();
  if (/^\d+$/.test(value)) {
    const n = Number(value);
    if (n < 1 || n > REGIONS_MAX) throw bad('regions', `--regions ${value}: a count must be 1..${REGIONS_MAX} (the default regions are ${DEFAULT_REGIONS.join(', ')}); or name them: --regions a,b,c`);
    return DEFAULT_REGIONS.slice(0, n);
  }
  const names = value.split(',').map((s) => s.trim());
  if (names.length > REGIONS_MAX) throw bad('regions', `--regions names ${names.length} regions; at most ${REGIONS_MAX}`);
  for (const n of names) {
    if (!REGION_NAME.test(n)) throw bad('regions', `--regions: "${n}" is not a valid site name ([a-z0-9-]{1,63})`);
  }
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup !== undefined) throw bad('regions', `--regions names "${dup}" twice`);
  return names;
}

/** Works out and checks the deployment's shape. */
export function planTopology(input: TopologyInput): Topology {
  const names = parseRegions(input.regions);
  const brokersPerRegion = integer(input.brokersPerRegion, 3, 'brokers-per-region', 1, BROKERS_PER_REGION_MAX);
  const gatewayBase = integer(input.gatewayPort, 8080, 'EDGEQ_PORT', 1, 65535);
  const brokerBase = integer(input.brokerPort, 9092, 'EDGEQ_BROKER_PORT', 1, 65535);
  const arbiterBase = integer(input.arbiterPort, 7090, 'EDGEQ_ARBITER_PORT', 1, 65535);
  const meshBase = integer(input.meshPort, 7946, 'EDGEQ_MESH_PORT', 1, 65535);
  const adminBase = integer(input.adminPort, brokerBase + 100, 'EDGEQ_ADMIN_PORT', 1, 65535);
  const controlPort = integer(input.controlPort, 8090, 'EDGEQ_CONTROL_PORT', 1, 65535);
  const wanLatencyMs = integer(input.wanLatencyMs, 25, 'wan-latency-ms', 0, WAN_LATENCY_MS_MAX);
  const dataDir = input.dataDir ?? './data';
  const regions = names.map((name, i): RegionPlan => ({
    name,
    index: i,
    dataDir: join(dataDir, name),
    arbiterPort: arbiterBase + i,
    gatewayPort: gatewayBase + i,
    meshPort: meshBase + i,
    brokerPorts: Array.from({ length: brokersPerRegion }, (_, b) => brokerBase + 10 * i + b),
    adminPorts: Array.from({ length: brokersPerRegion }, (_, b) => adminBase + 10 * i + b),
  }));
  const topology: Topology = { regions, brokersPerRegion, controlPort, wanLatencyMs, dataDir };
  checkPorts(topology);
  return topology;
}

/** Every port the deployment listens on, named. */
export function portsOf(t: Topology): { port: number; what: string }[] {
  const out: { port: number; what: string }[] = [{ port: t.controlPort, what: 'the control API' }];
  for (const r of t.regions) {
    out.push({ port: r.gatewayPort, what: `${r.name}'s gateway` }, { port: r.meshPort, what: `${r.name}'s mesh agent` }, { port: r.arbiterPort, what: `${r.name}'s arbiter` });
    r.brokerPorts.forEach((port, b) => out.push({ port, what: `${r.name}'s broker ${b + 1}` }));
    r.adminPorts.forEach((port, b) => out.push({ port, what: `${r.name}'s broker ${b + 1} admin (/metrics)` }));
  }
  return out;
}

function checkPorts(t: Topology): void {
  const seen = new Map<number, string>();
  for (const { port, what } of portsOf(t)) {
    if (port < 1 || port > 65535) throw bad('ports', `${what} would listen on port ${port}, outside [1, 65535]: lower the base port`);
    const other = seen.get(port);
    if (other !== undefined) throw bad('ports', `${what} and ${other} would both listen on port ${port}: move one of the base ports (EDGEQ_PORT, EDGEQ_MESH_PORT, EDGEQ_ARBITER_PORT, EDGEQ_BROKER_PORT, EDGEQ_ADMIN_PORT, EDGEQ_CONTROL_PORT)`);
    seen.set(port, what);
  }
}
