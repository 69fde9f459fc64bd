/**
 * One direction of an emulated TCP connection: the bytes one socket sends, on their way across a
 * directed link to the other socket.
 *
 * Bytes are cut into pieces of at most `tcpSegmentBytesMax`. When a piece enters, it reserves
 * its bytes in the link's bandwidth bucket and draws its delay and its loss; its due time is
 * `now + bandwidth wait + delay (+ a retransmission stall if lost)`, but never before the piece
 * ahead of it, so jitter and stalls delay a stream without reordering it (a real TCP delivers in
 * order, and a lost segment holds up everything behind it until it is resent).
 *
 * A blackhole holds: pieces lose their due time and wait, in order, until it lifts; then they
 * take the link's delay again from that moment (a cut that heals before TCP gives up: the
 * retransmissions arrive one trip after the heal). Settings other than the blackhole apply to
 * pieces that enter after the change; a piece already scheduled keeps its due time.
 *
 * Bounded: above `tcpQueuedBytesPerDirectionMax` queued bytes the source socket is paused, and
 * resumed below `tcpResumeBytes`; while the destination's own buffer is full (write returned
 * false) nothing more is written until it drains, so the queue, not the socket, holds the bytes.
 */
import type { Clock, TimerHandle } from '../core/index.ts';
import { atDeadline } from './deadline.ts';
import type { Link } from './link.ts';
import type { WanLimits } from './limits.ts';

/** What a pipe reads from: only its flow control. */
export interface PipeSource {
  pause(): unknown;
  resume(): unknown;
}

/** What a pipe writes to (a net.Socket, or a stream in tests). */
export interface PipeDestination {
  write(chunk: Buffer): boolean;
  end(cb?: () => void): unknown;
  destroy(): unknown;
  once(event: 'drain', fn: () => void): unknown;
}

interface Piece {
  /** null: the end of the stream (the source sent FIN). */
  data: Buffer | null;
  /** null: not scheduled yet (held by a blackhole). */
  dueMs: number | null;
}

/** One direction of a proxied TCP connection. */
export class TcpPipe {
  // A queue with a head index: pieces before `head` are delivered, pieces from `unscheduled` on
  // have no due time yet (always a suffix, since pieces are scheduled in order). Indices keep
  // push, schedule and delivery O(1) per piece however many small pieces a chatty stream queues.
  private queue: Piece[] = [];
  private head = 0;
  private unscheduled = 0;
  private queuedBytes = 0;
  private lastDueMs = 0;
  private timer: TimerHandle | null = null;
  private dest: PipeDestination | null = null;
  private waitingDrain = false;
  private sourcePaused = false;
  private ended = false;
  private destroyAfterEnd = false;
  private done = false;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly link: Link,
    private readonly source: PipeSource,
    private readonly clock: Clock,
    private readonly limits: WanLimits,
  ) {
    this.unsubscribe = link.onChange(() => this.onLinkChange());
  }

  /** Bytes queued in this direction now. */
  get bytesQueued(): number {
    return this.queuedBytes;
  }

  /** True once the end of the stream was written to the destination (or the pipe was discarded). */
  get finished(): boolean {
    return this.done;
  }

  /** Bytes the source sent. */
  push(chunk: Buffer): void {
    if (this.done || this.ended) return;
    const seg = this.limits.tcpSegmentBytesMax;
    for (let off = 0; off < chunk.length; off += seg) {
      const data = chunk.subarray(off, Math.min(chunk.length, off + seg));
      this.queue.push({ data, dueMs: null });
      this.queuedBytes += data.length;
      this.link.counters.bytesQueued += data.length;
    }
    if (this.queuedBytes > this.limits.tcpQueuedBytesPerDirectionMax && !this.sourcePaused) {
      this.sourcePaused = true;
      this.source.pause();
    }
    this.schedule();
  }

  /** The source sent FIN: end the destination once every byte before it is delivered. */
  pushEnd(options: { destroy?: boolean } = {}): void {
    if (options.destroy) this.destroyAfterEnd = true;
    if (this.done || this.ended) return;
    this.ended = true;
    this.queue.push({ data: null, dueMs: null });
    this.schedule();
  }

  /** Where the bytes go; until attached, due pieces wait. */
  attach(dest: PipeDestination): void {
    this.dest = dest;
    this.pump();
  }

  /** Drops everything queued and stops (the destination is gone, or the connection was reset). */
  discard(): void {
    if (this.done) return;
    this.done = true;
    this.timer?.cancel();
    this.timer = null;
    this.link.counters.bytesQueued -= this.queuedBytes;
    this.queuedBytes = 0;
    this.queue = [];
    this.head = 0;
    this.unscheduled = 0;
    this.unsubscribe();
  }

  private onLinkChange(): void {
    if (this.done) return;
    if (this.link.settings.blackhole) this.hold();
    else this.schedule();
  }

  /** A blackhole began: every piece in flight waits, unscheduled, for it to lift. */
  private hold(): void {
    this.timer?.cancel();
    this.timer = null;
    for (let i = this.head; i < this.queue.length; i++) this.queue[i]!.dueMs = null;
    this.unscheduled = this.head;
    this.lastDueMs = 0;
  }

  /** Gives every unscheduled piece its due time, in order, then arms the timer for the head. */
  private schedule(): void {
    if (this.done || this.link.settings.blackhole) return;
    const now = this.clock.monotonicMs();
    for (; this.unscheduled < this.queue.length; this.unscheduled++) {
      const p = this.queue[this.unscheduled]!;
      let due = now + this.link.delayMs();
      if (p.data !== null) {
        // Lost: the segment is resent after a retransmission timeout, about the floor plus a
        // round trip (taken as twice this direction's latency).
        const lost = this.link.lost();
        due += this.link.pacer.reserve(p.data.length);
        if (lost) {
          due += this.limits.tcpRtoMsMin + 2 * this.link.settings.latencyMs;
          this.link.counters.tcpLossStalls++;
        }
      }
      p.dueMs = Math.max(due, this.lastDueMs);
      this.lastDueMs = p.dueMs;
    }
    this.arm();
  }

  private arm(): void {
    if (this.timer !== null || this.done) return;
    const head = this.queue[this.head];
    if (head === undefined || head.dueMs === null) return;
    this.timer = atDeadline(this.clock, head.dueMs, () => {
      this.timer = null;
      this.pump();
    });
  }

  /** Writes every due piece (as one write), ends the destination at the end piece, and re-arms. */
  private pump(): void {
    const dest = this.dest;
    if (this.done || dest === null || this.waitingDrain || this.link.settings.blackhole) return;
    const now = this.clock.monotonicMs();
    const due: Buffer[] = [];
    let bytes = 0;
    let end = false;
    while (this.head < this.queue.length) {
      const head = this.queue[this.head]!;
      if (head.dueMs === null || head.dueMs > now) break;
      this.head++;
      if (head.data === null) {
        end = true;
        break;
      }
      due.push(head.data);
      bytes += head.data.length;
    }
    this.compact();
    if (bytes > 0) {
      this.queuedBytes -= bytes;
      this.link.counters.bytesQueued -= bytes;
      this.link.counters.bytesForwarded += bytes;
      const ok = dest.write(due.length === 1 ? due[0]! : Buffer.concat(due, bytes));
      if (!ok) {
        this.waitingDrain = true;
        dest.once('drain', () => {
          this.waitingDrain = false;
          this.pump();
        });
      }
    }
    if (this.sourcePaused && this.queuedBytes <= this.limits.tcpResumeBytes) {
      this.sourcePaused = false;
      this.source.resume();
    }
    if (end) {
      this.done = true;
      this.unsubscribe();
      if (this.destroyAfterEnd) dest.end(() => dest.destroy());
      else dest.end();
      return;
    }
    this.arm();
  }

  /** Drops delivered pieces from the front once they are most of the array. */
  private compact(): void {
    if (this.head === this.queue.length) {
      this.queue = [];
      this.unscheduled = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.unscheduled -= this.head;
      this.head = 0;
    }
  }
}
