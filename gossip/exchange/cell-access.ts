/**
 * What the exchange needs of the cells it moves records between, kept to these three calls so
 * the replicators run over real brokers (cluster-cells.ts) and over fakes in tests alike.
 */

/** One bounded fetch of one origin's batches from one region's partition leader. */
export interface OriginFetchRequest {
  topic: string;
  partition: number;
  /** The region whose records are wanted. */
  origin: string;
  /**
   * Local offset in the source's log to scan from; -1 lets the source find it from
   * `afterOriginOffset`; -2 continues `session` where its previous fetch ended.
   */
  scanFrom: number;
  /** The fetch session (fetches of one session are sent, and answered, in the order they are made). */
  session?: string;
  /** Batches whose origin offsets are at or below this are skipped (the applying region holds them). */
  afterOriginOffset: number;
  maxBytes: number;
  maxWaitMs: number;
}

export interface OriginFetchResult {
  /** Whole batches of `origin`, each with its origin region and offset in the header. */
  records: Buffer;
  /** Local offset in the source's log after the last batch scanned (the next `scanFrom`). */
  scannedTo: number;
  logStartOffset: number;
  /** Per origin, the highest origin offset the source holds (its own region: its readable end). */
  originCursors: Record<string, number>;
  /** Per origin, the highest origin offset the source's retention deleted (or a bound above it); absent: none. */
  originDeletedUpTo: Record<string, number>;
}

/** What the local leader of a partition holds, per origin. */
export interface LocalOriginState {
  /** Highest origin offset held per origin; this region: the last own offset a consumer can read. */
  cursors: Record<string, number>;
  deletedUpTo: Record<string, number>;
}

/** The outcome of appending one applied batch in the local cell. */
export interface ApplyResult {
  /** The local leader already held it (a retry, or another path got there first). */
  duplicate: boolean;
  baseOffset: number;
}

export interface CellAccess {
  /**
   * Fetches from `region`'s leader of the partition (through that region's end of the link).
   * Throws EdgeqError: OFFSET_OUT_OF_RANGE (details.logStartOffset) below the source's log start;
   * CONNECTION_CLOSED / REQUEST_TIMED_OUT when the region cannot be reached.
   */
  fetch(region: string, req: OriginFetchRequest, signal: AbortSignal): Promise<OriginFetchResult>;
  /**
   * Appends one applied batch at the local leader with acks=all, only if the partition's cursor for
   * the batch's origin is `expectedCursor` (ORIGIN_CURSOR_MISMATCH otherwise; a held batch is a
   * duplicate either way): appends in flight one behind another can never leave a hole.
   */
  apply(topic: string, partition: number, batch: Buffer, signal: AbortSignal, expectedCursor: number): Promise<ApplyResult>;
  /** The local leader's cursors and retention bounds for the partition. */
  localState(topic: string, partition: number, signal: AbortSignal): Promise<LocalOriginState>;
  /** The exchange stopped replicating the partition: anything kept open for it may go. */
  release?(topic: string, partition: number): void;
  /** Resolves when `region`'s cell answers through the link (a cheap request). */
  probe(region: string, signal: AbortSignal): Promise<void>;
  /** The local leader's cursor for `origin`: the highest origin offset in its log, -1 for none (for this region itself: its readable end). */
  localCursor(topic: string, partition: number, origin: string, signal: AbortSignal): Promise<number>;
}
