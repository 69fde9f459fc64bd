/** The regional cell: a broker's membership, elections, ISR and topics through the arbiter. */
export { ArbiterCellController, type CellControllerOptions } from './cell-controller.ts';
export { CellKeys } from './cell-keys.ts';
export { electionCandidates, type CandidateOptions } from './candidates.ts';
export { ArbiterProducerIdStore, PRODUCER_ID_RESERVE_ATTEMPTS_MAX } from './producer-id-blocks.ts';
export { WATCH_RETRY_MS_MIN_DEFAULT, WATCH_RETRY_MS_MAX_DEFAULT, WATCH_CATCH_UP_MS_MAX_DEFAULT, WATCH_HELD_EVENTS_MAX } from './cell-watch.ts';
