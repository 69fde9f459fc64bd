/** The drill's checker (issue 16): checks a run's produced, drained, polled and replicated records, and reads replicas from disk. */
export { checkRun, CHECK_EXAMPLES_MAX, CHECK_FINDINGS, type CheckInput, type CheckFinding, type CheckRunResult } from './check.ts';
export {
  readReplicaBatches,
  BROKER_TOPICS_DIR,
  BROKER_TOPICS_FILE,
  REPLICA_BATCHES_MAX,
  REPLICA_READ_CHUNK_BYTES,
  type ListedBatch,
  type ReadReplicaOptions,
} from './replica-batches.ts';
