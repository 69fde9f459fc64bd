/**
 * What the gateway serves of the mesh between regions: `GET /v1/mesh` (this member, every member
 * with its state and phi, every region's entry) and the catalogue of global topics that
 * `POST /v1/topics` with `"scope": "global"` and `DELETE` of a global topic go through. A gateway
 * started without a mesh agent answers 404 on `/v1/mesh` and refuses global topics.
 */
import { EdgeqError } from '../core/index.ts';

/** This member, as `/v1/mesh` shows it. */
export interface MeshSelfView {
  region: string;
  member: string;
  incarnation: number;
  pid: number;
}

/** One member of the mesh. */
export interface MeshMemberView {
  region: string;
  member: string;
  address: string;
  state: 'alive' | 'suspect' | 'dead' | 'left';
  incarnation: number;
  /** Phi accrual suspicion of the member, from this member's point of view. */
  phi: number;
  /** Milliseconds since this member last heard from it (-1: never). */
  lastHeardMs: number;
  /** Smoothed round trip of this member's direct probes to it (the link latency), ms; null: itself, or none yet. */
  rttMs: number | null;
}

/** One region's entry. */
export interface MeshRegionView {
  region: string;
  health: unknown;
  load: unknown;
  forecast: unknown;
  version: number;
  /** Wall-clock ms of the entry's last write. */
  updatedAt: number;
}

/** The body of `GET /v1/mesh`. */
export interface MeshView {
  self: MeshSelfView;
  members: MeshMemberView[];
  regions: MeshRegionView[];
  /** Global topics and what this region could not apply of them. */
  catalogue: { topics: { name: string; partitions: number; region: string; version: number }[]; conflicts: { topic: string; reason: string; atMs: number }[] };
  /** Per (origin, global topic, partition): what this region has applied and how far behind it is. */
  replication: ReplicationView[];
  /** The exchange in this region: whether this gateway runs it, its links, the retention gaps it found. */
  exchange: { active: boolean; links: LinkView[]; gaps: GapView[] };
}

export interface ReplicationView {
  origin: string;
  topic: string;
  partition: number;
  appliedOriginOffset: number;
  lagRecords: number;
  lagMs: number;
  /** The region fetched from now (the origin, or a relay while its link is down). */
  source: string | null;
  stalled: boolean;
  lastError: string | null;
  appliedRecords: number;
}

export interface LinkView {
  source: string;
  healthy: boolean;
  bytesTotal: number;
  bytesPerSec: number;
  recordsTotal: number;
}

export interface GapView {
  origin: string;
  topic: string;
  partition: number;
  firstMissingOriginOffset: number;
  lastMissingOriginOffset: number;
  records: number;
  detectedAtMs: number;
}

/** A global topic's definition as the gateway hands it to the catalogue. */
export interface GlobalTopicRequest {
  name: string;
  partitions: number;
  replicationFactor?: number;
  config: Record<string, string>;
}

/** The mesh as the gateway's routes use it. */
export interface GatewayMesh {
  view(): MeshView;
  /** True when `name` is a live global topic. */
  isGlobal(name: string): boolean;
  /** Creates a global topic in every region (resolves once this region's cell has it). */
  createGlobal(def: GlobalTopicRequest): Promise<void>;
  /** Deletes a global topic in every region. */
  deleteGlobal(name: string): Promise<void>;
  /** The other regions of the mesh. */
  otherRegions(): string[];
  /** acks=geo: resolves once `regions` other regions applied this region's records up to `lastOffset`; GEO_TIMEOUT after `timeoutMs`. */
  waitGeo(topic: string, partition: number, lastOffset: number, regions: number, timeoutMs: number): Promise<string[]>;
  /**
   * Moves `group`'s position here from region `from` (docs/geo.md). INVALID_ARGUMENT when `from`
   * is this region, NOT_FOUND when the mesh does not know it or it never published the group,
   * GROUP_NOT_EMPTY when the group has live members here; nothing is written on a refusal.
   */
  failover(group: string, from: string): Promise<FailoverView>;
  /**
   * Records of this region's own writes to global topics not yet applied in the other region
   * furthest behind (origin offsets, as the replicators count lag), for the admission limiter;
   * absent: 0.
   */
  replicationBacklogRecords?(): number;
}

/** One partition of a failover's answer. */
export interface FailoverPartitionView {
  topic: string;
  partition: number;
  startOffset: number;
  filterUntil: number;
  vector: Record<string, number>;
}

/** The body of `POST /v1/groups/{g}/failover`. */
export interface FailoverView {
  group: string;
  from: string;
  partitions: FailoverPartitionView[];
}

/** The refusal of a global topic by a gateway without a mesh agent. */
export function noMesh(): EdgeqError {
  return new EdgeqError('INVALID_ARGUMENT', 'this gateway runs without a mesh agent: global topics need one (start it with --mesh-port)', { details: { key: 'scope' } });
}
