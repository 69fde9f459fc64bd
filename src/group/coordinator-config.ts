/**
 * Settings and bounds of the group coordinator. Every map and queue the coordinator keeps is
 * bounded by one of these; the arithmetic behind each default is in its comment.
 */
import { EdgeqError } from '../core/index.ts';

export interface CoordinatorConfig {
  /** Groups held in memory (members, generations). 10,000 groups × 100 members × ~1 KiB ≈ 1 GB
   * worst case; typical groups are far smaller. Empty groups are evicted first when full. */
  groupsMax: number;
  /** Members of one group (Kafka's group.max.size). Also bounds pending joins/syncs per group. */
  membersPerGroupMax: number;
  /** UTF-8 bytes of a group id (Kafka tools assume ≤ 255). */
  groupIdBytesMax: number;
  /** UTF-8 bytes of a client id (it prefixes generated member ids). */
  clientIdBytesMax: number;
  /** UTF-8 bytes of a protocol type or protocol name. */
  protocolNameBytesMax: number;
  /** Protocols (assignors) one member may announce. */
  protocolsPerMemberMax: number;
  /** Bytes of one member's protocol metadata, all protocols together. A subscription to 1,000
   * topics of ~60 B each is ~62 KiB, so 64 KiB fits large consumers. */
  memberMetadataBytesMax: number;
  /** Bytes of one member's assignment in SyncGroup. 1 MiB ≈ 100k partitions of ~10 B each. */
  assignmentBytesMax: number;
  /** Smallest session timeout a member may ask for: lower ones churn groups on GC pauses. */
  sessionTimeoutMsMin: number;
  /** Largest session timeout: a dead member holds its partitions at most this long. */
  sessionTimeoutMsMax: number;
  /** Largest rebalance timeout a member may ask for (Kafka's max.poll.interval.ms default ×2). */
  rebalanceTimeoutMsMax: number;
  /** Wait after the first join into an Empty group, so members starting together share a
   * generation instead of causing one rebalance each. Extended per new member, capped by the
   * rebalance timeout. 0 disables it. */
  initialRebalanceDelayMs: number;
  /** Bytes of the metadata string of one committed offset (Kafka's offset.metadata.max.bytes). */
  offsetMetadataBytesMax: number;
  /** Partitions in one OffsetCommit. One commit is one batch: keys ≤ ~530 B and values ≤ ~4.2 KiB
   * (with 4 KiB metadata) give 500 × 4.7 KiB ≈ 2.4 MB, under the log's 4 MiB messageBytesMax. */
  commitPartitionsMax: number;
}

export const COORDINATOR_DEFAULTS: Readonly<CoordinatorConfig> = Object.freeze({
  groupsMax: 10_000,
  membersPerGroupMax: 1000,
  groupIdBytesMax: 255,
  clientIdBytesMax: 255,
  protocolNameBytesMax: 255,
  protocolsPerMemberMax: 16,
  memberMetadataBytesMax: 64 * 1024,
  assignmentBytesMax: 1024 * 1024,
  sessionTimeoutMsMin: 1000,
  sessionTimeoutMsMax: 300_000,
  rebalanceTimeoutMsMax: 600_000,
  initialRebalanceDelayMs: 300,
  offsetMetadataBytesMax: 4096,
  commitPartitionsMax: 500,
});

/** Fills defaults and checks every field and the relations between them (INVALID_CONFIG names the key). */
export function resolveCoordinatorConfig(partial: Partial<CoordinatorConfig> = {}): CoordinatorConfig {
  const c: CoordinatorConfig = { ...COORDINATOR_DEFAULTS, ...partial };
  const bad = (key: keyof CoordinatorConfig, why: string): never => {
    throw new EdgeqError('INVALID_CONFIG', `group.${key} ${why}, got ${String(c[key])}`, { details: { key: `group.${key}` } });
  };
  for (const key of Object.keys(COORDINATOR_DEFAULTS) as (keyof CoordinatorConfig)[]) {
    const v = c[key];
    const min = key === 'initialRebalanceDelayMs' ? 0 : 1;
    if (!Number.isSafeInteger(v) || v < min) bad(key, `must be an integer ≥ ${min}`);
  }
  if (c.sessionTimeoutMsMin > c.sessionTimeoutMsMax) bad('sessionTimeoutMsMin', 'must not exceed group.sessionTimeoutMsMax');
  // JoinGroup carries the timeouts as uint32.
  if (c.sessionTimeoutMsMax > 2 ** 32 - 1) bad('sessionTimeoutMsMax', 'must fit in 32 bits');
  if (c.rebalanceTimeoutMsMax > 2 ** 32 - 1) bad('rebalanceTimeoutMsMax', 'must fit in 32 bits');
  return c;
}
