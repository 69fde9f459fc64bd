/**
 * The envelope every mesh message travels in, and the one place that decides whether bytes from
 * the network are a message at all.
 *
 *   envelope (version 2) = u8 version (2), str8 cluster-name, nonce[12], ciphertext, tag[16]
 *   ciphertext           = AES-256-GCM(key, nonce, aad = version ‖ str8 cluster-name, plaintext)
 *   plaintext            = u8 type, str8 sender-member, payload
 *
 * as memberlist's security.go (version byte, random 12-byte nonce, ciphertext and tag), with the
 * cluster name in the clear as memberlist's label: authenticated (it is the AAD), not secret, so
 * a datagram of another mesh is dropped before any decryption. Everything else, the sender
 * included, is encrypted. Keys: wire/keyring.ts.
 *
 *   envelope (version 1, MAC-only) = u8 version (1), u8 type, str8 cluster-name, str8 sender-member, payload, mac[32]
 *   mac                            = HMAC-SHA256(key, every byte before it)
 *
 * Version 1 authenticates without encrypting. It is refused ('mac-only') unless `macOnly` says
 * otherwise, which exists for one thing: a rolling upgrade of a running mesh from the MAC-only
 * release (memberlist's GossipVerifyIncoming/Outgoing steps): every member first runs this code
 * with `macOnly: 'send'` (it still sends v1, which old members read, and accepts both), then with
 * 'accept' (it sends v2; members not yet switched still send v1), then 'off'.
 *
 * Checks run cheapest first, and each failure is a drop with its reason, never an exception and
 * never a partial apply: size (before reading a byte), version, header shape, cluster name, the
 * tag (or MAC), type, then the whole payload (primary and every update) parses before the caller
 * sees any of it. The reasons before the tag can be provoked by anyone who can send a datagram;
 * they only count, they change nothing.
 */
import { EdgeqError } from '../../src/core/index.ts';
import { ByteReader, ByteWriter, MalformedInput } from './bytes.ts';
import { MAC_BYTES, NONCE_BYTES, TAG_BYTES, type Keyring } from './keyring.ts';
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

/** The encrypted wire (AES-256-GCM). */
export const WIRE_VERSION = 2;
/** The MAC-only wire of the first release, accepted or sent only as `macOnly` says. */
export const WIRE_VERSION_MAC_ONLY = 1;
/** Bytes a sealed version-2 envelope adds to its plaintext beyond the header: nonce and tag. */
const SEAL_BYTES = NONCE_BYTES + TAG_BYTES;
/**
 * The envelope around a payload at its largest, in either version: version 1's (164 bytes:
 * 2 + 65 + 65 + 32) is 4 bytes above version 2's (1 + 65 + 12 + 1 + 65 + 16 = 160). The limits
 * in agent/config.ts are checked against it, so a member may send either.
 */
export const ENVELOPE_BYTES_MAX = Math.max(
  1 + 1 + (1 + CLUSTER_NAME_BYTES_MAX) + (1 + MEMBER_ID_BYTES_MAX) + MAC_BYTES,
  1 + (1 + CLUSTER_NAME_BYTES_MAX) + SEAL_BYTES + 1 + (1 + MEMBER_ID_BYTES_MAX),
);
/** The smallest version-2 envelope: one-byte cluster and sender names, no payload. */
const ENVELOPE_BYTES_MIN = 1 + 2 + SEAL_BYTES + 1 + 2;
/** The smallest version-1 envelope. */
const ENVELOPE_V1_BYTES_MIN = 1 + 1 + 2 + 2 + MAC_BYTES;

/** What the codec does with the MAC-only wire (version 1); see the file's comment. */
export type MacOnlyMode = 'off' | 'accept' | 'send';
export const MAC_ONLY_MODES: readonly MacOnlyMode[] = ['off', 'accept', 'send'];

/** Why bytes from the network were not a message. */
export type DropReason = 'oversized' | 'malformed' | 'bad-version' | 'mac-only' | 'wrong-cluster' | 'bad-mac' | 'unknown-type';
export const DROP_REASONS: readonly DropReason[] = ['oversized', 'malformed', 'bad-version', 'mac-only', 'wrong-cluster', 'bad-mac', 'unknown-type'];

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
  /** The MAC-only wire: 'off' (default) refuses it; 'accept' and 'send' are the rolling-upgrade steps. */
  macOnly?: MacOnlyMode;
}

/** Encodes, encrypts and authenticates mesh messages; decodes and checks what arrives. */
export class MeshCodec {
  readonly datagramBytesMax: number;
  readonly frameBytesMax: number;
  readonly macOnly: MacOnlyMode;
  private readonly cluster: string;
  private readonly keyring: Keyring;
  private readonly limits: DecodeLimits;
  /** `u8 version, str8 cluster`: version 2's clear header and AAD, the same for every message. */
  private readonly aad: Buffer;

  constructor(options: CodecOptions) {
    if (!isClusterName(options.clusterName)) {
      throw new EdgeqError('INVALID_CONFIG', `clusterName "${options.clusterName}" must match [A-Za-z0-9._-]{1,64}`, { details: { key: 'clusterName' } });
    }
    const macOnly = options.macOnly ?? 'off';
    if (!MAC_ONLY_MODES.includes(macOnly)) {
      throw new EdgeqError('INVALID_CONFIG', `macOnly "${String(macOnly)}" must be one of ${MAC_ONLY_MODES.join(', ')}`, { details: { key: 'macOnly' } });
    }
    this.macOnly = macOnly;
    this.cluster = options.clusterName;
    this.keyring = options.keyring;
    this.datagramBytesMax = options.datagramBytesMax;
    this.frameBytesMax = options.frameBytesMax;
    this.limits = options.limits;
    this.aad = new ByteWriter(2 + this.cluster.length).u8(WIRE_VERSION).str8(this.cluster).finish();
  }

  /** What the envelope adds around a payload from `sender`, in the version this codec sends. */
  private overhead(sender: string): number {
    const names = 1 + Buffer.byteLength(this.cluster) + 1 + Buffer.byteLength(sender);
    return this.macOnly === 'send' ? 2 + names + MAC_BYTES : 1 + 1 + names + SEAL_BYTES;
  }

  /** Starts a message: the plaintext (version 2) or the whole body before the MAC (version 1). */
  private begin(type: number, sender: string, initialBytes: number): ByteWriter {
    const w = new ByteWriter(initialBytes);
    if (this.macOnly === 'send') w.u8(WIRE_VERSION_MAC_ONLY).u8(type).str8(this.cluster).str8(sender);
    else w.u8(type).str8(sender);
    return w;
  }

  /** Seals what begin() started, checking the result against `bytesMax`. */
  private seal(w: ByteWriter, what: 'datagram' | 'push-pull'): Buffer {
    const body = w.finish();
    const [bytesMax, bound] = what === 'datagram' ? [this.datagramBytesMax, 'datagramBytesMax'] : [this.frameBytesMax, 'frameBytesMax'];
    const total = this.macOnly === 'send' ? body.length + MAC_BYTES : this.aad.length + SEAL_BYTES + body.length;
    if (total > bytesMax) throw new EdgeqError('MESSAGE_TOO_LARGE', `${what} of ${total} bytes is over ${bound} ${bytesMax}`);
    if (this.macOnly === 'send') return Buffer.concat([body, this.keyring.sign(body)]);
    const out = Buffer.allocUnsafe(total);
    this.aad.copy(out, 0);
    this.keyring.sealInto(out, this.aad.length, this.aad, body);
    return out;
  }

  /** Bytes left for updates in a datagram from `sender` carrying `primary`. */
  updateRoom(sender: string, primary: Primary): number {
    return this.datagramBytesMax - this.overhead(sender) - primaryBytes(primary) - 1;
  }

  /** A datagram: `updates` are pre-encoded (encodeUpdate) and must fit `updateRoom`. */
  encodePacket(sender: string, primary: Primary, updates: readonly Buffer[] = []): Buffer {
    if (updates.length > UPDATES_PER_PACKET_MAX) throw new EdgeqError('MESSAGE_TOO_LARGE', `at most ${UPDATES_PER_PACKET_MAX} updates per datagram`);
    const w = this.begin(primaryTypeCode(primary), sender, 256);
    writePrimary(w, primary);
    w.u8(updates.length);
    for (const u of updates) w.raw(u);
    return this.seal(w, 'datagram');
  }

  /** A push-pull frame's payload (the transport adds the length prefix). */
  encodePushPull(sender: string, p: PushPull): Buffer {
    const w = this.begin(MessageType.pushPull, sender, 4096);
    writePushPull(w, p);
    return this.seal(w, 'push-pull');
  }

  /** Checks the envelope; on success returns the sender, type and a reader over the payload. */
  private open(buf: Buffer, bytesMax: number): Decoded<{ sender: string; type: number; reader: ByteReader }> {
    if (buf.length > bytesMax) return { ok: false, reason: 'oversized', detail: `${buf.length} bytes, at most ${bytesMax}` };
    if (buf.length === 0) return { ok: false, reason: 'malformed', detail: 'empty' };
    if (buf[0] === WIRE_VERSION_MAC_ONLY) {
      if (this.macOnly === 'off') return { ok: false, reason: 'mac-only', detail: 'a MAC-only (version 1) message; this member accepts only encrypted ones (macOnly is off)' };
      return this.openMacOnly(buf);
    }
    if (buf[0] !== WIRE_VERSION) return { ok: false, reason: 'bad-version', detail: `version ${buf[0]}` };
    if (buf.length < ENVELOPE_BYTES_MIN) return { ok: false, reason: 'malformed', detail: `${buf.length} bytes is shorter than any envelope` };
    let cluster: string;
    let aadEnd: number;
    try {
      const r = new ByteReader(buf, 1, buf.length);
      cluster = r.str8();
      aadEnd = r.offset;
    } catch (err) {
      return { ok: false, reason: 'malformed', detail: (err as Error).message };
    }
    if (cluster !== this.cluster) return { ok: false, reason: 'wrong-cluster', detail: 'another cluster' };
    if (buf.length - aadEnd < SEAL_BYTES + 3) return { ok: false, reason: 'malformed', detail: `${buf.length} bytes leaves no room for a sealed message` };
    const plain = this.keyring.open(buf.subarray(0, aadEnd), buf.subarray(aadEnd));
    if (plain === null) return { ok: false, reason: 'bad-mac', detail: 'no key of the ring opens it (altered, truncated, or another key)' };
    const r = new ByteReader(plain, 0, plain.length);
    let type: number;
    let sender: string;
    try {
      type = r.u8();
      sender = r.str8();
    } catch (err) {
      return { ok: false, reason: 'malformed', detail: (err as Error).message };
    }
    if (!isMemberId(sender)) return { ok: false, reason: 'malformed', detail: 'bad sender id' };
    return { ok: true, value: { sender, type, reader: r } };
  }

  /** Version 1: the header in the clear and an HMAC over everything before it. */
  private openMacOnly(buf: Buffer): Decoded<{ sender: string; type: number; reader: ByteReader }> {
    if (buf.length < ENVELOPE_V1_BYTES_MIN) return { ok: false, reason: 'malformed', detail: `${buf.length} bytes is shorter than any envelope` };
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
