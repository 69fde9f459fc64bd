/**
 * `GeoCell` over this region's cell through the binary protocol: the admin client for groups and
 * commits, and a plain Fetch (no origin filter: batches as stored) of the partition leader.
 */
import { Admin, Cluster, isStaleMetadataError } from '../../src/client/index.ts';
import { isEdgeqError, type Logger } from '../../src/core/index.ts';
import { errorOf, internalClientId, type TlsClientSource } from '../../src/protocol/index.ts';
import type { GeoCell, GroupCommit, LogChunk } from './geo-cell.ts';
import { GEO_REQUEST_TIMEOUT_MS } from './limits.ts';

const EMPTY = Buffer.alloc(0);

export class ClusterGeoCell implements GeoCell {
  private readonly cluster: Cluster;
  private readonly admin: Admin;

  /** `security`: how the brokers are reached when they serve TLS or need credentials (docs/security.md). */
  constructor(o: { region: string; localBrokers: string[]; logger: Logger; security?: { tls?: TlsClientSource; apiKey?: string } }) {
    this.cluster = new Cluster({ brokers: o.localBrokers, clientId: internalClientId(`edgeq-geo-${o.region}`), logger: o.logger, requestTimeoutMs: GEO_REQUEST_TIMEOUT_MS, ...o.security });
    this.admin = new Admin(this.cluster, { requestTimeoutMs: GEO_REQUEST_TIMEOUT_MS });
  }

  async listGroups(): Promise<string[]> {
    return (await this.admin.listGroups()).map((g) => g.groupId);
  }

  async groupCommits(group: string): Promise<GroupCommit[]> {
    return (await this.admin.fetchGroupOffsets(group)).filter((c) => c.offset >= 0);
  }

  commit(group: string, commits: GroupCommit[]): Promise<void> {
    return this.admin.commitGroupOffsets(group, commits);
  }

  async liveMembers(group: string): Promise<number> {
    try {
      const [d] = await this.admin.describeGroups([group]);
      if (!d || d.state === 'Empty' || d.state === 'Dead') return 0;
      // A group between generations may show no member yet: it is not empty.
      return Math.max(1, d.members.length);
    } catch (err) {
      if (isEdgeqError(err) && err.code === 'GROUP_ID_NOT_FOUND') return 0;
      throw err;
    }
  }

  async read(topic: string, partition: number, offset: number, maxBytes: number): Promise<LogChunk> {
    await this.cluster.ensureFresh([topic]);
    this.cluster.track([topic]);
    const leader = this.cluster.leaderOf(topic, partition);
    const conn = await this.cluster.connectionTo(leader.leaderId);
    const res = await conn.request('Fetch', { replicaId: -1, maxWaitMs: 0, minBytes: 0, maxBytes, topics: [{ name: topic, partitions: [{ partition, fetchOffset: offset, maxBytes }] }] }, { timeoutMs: GEO_REQUEST_TIMEOUT_MS });
    const p = res.topics[0]?.partitions[0];
    if (!p) return { records: EMPTY, highWatermark: offset, logStartOffset: 0 };
    const err = errorOf(p.error, { topic, partition, logStartOffset: Number(p.logStartOffset) });
    if (err) {
      if (isStaleMetadataError(err)) this.cluster.markStale(err);
      throw err;
    }
    // An answer with nothing in it may leave the bytes field out (protobufjs then decodes an empty array, not a Uint8Array).
    const raw = p.records ?? EMPTY;
    const records = Buffer.isBuffer(raw) ? raw : raw instanceof Uint8Array ? Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength) : Buffer.from(raw as ArrayLike<number>);
    return { records, highWatermark: Number(p.highWatermark), logStartOffset: Number(p.logStartOffset) };
  }

  async close(): Promise<void> {
    await this.cluster.close();
  }
}
