/**
 * The envelope every mesh message travels in, and the one place that decides whether bytes from
 * the network are a message at all.
 *
 *   envelope = u8 version (1), u8 type, str8 cluster-name, str8 sender-member, payload, mac[32]
 *   mac      = HMAC-SHA256(key, every byte before it)
 *
 * Checks run cheapest first, and each failure is a drop with its reason, never an exception and
 * never a partial apply: size (before reading a byte), version, header shape, cluster name, MAC,
 * type, then the whole payload (primary and every update) parses before the caller sees any of
 * it. The reasons before the MAC can be provoked by anyone who can send a datagram; they only
 * count, they change nothing.
 */
import { EdgeqError } from '../../src/core/index.ts';
import { ByteReader, ByteWriter, MalformedInput } from './bytes.ts';
import { MAC_BYTES, type Keyring } from './keyring.ts';
import { isClusterName, isMemberId, CLUSTER_NAME_BYTES_MAX, MEMBER_ID_BYTES_MAX } from './names.ts';
import {
  MessageType,
  primaryBytes,
  primaryTypeCode,
  readPrimary,
  readPushPull,
  readUpdate,
  writePrimary,
  writePushPull,
  UPDATES_PER_PACKET_MAX,
  type DecodeLimits,
  type Primary,
  type PushPull,
  type Update,
} from './messages.ts';

/** The only wire version so far. A peer on another version is dropped and counted, not parsed. */
export const WIRE_VERSION = 1;
/** The envelope around a payload, at its largest: version, type, cluster, sender, MAC. */
export const ENVELOPE_BYTES_MAX = 1 + 1 + (1 + CLUSTER_NAME_BYTES_MAX) + (1 + MEMBER_ID_BYTES_MAX) + MAC_BYTES;
/** The smallest envelope: one-byte cluster and sender names, no payload. */
const ENVELOPE_BYTES_MIN = 1 + 1 + 2 + 2 + MAC_BYTES;

/** Why bytes from the network were not a message. */
export type DropReason = 'oversized' | 'malformed' | 'bad-version' | 'wrong-cluster' | 'bad-mac' | 'unknown-type';
export const DROP_REASONS: readonly DropReason[] = ['oversized', 'malformed', 'bad-version', 'wrong-cluster', 'bad-mac', 'unknown-type'];

/** A decode result: the value, or why it was dropped. */
export type Decoded<T> = { ok: true; value: T } | { ok: false; reason: DropReason; detail: string };

/** An authenticated datagram: who sent it, what for, and the updates riding along. */
export interface Packet {
  sender: string;
  primary: Primary;
  updates: Update[];
}

/** Options of the codec. */
export interface CodecOptions {
  clusterName: string;
  keyring: Keyring;
  /** UDP payload bound: larger datagrams are never sent nor accepted. */
  datagramBytesMax: number;
  /** Push-pull bound (one TCP frame, without its length prefix). */
  frameBytesMax: number;
  limits: DecodeLimits;
}

/** Encodes and authenticates mesh messages; decodes and checks what arrives. */
export class MeshCodec {
  readonly datagramBytesMax: number;
  readonly frameBytesMax: number;
  private readonly cluster: string;
  private readonly keyring: Keyring;
  private readonly limits: DecodeLimits;

  constructor(options: CodecOptions) {
    if (!isClusterName(options.clusterName)) {
      throw new EdgeqError('INVALID_CONFIG', `clusterName "${options.clusterName}" must match [A-Za-z0-9._-]{1,64}`, { details: { key: 'clusterName' } });
    }
    this.cluster = options.clusterName;
    this.keyring = options.keyring;
    this.datagramBytesMax = options.datagramBytesMax;
    this.frameBytesMax = options.frameBytesMax;
    this.limits = options.limits;
  }

  private header(w: ByteWriter, type: number, sender: string): void {
    w.u8(WIRE_VERSION).u8(type).str8(this.cluster).str8(sender);
  }

  private seal(w: ByteWriter): Buffer {
    const body = w.finish();
    return Buffer.concat([body, this.keyring.sign(body)]);
  }

  /** Bytes left for updates in a datagram from `sender` carrying `primary`. */
  updateRoom(sender: string, primary: Primary): number {
    const header = 2 + 1 + Buffer.byteLength(this.cluster) + 1 + Buffer.byteLength(sender);
    return this.datagramBytesMax - header - primaryBytes(primary) - 1 - MAC_BYTES;
  }

  /** A datagram: `updates` are pre-encoded (encodeUpdate) and must fit `updateRoom`. */
  encodePacket(sender: string, primary: Primary, updates: readonly Buffer[] = []): Buffer {
    if (updates.length > UPDATES_PER_PACKET_MAX) throw new EdgeqError('MESSAGE_TOO_LARGE', `at most ${UPDATES_PER_PACKET_MAX} updates per datagram`);
    const w = new ByteWriter(256);
    this.header(w, primaryTypeCode(primary), sender);
    writePrimary(w, primary);
    w.u8(updates.length);
    for (const u of updates) w.raw(u);
    if (w.length + MAC_BYTES > this.datagramBytesMax) {
      throw new EdgeqError('MESSAGE_TOO_LARGE', `datagram of ${w.length + MAC_BYTES} bytes is over datagramBytesMax ${this.datagramBytesMax}`);
    }
    return this.seal(w);
  }

  /** A push-pull frame's payload (the transport adds the length prefix). */
  encodePushPull(sender: string, p: PushPull): Buffer {
    const w = new ByteWriter(4096);
    this.header(w, MessageType.pushPull, sender);
    writePushPull(w, p);
    if (w.length + MAC_BYTES > this.frameBytesMax) {
      throw new EdgeqError('MESSAGE_TOO_LARGE', `push-pull of ${w.length + MAC_BYTES} bytes is over frameBytesMax ${this.frameBytesMax}`);
    }
    return this.seal(w);
  }

  /** Checks the envelope; on success returns the sender, type and payload bounds. */
  private open(buf: Buffer, bytesMax: number): Decoded<{ sender: string; type: number; reader: ByteReader }> {
    if (buf.length > bytesMax) return { ok: false, reason: 'oversized', detail: `${buf.length} bytes, at most ${bytesMax}` };
    if (buf.length < ENVELOPE_BYTES_MIN) return { ok: false, reason: 'malformed', detail: `${buf.length} bytes is shorter than any envelope` };
    if (buf[0] !== WIRE_VERSION) return { ok: false, reason: 'bad-version', detail: `version ${buf[0]}` };
    const macAt = buf.length - MAC_BYTES;
    const r = new ByteReader(buf, 1, macAt);
    let type: number;
    let cluster: string;
    let sender: string;
    try {
      type = r.u8();
      cluster = r.str8();
      sender = r.str8();
    } catch (err) {
      return { ok: false, reason: 'malformed', detail: (err as Error).message };
    }
    if (cluster !== this.cluster) return { ok: false, reason: 'wrong-cluster', detail: 'another cluster' };
    if (!this.keyring.verify(buf.subarray(0, macAt), buf.subarray(macAt))) return { ok: false, reason: 'bad-mac', detail: 'no key of the ring matches' };
    if (!isMemberId(sender)) return { ok: false, reason: 'malformed', detail: 'bad sender id' };
    return { ok: true, value: { sender, type, reader: r } };
  }

  /** Decodes a datagram, or says why it is dropped. */
  decodePacket(buf: Buffer): Decoded<Packet> {
    const opened = this.open(buf, this.datagramBytesMax);
    if (!opened.ok) return opened;
    const { sender, type, reader: r } = opened.value;
    if (type === MessageType.pushPull || type < MessageType.ping || type > MessageType.pushPull) {
      return { ok: false, reason: 'unknown-type', detail: `type ${type} is not a datagram` };
    }
    try {
      const primary = readPrimary(r, type);
      const count = r.u8();
      const updates: Update[] = [];
      for (let i = 0; i < count; i++) updates.push(readUpdate(r, this.limits));
      r.done();
      return { ok: true, value: { sender, primary, updates } };
    } catch (err) {
      if (err instanceof MalformedInput) return { ok: false, reason: 'malformed', detail: err.message };
      throw err;
    }
  }

  /** Decodes a push-pull frame's payload, or says why it is dropped. */
  decodePushPull(buf: Buffer): Decoded<{ sender: string; pushPull: PushPull }> {
    const opened = this.open(buf, this.frameBytesMax);
    if (!opened.ok) return opened;
    const { sender, type, reader: r } = opened.value;
    if (type !== MessageType.pushPull) return { ok: false, reason: 'unknown-type', detail: `type ${type} on a stream` };
    try {
      const pushPull = readPushPull(r, this.limits);
      r.done();
      return { ok: true, value: { sender, pushPull } };
    } catch (err) {
      if (err instanceof MalformedInput) return { ok: false, reason: 'malformed', detail: err.message };
      throw err;
    }
  }
}
