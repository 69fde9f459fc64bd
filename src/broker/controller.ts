/**
 * The seam between a broker and the cell around it. A lone broker has none: it leads every
 * partition it holds. In a cell, a controller (region/cell) keeps the broker registered in the
 * arbiter under a lease, tells it which replicas it leads or follows, and writes topic, ISR and
 * producer-id changes to the arbiter with compare-and-set.
 */
import type { Quota } from '../../ratelimit/index.ts';
import type { BrokerInfo, BrokerStatus } from '../protocol/index.ts';
import type { QuotaChange } from './quota-changes.ts';
import type { Partition } from './partition.ts';
import type { TopicRecord } from './topic-store.ts';
import type { CreateTopicInput, TopicManager } from './topic-manager.ts';

/** Who leads a partition, in which epoch, with which in-sync replicas. */
export interface PartitionState {
  /** Broker id of the leader, -1 while there is none. */
  leader: number;
  leaderEpoch: number;
  isr: number[];
  replicas: number[];
}

/** What the broker offers its controller. */
export interface CellHost {
  brokerId: number;
  host: string;
  port: number;
  region: string;
  topics: TopicManager;
  /** A replica's role changed (start or stop fetching, open or close the group coordinator). */
  onRoleChange(partition: Partition): void;
  /**
   * Whether the local replica of `topic`-`partition` may lead now. False when it may have lost
   * records it had acknowledged (an unclean shutdown, a tail cut by recovery) and has not caught
   * up since: the controller then never elects it, and a restarted broker named leader resigns
   * instead of taking up a new epoch. Absent: every local replica is eligible.
   */
  eligibleToLead?(topic: string, partition: number): boolean;
  /**
   * The local replicas that are recovering (they may lack records they once held), with where
   * their logs end: the controller publishes them so the cell knows, and, when every replica of a
   * partition is recovering, elects the one with the most (`lastEpoch`, then `logEndOffset`).
   */
  recoveringReplicas?(): RecoveringReplica[];
  /**
   * The cell's quota of (tenant, topic) changed (null: deleted), as the watch saw it: the broker
   * keeps its quota book in step. Called for every quota the cell holds when the view is built.
   */
  onQuotaChange?(tenant: string, topic: string, quota: Quota | null): void;
}

/** A recovering local replica as the cell is told of it. */
export interface RecoveringReplica {
  topic: string;
  /** The topic record's id, so the entry never applies to a topic created again under the name. */
  topicId: string;
  partition: number;
  /** The latest leader epoch in its log, and its log end offset. */
  lastEpoch: number;
  logEndOffset: number;
  reason: string;
}

/** Hands out producer ids and epochs (InitProducerId) and says which epoch is current. */
export interface ProducerIdSource {
  init(producerId: number, producerEpoch: number): Promise<{ producerId: number; producerEpoch: number }>;
  currentEpoch(producerId: number): number | undefined;
}

/** The cell as one broker sees it. */
export interface CellController extends ProducerIdSource {
  readonly cellId: string;
  /**
   * Registers the broker and brings its topics and replica roles in line with the arbiter. A
   * partition whose state names this broker leader in an epoch of an earlier incarnation (before
   * a restart or a lost lease) is not led in that epoch: the controller bumps the epoch first, or
   * resigns when the host says the replica is not eligible.
   */
  start(host: CellHost): Promise<void>;
  /**
   * True while this broker may take writes: its lease is valid with the safety margin and its
   * watch on the arbiter is up and caught up (a broker blind to leadership changes is fenced).
   */
  canLead(): boolean;
  /** Live brokers. */
  brokers(): BrokerInfo[];
  brokerStatus(): BrokerStatus[];
  topicRecords(): TopicRecord[];
  partitionState(topic: string, partition: number): PartitionState | undefined;
  createTopic(input: CreateTopicInput, options?: { validateOnly?: boolean; internal?: boolean }): Promise<void>;
  deleteTopic(name: string): Promise<void>;
  /** Compare-and-set of a partition's ISR by its leader; true when it took effect. */
  changeIsr(partition: Partition, isr: number[]): Promise<boolean>;
  /**
   * Applies quota changes in one arbiter transaction (all or nothing), durably: resolved once
   * the arbiter holds them; every broker of the cell then hears of them through its watch.
   * Absent: the cell keeps no quotas (the broker keeps its own file).
   */
  alterQuotas?(changes: readonly QuotaChange[]): Promise<void>;
  /** A local replica that was recovering has caught up (or was elected): the cell forgets the mark. */
  replicaRecovered?(topic: string, partition: number): void;
  close(): Promise<void>;
}
