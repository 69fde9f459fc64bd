/**
 * The seam between a broker and the cell around it. A lone broker has none: it leads every
 * partition it holds. In a cell, a controller (region/cell) keeps the broker registered in the
 * arbiter under a lease, tells it which replicas it leads or follows, and writes topic, ISR and
 * producer-id changes to the arbiter with compare-and-set.
 */
import type { BrokerInfo, BrokerStatus } from '../protocol/index.ts';
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
}

/** Hands out producer ids and epochs (InitProducerId) and says which epoch is current. */
export interface ProducerIdSource {
  init(producerId: number, producerEpoch: number): Promise<{ producerId: number; producerEpoch: number }>;
  currentEpoch(producerId: number): number | undefined;
}

/** The cell as one broker sees it. */
export interface CellController extends ProducerIdSource {
  readonly cellId: string;
  /** Registers the broker and brings its topics and replica roles in line with the arbiter. */
  start(host: CellHost): Promise<void>;
  /** True while this broker's lease is valid with the safety margin: it may take writes. */
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
  close(): Promise<void>;
}
