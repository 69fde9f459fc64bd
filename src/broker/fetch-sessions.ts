/**
 * Origin-fetch sessions: a replicator keeps two long polls in flight on one connection, the second
 * saying "go on from where the first ends" (fetch_offset -2 with the same session id). The broker
 * answers a connection's requests in order, so the second is already parked at the broker when
 * the first returns: a record appended just after is sent at once, instead of waiting for a new
 * request to cross the link (half an RTT more lag at 50 ms RTT, measured: p50 58 ms against 26 ms).
 *
 * A session is a chain: each fetch in it waits for the one before to finish, then starts from the
 * scan position and origin offset that one ended at. A session belongs to the connection that
 * opened it: its id is the client's choice, and two clients choosing the same one (two regions'
 * replicators of one origin partition name their sessions alike) must never continue each other's
 * chain — each would then receive only the records the other's fetches did not, and apply the rest
 * as if the ones it never saw had never been written (seen in the fault campaign: every other
 * record of an origin missing in each of two regions). The registry is bounded (the oldest session
 * goes first); a fetch continuing a session that is gone or broken is refused (INVALID_REQUEST),
 * and the replicator starts a new one with an explicit offset.
 */
import { EdgeqError } from '../core/index.ts';

/** Sessions remembered per broker (a replicator has one per source partition). */
export const FETCH_SESSIONS_MAX = 4096;
/** fetch_offset that continues a session. */
export const FETCH_OFFSET_CONTINUE = -2;

/** Where the next fetch of a session starts. */
export interface SessionPosition {
  topic: string;
  partition: number;
  origin: string;
  /** Local offset to scan from. */
  next: number;
  /** Origin offsets at or below this are skipped. */
  after: number;
}

interface Session {
  /** Resolves with the position the last fetch ended at (undefined: it failed, the session is broken). */
  tail: Promise<SessionPosition | undefined>;
}

/** One fetch's turn in its session: wait for `previous`, then `finish` with where it ended. */
export interface SessionTurn {
  previous: Promise<SessionPosition | undefined>;
  finish(end: SessionPosition | undefined): void;
}

export class FetchSessions {
  private readonly sessions = new Map<string, Session>();

  constructor(private readonly max = FETCH_SESSIONS_MAX) {}

  get size(): number {
    return this.sessions.size;
  }

  /**
   * Takes the next turn in session `id` of connection `connectionId`. Called in the order fetches
   * arrive (synchronously, before the handler awaits anything), so turns follow the connection's order.
   */
  enter(connectionId: number, sessionId: string): SessionTurn {
    const id = `${connectionId}/${sessionId}`;
    const prev = this.sessions.get(id);
    let finish!: (end: SessionPosition | undefined) => void;
    const tail = new Promise<SessionPosition | undefined>((resolve) => (finish = resolve));
    this.sessions.delete(id); // re-insert: the map's order is least recently used first
    this.sessions.set(id, { tail });
    while (this.sessions.size > this.max) this.sessions.delete(this.sessions.keys().next().value as string);
    return { previous: prev ? prev.tail : Promise.resolve(undefined), finish };
  }

  /** The position a continuing fetch starts at; INVALID_REQUEST when the session is unknown or broken. */
  static continueFrom(id: string, prev: SessionPosition | undefined, want: { topic: string; partition: number; origin: string }): SessionPosition {
    if (!prev) {
      throw new EdgeqError('INVALID_REQUEST', `fetch session "${id}" is unknown or its last fetch failed: start it again with an explicit fetch offset`, { details: { session: id } });
    }
    if (prev.topic !== want.topic || prev.partition !== want.partition || prev.origin !== want.origin) {
      throw new EdgeqError('INVALID_REQUEST', `fetch session "${id}" is for ${prev.topic}-${prev.partition} (origin ${prev.origin}), not ${want.topic}-${want.partition} (origin ${want.origin})`, { details: { session: id } });
    }
    return prev;
  }
}
