/**
 * What the region-level features need of the mesh agent: its replicated, versioned key-value
 * state (last writer wins on version and member, tombstones for deletions) and who it is. Kept to
 * this so they can be tested over an in-memory store and run over the real agent alike.
 */

/** One entry of the mesh's state as every member converges to it. */
export interface MeshStateEntry {
  key: string;
  /** The JSON value; undefined for a deletion (tombstone). */
  value: unknown;
  /** Orders writes of a key: a hybrid logical clock, compared with the writing member. */
  version: number;
  member: string;
  /** Wall-clock ms of the write at the member that made it. */
  updatedAtMs: number;
  deleted: boolean;
}

/** The mesh as the region features see it. */
export interface MeshStateAccess {
  /** This member's region and id. */
  self(): { region: string; member: string };
  /** Writes `key` (a new version from this member), to be disseminated. */
  setState(key: string, value: unknown): void;
  /** Deletes `key` (a tombstone, disseminated and expired after the mesh's bound). */
  deleteState(key: string): void;
  /** Every entry, tombstones included. */
  state(): MeshStateEntry[];
  /** Called for every change of an entry, local or learned. */
  onStateChange(listener: (entry: MeshStateEntry) => void): () => void;
}

/** Keys of the region features in the mesh state. */
export const MeshKeys = {
  region: (name: string) => `region/${name}`,
  topic: (name: string) => `topic/${name}`,
  isRegion: (key: string) => key.startsWith('region/'),
  isTopic: (key: string) => key.startsWith('topic/'),
  topicName: (key: string) => key.slice('topic/'.length),
} as const;
