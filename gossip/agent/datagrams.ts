/**
 * How the agent puts a message on the wire: the advertised address through the address
 * translation (never a datagram's source), the primary message first, then updates queued for
 * dissemination as far as the datagram bound allows, authenticated by the codec.
 */
import type { Logger } from '../../src/core/index.ts';
import type { BroadcastQueue } from '../dissemination/broadcast-queue.ts';
import type { MeshTransport } from '../transport/transport.ts';
import type { MeshCodec } from '../wire/codec.ts';
import { UPDATES_PER_PACKET_MAX, type Primary } from '../wire/messages.ts';
import { isAddress } from '../wire/names.ts';
import type { AddressTranslator } from './options.ts';

/** Where to dial an advertised address, or null when the translation fails or gives no address. */
export type Dialer = (advertised: string, kind: 'udp' | 'tcp') => string | null;

/** Wraps the translation so a throwing or bad one costs a message, not the agent. */
export function makeDialer(translate: AddressTranslator, log: Logger): Dialer {
  return (advertised, kind) => {
    try {
      const to = translate(advertised, kind);
      return typeof to === 'string' && isAddress(to) ? to : null;
    } catch (err) {
      log.warn({ err: (err as Error).message, advertised, kind }, 'address translation failed');
      return null;
    }
  };
}

/** What the sender needs of its agent. */
export interface DatagramSenderOptions {
  codec: MeshCodec;
  queue: BroadcastQueue;
  transport: MeshTransport;
  dial: Dialer;
  selfId: string;
  /** Members known, for the retransmit limit. */
  members(): number;
  /** One datagram of `bytes` went out. */
  sent(bytes: number): void;
}

/** Builds and sends datagrams with piggybacked updates. */
export class DatagramSender {
  constructor(private readonly o: DatagramSenderOptions) {}

  /** Sends `primary` to an advertised address, `prefix` updates first, then what fits from the queue; a gossip with nothing to carry is not sent. */
  send(advertised: string, primary: Primary, prefix: readonly Buffer[] = []): void {
    const to = this.o.dial(advertised, 'udp');
    if (to === null) return;
    let room = this.o.codec.updateRoom(this.o.selfId, primary);
    for (const p of prefix) room -= p.length;
    const piggyback = room > 0 ? this.o.queue.take(room, this.o.members(), UPDATES_PER_PACKET_MAX - prefix.length) : [];
    if (primary.type === 'gossip' && prefix.length === 0 && piggyback.length === 0) return;
    const bytes = this.o.codec.encodePacket(this.o.selfId, primary, prefix.length === 0 ? piggyback : [...prefix, ...piggyback]);
    this.o.sent(bytes.length);
    this.o.transport.sendPacket(to, bytes);
  }
}
