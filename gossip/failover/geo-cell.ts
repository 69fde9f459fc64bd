/**
 * What failover needs of this region's cell: its consumer groups and their commits, simple
 * commits of the internal `__geo.<region>.<group>` groups, the live members of a group, and the
 * leader's log of a partition (headers are all that is read of it). Injected, so the publisher and
 * translator run over a fake in unit tests and over the binary protocol in a gateway.
 */

/** One committed offset of a group. */
export interface GroupCommit {
  topic: string;
  partition: number;
  offset: number;
  metadata: string;
}

/** A piece of a partition's log from the local leader. */
export interface LogChunk {
  /** Whole batches from the one holding the requested offset; empty at the high watermark. */
  records: Buffer;
  highWatermark: number;
  logStartOffset: number;
}

export interface GeoCell {
  /** Every group of the cell (with members or commits). */
  listGroups(): Promise<string[]>;
  /** A group's commits (only partitions with one). */
  groupCommits(group: string): Promise<GroupCommit[]>;
  /** Commits for a group without members (generation -1); refused while it has members. */
  commit(group: string, commits: GroupCommit[]): Promise<void>;
  /** Members of the group now (0 for an Empty, Dead or unknown group). */
  liveMembers(group: string): Promise<number>;
  /** Reads the local leader's log from `offset` (OFFSET_OUT_OF_RANGE below its log start, with details.logStartOffset). */
  read(topic: string, partition: number, offset: number, maxBytes: number): Promise<LogChunk>;
}
