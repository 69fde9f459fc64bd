/**
 * The broker's topic metadata on disk: `topics.json` in the data folder, rewritten atomically on
 * every change. It is the truth about which topics exist: a log folder without an entry (left by a
 * crash in the middle of a delete) is removed at start.
 *
 * Each topic has an id, and its logs live in `topics/<name>.<id>/<partition>/`, so a topic deleted
 * and created again under the same name never reads the old one's files.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { EdgeqError } from '../core/index.ts';
import type { Storage } from '../log/index.ts';

export const TOPICS_FILE = 'topics.json';
export const TOPICS_DIR = 'topics';
const FORMAT_VERSION = 1;

/** What is stored about one topic. */
export interface TopicRecord {
  name: string;
  id: string;
  partitions: number;
  replicationFactor: number;
  /** The overrides the user gave (dotted keys); defaults are not stored, so they can change. */
  config: Record<string, string>;
  /** Leader epoch of every partition (one broker: bumped on each start; a cell elects). */
  leaderEpoch: number;
  createdAtMs: number;
  internal: boolean;
  /** Replica broker ids of each partition, leader first (a cell); absent on a single broker. */
  assignments?: number[][];
}

interface TopicsFile {
  version: number;
  topics: TopicRecord[];
}

/** Reads and writes topics.json; callers serialise mutations. */
export class TopicStore {
  private constructor(
    private readonly storage: Storage,
    readonly dataDir: string,
    private readonly topics: Map<string, TopicRecord>,
  ) {}

  static async open(storage: Storage, dataDir: string): Promise<TopicStore> {
    await storage.mkdir(dataDir);
    await storage.mkdir(join(dataDir, TOPICS_DIR));
    const path = join(dataDir, TOPICS_FILE);
    const topics = new Map<string, TopicRecord>();
    if (await storage.exists(path)) {
      let parsed: TopicsFile;
      try {
        parsed = JSON.parse((await storage.readFile(path)).toString('utf8')) as TopicsFile;
      } catch (err) {
        throw new EdgeqError('CORRUPT_LOG', `${path} is not valid JSON; the broker cannot know its topics`, { cause: err });
      }
      if (parsed.version !== FORMAT_VERSION || !Array.isArray(parsed.topics)) {
        throw new EdgeqError('CORRUPT_LOG', `${path} has format version ${String(parsed.version)}, expected ${FORMAT_VERSION}`);
      }
      for (const t of parsed.topics) topics.set(t.name, t);
    }
    return new TopicStore(storage, dataDir, topics);
  }

  /** Every topic, internal ones included. */
  list(): TopicRecord[] {
    return [...this.topics.values()];
  }

  get(name: string): TopicRecord | undefined {
    return this.topics.get(name);
  }

  /** The folder of one partition's log. */
  partitionDir(t: Pick<TopicRecord, 'name' | 'id'>, partition: number): string {
    return join(this.dataDir, TOPICS_DIR, `${t.name}.${t.id}`, String(partition));
  }

  /** The folder holding every partition of a topic. */
  topicDir(t: Pick<TopicRecord, 'name' | 'id'>): string {
    return join(this.dataDir, TOPICS_DIR, `${t.name}.${t.id}`);
  }

  /** Adds a topic (durably) and returns its record. */
  async add(t: Omit<TopicRecord, 'id' | 'createdAtMs' | 'leaderEpoch'>, nowMs: number): Promise<TopicRecord> {
    if (this.topics.has(t.name)) throw new EdgeqError('TOPIC_ALREADY_EXISTS', `topic ${t.name} already exists`, { details: { topic: t.name } });
    const rec: TopicRecord = { ...t, id: randomUUID().slice(0, 8), createdAtMs: nowMs, leaderEpoch: 0 };
    this.topics.set(t.name, rec);
    try {
      await this.save();
    } catch (err) {
      this.topics.delete(t.name);
      throw err;
    }
    return rec;
  }

  /** Adds a topic record made elsewhere (the cell's arbiter), keeping its id (durably). */
  async put(rec: TopicRecord): Promise<void> {
    const prev = this.topics.get(rec.name);
    this.topics.set(rec.name, rec);
    try {
      await this.save();
    } catch (err) {
      if (prev) this.topics.set(rec.name, prev);
      else this.topics.delete(rec.name);
      throw err;
    }
  }

  /** Removes a topic's entry (durably); its folders are the caller's to delete. */
  async remove(name: string): Promise<TopicRecord> {
    const rec = this.topics.get(name);
    if (!rec) throw new EdgeqError('UNKNOWN_TOPIC_OR_PARTITION', `topic ${name} does not exist`, { details: { topic: name } });
    this.topics.delete(name);
    try {
      await this.save();
    } catch (err) {
      this.topics.set(name, rec);
      throw err;
    }
    return rec;
  }

  /** Sets every topic's leader epoch (durably). */
  async setLeaderEpochs(epochOf: (t: TopicRecord) => number): Promise<void> {
    for (const t of this.topics.values()) t.leaderEpoch = epochOf(t);
    await this.save();
  }

  /** Folders under topics/ that belong to no topic (a delete cut short by a crash). */
  async orphanDirs(): Promise<string[]> {
    const known = new Set(this.list().map((t) => `${t.name}.${t.id}`));
    const entries = await this.storage.readdir(join(this.dataDir, TOPICS_DIR));
    return entries.filter((e) => !known.has(e)).map((e) => join(this.dataDir, TOPICS_DIR, e));
  }

  private async save(): Promise<void> {
    const file: TopicsFile = { version: FORMAT_VERSION, topics: this.list() };
    await this.storage.writeFileAtomic(join(this.dataDir, TOPICS_FILE), Buffer.from(JSON.stringify(file, null, 2)));
  }
}
