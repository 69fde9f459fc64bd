/**
 * The EdgeqError family: every operating condition the broker reports carries a stable `code`,
 * a `retriable` flag that drives client retries, and an optional `cause`.
 *
 * The table below is the one place where a code gets its retriability, its HTTP status and its
 * numeric wire code. Wire codes are part of the binary protocol: never renumber, only append.
 */

export interface ErrorSpec {
  /** Numeric code on the binary protocol. Stable forever. */
  readonly wire: number;
  /** Whether a client may retry the same request and expect it to succeed later. */
  readonly retriable: boolean;
  /** HTTP status the gateway answers with. */
  readonly http: number;
}

export const ERROR_SPECS = {
  UNKNOWN: { wire: 1, retriable: false, http: 500 },
  INVALID_CONFIG: { wire: 2, retriable: false, http: 500 },
  CORRUPT_BATCH: { wire: 3, retriable: false, http: 400 },
  MESSAGE_TOO_LARGE: { wire: 4, retriable: false, http: 413 },
  OFFSET_OUT_OF_RANGE: { wire: 5, retriable: false, http: 416 },
  STORAGE_FULL: { wire: 6, retriable: true, http: 507 },
  STORAGE_ERROR: { wire: 7, retriable: true, http: 500 },
  LOG_CLOSED: { wire: 8, retriable: true, http: 503 },
  INVALID_ARGUMENT: { wire: 9, retriable: false, http: 400 },
  UNSUPPORTED_COMPRESSION: { wire: 10, retriable: false, http: 400 },
  QUEUE_FULL: { wire: 11, retriable: true, http: 503 },
  CORRUPT_LOG: { wire: 12, retriable: false, http: 500 },
  TIMEOUT: { wire: 13, retriable: true, http: 504 },
  UNKNOWN_TOPIC_OR_PARTITION: { wire: 14, retriable: false, http: 404 },
  TOPIC_ALREADY_EXISTS: { wire: 15, retriable: false, http: 409 },
  INVALID_TOPIC: { wire: 16, retriable: false, http: 400 },
  NOT_LEADER: { wire: 17, retriable: true, http: 503 },
  FENCED_LEADER_EPOCH: { wire: 18, retriable: true, http: 503 },
  NOT_ENOUGH_REPLICAS: { wire: 19, retriable: true, http: 503 },
  OUT_OF_ORDER_SEQUENCE: { wire: 20, retriable: false, http: 409 },
  INVALID_PRODUCER_EPOCH: { wire: 21, retriable: false, http: 409 },
  UNKNOWN_PRODUCER_ID: { wire: 22, retriable: false, http: 409 },
  ILLEGAL_GENERATION: { wire: 23, retriable: false, http: 409 },
  UNKNOWN_MEMBER_ID: { wire: 24, retriable: false, http: 409 },
  REBALANCE_IN_PROGRESS: { wire: 25, retriable: true, http: 409 },
  COORDINATOR_NOT_AVAILABLE: { wire: 26, retriable: true, http: 503 },
  UNSUPPORTED_VERSION: { wire: 27, retriable: false, http: 400 },
  INVALID_REQUEST: { wire: 28, retriable: false, http: 400 },
  CORRUPT_FRAME: { wire: 29, retriable: false, http: 400 },
  FRAME_TOO_LARGE: { wire: 30, retriable: false, http: 413 },
  CONNECTION_CLOSED: { wire: 31, retriable: true, http: 503 },
  REQUEST_TIMED_OUT: { wire: 32, retriable: true, http: 504 },
  BUFFER_FULL: { wire: 33, retriable: true, http: 503 },
  DUPLICATE_SEQUENCE: { wire: 34, retriable: false, http: 409 },
  INVALID_GROUP: { wire: 35, retriable: false, http: 400 },
  GROUP_ID_NOT_FOUND: { wire: 36, retriable: false, http: 404 },
  UNSUPPORTED_API: { wire: 37, retriable: false, http: 400 },
  BROKER_NOT_AVAILABLE: { wire: 38, retriable: true, http: 503 },
  THROTTLED: { wire: 39, retriable: true, http: 429 },
  UNAUTHENTICATED: { wire: 40, retriable: false, http: 401 },
  FORBIDDEN: { wire: 41, retriable: false, http: 403 },
  UNSUPPORTED_MEDIA_TYPE: { wire: 42, retriable: false, http: 415 },
  NOT_FOUND: { wire: 43, retriable: false, http: 404 },
  ARBITER_UNAVAILABLE: { wire: 44, retriable: true, http: 503 },
  LEASE_EXPIRED: { wire: 45, retriable: true, http: 503 },
  CAS_FAILED: { wire: 46, retriable: true, http: 409 },
  LEADER_NOT_AVAILABLE: { wire: 47, retriable: true, http: 503 },
  INVALID_MODEL: { wire: 48, retriable: false, http: 500 },
  INVALID_DATA: { wire: 49, retriable: false, http: 400 },
  /** The request named a topic id the topic no longer has (it was deleted and created again). */
  UNKNOWN_TOPIC_ID: { wire: 50, retriable: true, http: 404 },
  /**
   * An origin-tagged batch (a global topic's record applied from another region) overlaps the
   * records of that origin already held: part of it is at or below the origin's cursor.
   */
  ORIGIN_OVERLAP: { wire: 51, retriable: false, http: 409 },
  /** An origin-tagged batch names this broker's own region as its origin: a replication loop. */
  ORIGIN_IS_SELF: { wire: 52, retriable: false, http: 400 },
  /** acks=geo: durable in this region, not yet applied in as many other regions as asked within the timeout. */
  GEO_TIMEOUT: { wire: 53, retriable: false, http: 504 },
  /** An applied batch's precondition failed: the partition's cursor for its origin is not the one the replicator expected (an earlier batch of its pipeline did not land). */
  ORIGIN_CURSOR_MISMATCH: { wire: 54, retriable: false, http: 409 },
  /** A group failover into a group that has live members here: moving its position under them would skip or repeat records. */
  GROUP_NOT_EMPTY: { wire: 55, retriable: false, http: 409 },
  /** A tenant's quota (records/s or bytes/s of a tenant or tenant and topic) has no room for the request now; details carry throttleMs. */
  QUOTA_EXCEEDED: { wire: 56, retriable: true, http: 429 },
  /** The load controller has cut the admission capacity below demand (the cell is loaded); details carry throttleMs. */
  TEMPORARY_REDUCED_CAPACITY: { wire: 57, retriable: true, http: 503 },
  /** A drill was asked for while this gateway's last one still runs (one at a time: two drills' faults would blur each other's figures); retry once it ended. */
  DRILL_RUNNING: { wire: 58, retriable: true, http: 409 },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_SPECS;

const CODE_BY_WIRE = new Map<number, ErrorCode>(
  (Object.entries(ERROR_SPECS) as [ErrorCode, ErrorSpec][]).map(([code, spec]) => [spec.wire, code]),
);

/** Options for building an EdgeqError: what caused it and the context to act on it. */
export interface EdgeqErrorOptions {
  cause?: unknown;
  /** Context a caller can act on: topic, partition, offset, broker id, config key, … */
  details?: Record<string, unknown>;
  /** Overrides the table's retriable flag (rare: e.g. a storage error known to be permanent). */
  retriable?: boolean;
}

/** The one error type of edgeq: a stable code, a retriable flag, a cause and details. */
export class EdgeqError extends Error {
  readonly code: ErrorCode;
  readonly retriable: boolean;
  readonly details: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, options: EdgeqErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'EdgeqError';
    this.code = code;
    this.retriable = options.retriable ?? ERROR_SPECS[code].retriable;
    this.details = options.details ?? {};
  }

  /** The numeric code used on the binary protocol. */
  get wireCode(): number {
    return ERROR_SPECS[this.code].wire;
  }

  /** The HTTP status the gateway answers with. */
  get httpStatus(): number {
    return ERROR_SPECS[this.code].http;
  }

  toJSON(): Record<string, unknown> {
    return { code: this.code, message: this.message, retriable: this.retriable, details: this.details };
  }
}

/** True when `err` is an EdgeqError, optionally with the given code. */
export function isEdgeqError(err: unknown, code?: ErrorCode): err is EdgeqError {
  return err instanceof EdgeqError && (code === undefined || err.code === code);
}

/** Maps a wire code back to its error code; unknown numbers become UNKNOWN. */
export function codeFromWire(wire: number): ErrorCode {
  return CODE_BY_WIRE.get(wire) ?? 'UNKNOWN';
}

/** Rebuilds an EdgeqError received over the wire. */
export function errorFromWire(wire: number, message: string, details?: Record<string, unknown>): EdgeqError {
  return new EdgeqError(codeFromWire(wire), message, { details: details ?? {} });
}

/** Wraps anything thrown into an EdgeqError, keeping EdgeqErrors as they are. */
export function toEdgeqError(err: unknown, fallback: ErrorCode = 'UNKNOWN'): EdgeqError {
  if (err instanceof EdgeqError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new EdgeqError(fallback, message, { cause: err });
}
