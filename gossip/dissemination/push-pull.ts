/**
 * Push-pull: the full-state exchange over a stream (memberlist's pushPullNode). Periodically with
 * one random alive member (anti-entropy: whatever piggybacks missed, this repairs), when joining
 * through a seed, and when a member held dead turns out alive (reconnection after a heal). Each
 * side sends its member table and state and merges the other's; the answering side sends its
 * state as it was before merging, as memberlist does.
 *
 * The interval grows past 32 members as memberlist's pushPullScale does:
 *   interval × (ceil(log2 n − log2 32) + 1), so the total push-pull bandwidth grows like n log n
 *   rather than n², each exchange carrying O(n).
 * At most `pushPullsInFlightMax` exchanges run at once, one per peer.
 */
import type { Clock, EdgeqError, TimerHandle } from '../../src/core/index.ts';
import type { MeshTransport } from '../transport/transport.ts';
import type { DropReason } from '../agent/stats.ts';
import type { MeshCodec } from '../wire/codec.ts';
import type { PushPull } from '../wire/messages.ts';

/** Past this many members the interval is scaled (memberlist pushPullScaleThreshold). */
export const PUSH_PULL_SCALE_THRESHOLD = 32;

/** memberlist's pushPullScale. */
export function pushPullScaleMs(intervalMs: number, members: number): number {
  if (members <= PUSH_PULL_SCALE_THRESHOLD) return intervalMs;
  const multiplier = Math.ceil(Math.log2(members) - Math.log2(PUSH_PULL_SCALE_THRESHOLD)) + 1;
  return multiplier * intervalMs;
}

/** What push-pull needs of its agent. */
export interface PushPullHost {
  selfId(): string;
  /** Members and state to send. */
  local(join: boolean, response: boolean): PushPull;
  /** Merges what another member sent. */
  merge(remote: PushPull, sender: string): void;
  /** The members known (for the interval's scale). */
  members(): number;
  /** The advertised address of a random alive member, or null. */
  randomPeer(): string | null;
  /** Where to dial an advertised address (the agent's translation); null when it cannot. */
  dial(advertised: string): string | null;
  /** One exchange ended; `bytes` crossed the wire both ways. */
  exchanged(ok: boolean, bytesSent: number, bytesReceived: number, err: EdgeqError | null): void;
  dropped(reason: DropReason, detail: string): void;
}

/** Options of push-pull. */
export interface PushPullOptions {
  codec: MeshCodec;
  transport: MeshTransport;
  clock: Clock;
  random: () => number;
  host: PushPullHost;
  pushPullIntervalMs: number;
  tcpTimeoutMs: number;
  pushPullsInFlightMax: number;
}

/** Runs and answers push-pulls for one member. */
export class PushPullRunner {
  private readonly inFlight = new Set<string>();
  private timer: TimerHandle | null = null;
  private running = false;

  constructor(private readonly o: PushPullOptions) {}

  /** Exchanges running now. */
  get inFlightCount(): number {
    return this.inFlight.size;
  }

  start(): void {
    this.running = true;
    // The first at a random point of the first interval, so members do not all sync at once.
    this.timer = this.o.clock.setTimeout(() => this.tick(), Math.floor(this.o.random() * this.o.pushPullIntervalMs));
  }

  stop(): void {
    this.running = false;
    this.timer?.cancel();
    this.timer = null;
  }

  private tick(): void {
    if (!this.running) return;
    const jitter = 0.75 + 0.5 * this.o.random();
    this.timer = this.o.clock.setTimeout(() => this.tick(), Math.floor(jitter * pushPullScaleMs(this.o.pushPullIntervalMs, this.o.host.members())));
    const peer = this.o.host.randomPeer();
    if (peer !== null) this.exchange(peer, false, () => {});
  }

  /**
   * Exchanges state with the member at `advertised`; `done(ok)` once. Refused (done(false) at
   * once) when one with that address runs already or the in-flight bound is reached.
   */
  exchange(advertised: string, join: boolean, done: (ok: boolean) => void): void {
    if (this.inFlight.has(advertised) || this.inFlight.size >= this.o.pushPullsInFlightMax) {
      done(false);
      return;
    }
    const to = this.o.host.dial(advertised);
    if (to === null) {
      done(false);
      return;
    }
    const request = this.o.codec.encodePushPull(this.o.host.selfId(), this.o.host.local(join, false));
    this.inFlight.add(advertised);
    this.o.transport.exchange(to, request, this.o.tcpTimeoutMs, (err, response) => {
      this.inFlight.delete(advertised);
      if (err || !response) {
        this.o.host.exchanged(false, request.length, 0, err);
        done(false);
        return;
      }
      const decoded = this.o.codec.decodePushPull(response);
      if (!decoded.ok) {
        this.o.host.dropped(decoded.reason, decoded.detail);
        this.o.host.exchanged(false, request.length, response.length, null);
        done(false);
        return;
      }
      this.o.host.exchanged(true, request.length, response.length, null);
      this.o.host.merge(decoded.value.pushPull, decoded.value.sender);
      done(true);
    });
  }

  /** A push-pull from another member: answer with ours, then merge theirs. */
  onStream(request: Buffer, reply: (response: Buffer | null) => void): void {
    const decoded = this.o.codec.decodePushPull(request);
    if (!decoded.ok) {
      this.o.host.dropped(decoded.reason, decoded.detail);
      reply(null);
      return;
    }
    const { sender, pushPull } = decoded.value;
    if (sender === this.o.host.selfId()) {
      this.o.host.dropped('from-self', 'a push-pull from this member id');
      reply(null);
      return;
    }
    const response = this.o.codec.encodePushPull(this.o.host.selfId(), this.o.host.local(pushPull.join, true));
    this.o.host.exchanged(true, response.length, request.length, null);
    reply(response);
    this.o.host.merge(pushPull, sender);
  }
}
