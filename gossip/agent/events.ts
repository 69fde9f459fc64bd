/**
 * What a mesh agent tells the outside: its views of members, and the listeners and observers it
 * calls. A listener or observer that throws is logged and does not disturb the protocol.
 */
import type { Logger } from '../../src/core/index.ts';
import type { MeshStateEntry } from '../state/state-store.ts';
import type { MemberState } from '../wire/messages.ts';
import type { MeshObserver } from './stats.ts';

/** This member as the agent reports it. */
export interface MeshSelf {
  region: string;
  member: string;
  incarnation: number;
  address: string;
}

/** A member as this member sees it. */
export interface MeshMember {
  region: string;
  member: string;
  address: string;
  state: MemberState;
  incarnation: number;
  /** Phi accrual over its acks, from this member's point of view (0 for itself and before any ack). */
  phi: number;
  /** Milliseconds since this member last heard from it (0 for itself, -1: never). */
  lastHeardMs: number;
  /** Smoothed round trip of direct probes to it, ms (null for itself and before its first direct ack). */
  rttMs: number | null;
}

/** A change of a member's state, incarnation or address. */
export interface MemberChange {
  member: MeshMember;
  /** Its state before, or null when it was not known. */
  previous: MemberState | null;
}

/** The listeners and observers of one agent. */
export class MeshEvents {
  private readonly memberListeners = new Set<(c: MemberChange) => void>();
  private readonly stateListeners = new Set<(e: MeshStateEntry) => void>();
  private readonly observers = new Set<MeshObserver>();

  constructor(private readonly log: Logger) {}

  private call<T>(fns: Iterable<(x: T) => void>, x: T, what: string): void {
    for (const fn of fns) {
      try {
        fn(x);
      } catch (err) {
        this.log.warn({ err: (err as Error).message }, `a mesh ${what} threw`);
      }
    }
  }

  /** True when someone listens to member changes (so views are built only then). */
  get wantsMembers(): boolean {
    return this.memberListeners.size > 0;
  }

  notify(fn: (o: MeshObserver) => void): void {
    this.call([...this.observers].map((o) => () => fn(o)), undefined, 'observer');
  }

  member(change: MemberChange): void {
    this.call(this.memberListeners, change, 'member listener');
  }

  state(entry: MeshStateEntry): void {
    this.call(this.stateListeners, entry, 'state listener');
  }

  onMemberChange(listener: (change: MemberChange) => void): () => void {
    this.memberListeners.add(listener);
    return () => void this.memberListeners.delete(listener);
  }

  onStateChange(listener: (entry: MeshStateEntry) => void): () => void {
    this.stateListeners.add(listener);
    return () => void this.stateListeners.delete(listener);
  }

  observe(observer: MeshObserver): () => void {
    this.observers.add(observer);
    return () => void this.observers.delete(observer);
  }
}
