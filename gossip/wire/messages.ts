/**
 * The mesh's messages and their payload encodings (the envelope around them is codec.ts).
 *
 * Wire grammar, version 1 (big-endian; str8 = u8 length + UTF-8; bytes16 = u16 length + bytes):
 *
 *   datagram payload  = primary, u8 update-count, update*
 *   ping        (1)   = u32 seq, str8 target-member, str8 source-address
 *   ack         (2)   = u32 seq
 *   nack        (3)   = u32 seq
 *   ping-req    (4)   = u32 seq, str8 target-member, str8 target-address, str8 source-address, u8 flags (bit 0: nack wanted)
 *   gossip      (5)   = (nothing: only updates)
 *   push-pull   (6)   = u8 flags (bit 0 join, bit 1 response), u16 member-count, member*, u32 entry-count, state-body*
 *                       (TCP only, no updates after it)
 *
 *   update      = u8 kind, body
 *   alive   (1) = str8 member, str8 region, u32 incarnation, str8 address, u8 tag-count, (str8 key, str8 value)*
 *   suspect (2) = str8 member, u32 incarnation, str8 from
 *   dead    (3) = str8 member, u32 incarnation, str8 from
 *   left    (4) = str8 member, u32 incarnation
 *   state   (5) = state-body
 *   state-body  = str8 key, uint53 version, str8 writer, u8 flags (bit 0 deleted, bit 1 JSON), bytes16 value
 *   member      = alive body, u8 state (1 alive, 2 suspect, 3 dead, 4 left), [str8 accuser: suspect and dead only]
 *
 * Sources go by their advertised address, never by where a datagram came from: in the dev
 * deployment every byte between regions passes a proxy, so a source address is the proxy's.
 */
import { ByteReader, ByteWriter, MalformedInput } from './bytes.ts';
import { isAddress, isMemberId, isRegion, isStateKey, tagsProblem, STATE_KEY_BYTES_MAX } from './names.ts';

/** The message types, as the envelope's type byte. */
export const MessageType = { ping: 1, ack: 2, nack: 3, pingReq: 4, gossip: 5, pushPull: 6 } as const;
export type MessageTypeName = keyof typeof MessageType;

/** Update kinds, as their first byte. */
export const UpdateKind = { alive: 1, suspect: 2, dead: 3, left: 4, state: 5 } as const;

/** A member's state as the mesh sees it. */
export type MemberState = 'alive' | 'suspect' | 'dead' | 'left';
const STATE_CODES: Record<MemberState, number> = { alive: 1, suspect: 2, dead: 3, left: 4 };
const STATE_BY_CODE: readonly (MemberState | undefined)[] = [undefined, 'alive', 'suspect', 'dead', 'left'];

export interface Ping {
  type: 'ping';
  seq: number;
  /** Who the ping is for: a member now at an address that another used to hold ignores it. */
  target: string;
  /** Where the sender wants the ack: its advertised address. */
  sourceAddr: string;
}
export interface Ack {
  type: 'ack';
  seq: number;
}
export interface Nack {
  type: 'nack';
  seq: number;
}
export interface PingReq {
  type: 'ping-req';
  seq: number;
  target: string;
  targetAddr: string;
  sourceAddr: string;
  /** The requester understands nacks (Lifeguard): send one when the target does not answer. */
  nack: boolean;
}
export interface Gossip {
  type: 'gossip';
}
/** The message a datagram exists for; updates ride along with it. */
export type Primary = Ping | Ack | Nack | PingReq | Gossip;

export interface AliveUpdate {
  kind: 'alive';
  member: string;
  region: string;
  incarnation: number;
  address: string;
  tags: Record<string, string>;
}
export interface SuspectUpdate {
  kind: 'suspect';
  member: string;
  incarnation: number;
  /** Who suspects: a confirmation from another member shortens the suspicion timeout. */
  from: string;
}
export interface DeadUpdate {
  kind: 'dead';
  member: string;
  incarnation: number;
  from: string;
}
export interface LeftUpdate {
  kind: 'left';
  member: string;
  incarnation: number;
}
export interface StateUpdate {
  kind: 'state';
  key: string;
  /** Hybrid logical clock: wall ms × 1000 + counter (state/hlc.ts). */
  version: number;
  /** The writing member; breaks ties of equal versions. */
  member: string;
  deleted: boolean;
  /** The value's bytes are UTF-8 JSON. */
  json: boolean;
  value: Buffer;
}
/** What is disseminated: membership changes and state entries. */
export type Update = AliveUpdate | SuspectUpdate | DeadUpdate | LeftUpdate | StateUpdate;

/** A member in a push-pull: its alive fields and state. */
export interface MemberSnapshot {
  member: string;
  region: string;
  incarnation: number;
  address: string;
  tags: Record<string, string>;
  state: MemberState;
  /**
   * Suspect and dead only: the member whose suspicion it was. A merged suspicion keeps its
   * accuser, so it is never mistaken for an independent confirmation (see membership.ts).
   */
  accuser?: string;
}

/** The full state exchanged over TCP (anti-entropy and join). */
export interface PushPull {
  join: boolean;
  response: boolean;
  members: MemberSnapshot[];
  entries: StateUpdate[];
}

/** Bounds the decoder enforces on what it lets through. */
export interface DecodeLimits {
  stateValueBytesMax: number;
  /** Members in one push-pull. */
  membersMax: number;
  /** State entries in one push-pull. */
  stateEntriesMax: number;
}

/** Updates per datagram: the count is one byte. */
export const UPDATES_PER_PACKET_MAX = 255;

// --- primaries -------------------------------------------------------------------------------

export function writePrimary(w: ByteWriter, m: Primary): void {
  switch (m.type) {
    case 'ping':
      w.u32(m.seq).str8(m.target).str8(m.sourceAddr);
      return;
    case 'ack':
    case 'nack':
      w.u32(m.seq);
      return;
    case 'ping-req':
      w.u32(m.seq).str8(m.target).str8(m.targetAddr).str8(m.sourceAddr).u8(m.nack ? 1 : 0);
      return;
    case 'gossip':
      return;
  }
}

function memberId(r: ByteReader): string {
  const s = r.str8();
  if (!isMemberId(s)) throw new MalformedInput('bad member id');
  return s;
}

function address(r: ByteReader): string {
  const s = r.str8();
  if (!isAddress(s)) throw new MalformedInput('bad address');
  return s;
}

export function readPrimary(r: ByteReader, type: number): Primary {
  switch (type) {
    case MessageType.ping:
      return { type: 'ping', seq: r.u32(), target: memberId(r), sourceAddr: address(r) };
    case MessageType.ack:
      return { type: 'ack', seq: r.u32() };
    case MessageType.nack:
      return { type: 'nack', seq: r.u32() };
    case MessageType.pingReq: {
      const seq = r.u32();
      const target = memberId(r);
      const targetAddr = address(r);
      const sourceAddr = address(r);
      const flags = r.u8();
      if (flags > 1) throw new MalformedInput('bad ping-req flags');
      return { type: 'ping-req', seq, target, targetAddr, sourceAddr, nack: flags === 1 };
    }
    case MessageType.gossip:
      return { type: 'gossip' };
    default:
      throw new MalformedInput(`type ${type} is not a datagram`);
  }
}

/** Bytes `m` takes on the wire (ids and addresses are ASCII, so length is bytes). */
export function primaryBytes(m: Primary): number {
  switch (m.type) {
    case 'ping':
      return 4 + 1 + m.target.length + 1 + m.sourceAddr.length;
    case 'ack':
    case 'nack':
      return 4;
    case 'ping-req':
      return 4 + 1 + m.target.length + 1 + m.targetAddr.length + 1 + m.sourceAddr.length + 1;
    case 'gossip':
      return 0;
  }
}

export function primaryTypeCode(m: Primary): number {
  switch (m.type) {
    case 'ping':
      return MessageType.ping;
    case 'ack':
      return MessageType.ack;
    case 'nack':
      return MessageType.nack;
    case 'ping-req':
      return MessageType.pingReq;
    case 'gossip':
      return MessageType.gossip;
  }
}

// --- updates ---------------------------------------------------------------------------------

function writeAliveBody(w: ByteWriter, m: { member: string; region: string; incarnation: number; address: string; tags: Record<string, string> }): void {
  w.str8(m.member).str8(m.region).u32(m.incarnation).str8(m.address);
  const tags = Object.entries(m.tags);
  w.u8(tags.length);
  for (const [k, v] of tags) w.str8(k).str8(v);
}

function readAliveBody(r: ByteReader): Omit<AliveUpdate, 'kind'> {
  const member = memberId(r);
  const region = r.str8();
  if (!isRegion(region)) throw new MalformedInput('bad region');
  const incarnation = r.u32();
  const addr = address(r);
  const count = r.u8();
  // Pairs first, an object only after they pass: a key such as __proto__ must not reach an object.
  const pairs: [string, string][] = [];
  const seen = new Set<string>();
  for (let i = 0; i < count; i++) {
    const k = r.str8();
    if (seen.has(k)) throw new MalformedInput('duplicate tag');
    seen.add(k);
    pairs.push([k, r.str8()]);
  }
  const tags = Object.fromEntries(pairs) as Record<string, string>;
  if (Object.keys(tags).length !== pairs.length || tagsProblem(tags) !== null) throw new MalformedInput('bad tags');
  return { member, region, incarnation, address: addr, tags };
}

function writeStateBody(w: ByteWriter, u: StateUpdate): void {
  w.str8(u.key).uint53(u.version).str8(u.member).u8((u.deleted ? 1 : 0) | (u.json ? 2 : 0)).bytes16(u.value);
}

function readStateBody(r: ByteReader, limits: DecodeLimits): StateUpdate {
  const key = r.str8();
  if (!isStateKey(key)) throw new MalformedInput('bad state key');
  const version = r.uint53();
  const member = memberId(r);
  const flags = r.u8();
  if (flags > 3) throw new MalformedInput('bad state flags');
  const value = Buffer.from(r.bytes16());
  const deleted = (flags & 1) === 1;
  if (value.length > limits.stateValueBytesMax) throw new MalformedInput('state value over the bound');
  if (deleted && value.length > 0) throw new MalformedInput('a tombstone carries no value');
  return { kind: 'state', key, version, member, deleted, json: (flags & 2) === 2, value };
}

/** One update's bytes, kind first: encoded once and piggybacked as is. */
export function encodeUpdate(u: Update): Buffer {
  const w = new ByteWriter(64);
  w.u8(UpdateKind[u.kind]);
  switch (u.kind) {
    case 'alive':
      writeAliveBody(w, u);
      break;
    case 'suspect':
    case 'dead':
      w.str8(u.member).u32(u.incarnation).str8(u.from);
      break;
    case 'left':
      w.str8(u.member).u32(u.incarnation);
      break;
    case 'state':
      writeStateBody(w, u);
      break;
  }
  return w.finish();
}

export function readUpdate(r: ByteReader, limits: DecodeLimits): Update {
  const kind = r.u8();
  switch (kind) {
    case UpdateKind.alive:
      return { kind: 'alive', ...readAliveBody(r) };
    case UpdateKind.suspect:
      return { kind: 'suspect', member: memberId(r), incarnation: r.u32(), from: memberId(r) };
    case UpdateKind.dead:
      return { kind: 'dead', member: memberId(r), incarnation: r.u32(), from: memberId(r) };
    case UpdateKind.left:
      return { kind: 'left', member: memberId(r), incarnation: r.u32() };
    case UpdateKind.state:
      return readStateBody(r, limits);
    default:
      throw new MalformedInput(`unknown update kind ${kind}`);
  }
}

// --- push-pull -------------------------------------------------------------------------------

export function writePushPull(w: ByteWriter, p: PushPull): void {
  w.u8((p.join ? 1 : 0) | (p.response ? 2 : 0));
  w.u16(p.members.length);
  for (const m of p.members) {
    writeAliveBody(w, m);
    w.u8(STATE_CODES[m.state]);
    if (m.state === 'suspect' || m.state === 'dead') w.str8(m.accuser ?? m.member);
  }
  w.u32(p.entries.length);
  for (const e of p.entries) writeStateBody(w, e);
}

export function readPushPull(r: ByteReader, limits: DecodeLimits): PushPull {
  const flags = r.u8();
  if (flags > 3) throw new MalformedInput('bad push-pull flags');
  const memberCount = r.u16();
  if (memberCount > limits.membersMax) throw new MalformedInput('too many members');
  const members: MemberSnapshot[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < memberCount; i++) {
    const body = readAliveBody(r);
    const state = STATE_BY_CODE[r.u8()];
    if (state === undefined) throw new MalformedInput('bad member state');
    if (seen.has(body.member)) throw new MalformedInput('duplicate member');
    seen.add(body.member);
    if (state === 'suspect' || state === 'dead') members.push({ ...body, state, accuser: memberId(r) });
    else members.push({ ...body, state });
  }
  const entryCount = r.u32();
  if (entryCount > limits.stateEntriesMax) throw new MalformedInput('too many state entries');
  const entries: StateUpdate[] = [];
  for (let i = 0; i < entryCount; i++) entries.push(readStateBody(r, limits));
  return { join: (flags & 1) === 1, response: (flags & 2) === 2, members, entries };
}

// --- sizes, for the bounds -------------------------------------------------------------------

/** The largest alive update: kind, id, region, incarnation, address, and the tag bound. */
export const ALIVE_UPDATE_BYTES_MAX = 1 + (1 + 64) + (1 + 63) + 4 + (1 + 128) + 1 + 16 * 2 + 256;
/** A state update without its value: kind, key, version, writer, flags, value length. */
export const STATE_UPDATE_OVERHEAD_BYTES = 1 + (1 + STATE_KEY_BYTES_MAX) + 8 + (1 + 64) + 1 + 2;
/** The largest primary: a ping-req with the longest ids and addresses. */
export const PRIMARY_BYTES_MAX = 4 + (1 + 64) + (1 + 128) + (1 + 128) + 1;
/** A member in a push-pull: the largest alive body, a state byte and an accuser. */
export const MEMBER_SNAPSHOT_BYTES_MAX = ALIVE_UPDATE_BYTES_MAX - 1 + 1 + (1 + 64);
