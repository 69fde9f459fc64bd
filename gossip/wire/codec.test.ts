// Proves the mesh codec byte by byte: the encrypted envelope (version 2: AES-256-GCM with a fixed
// key and nonce gives a fixed ciphertext, checked against node:crypto directly and against a
// pinned vector), every message and update, push-pull; that what it encodes decodes back to the
// same values; that every bad input in the table (bit flips in every part, truncation, another
// key, another cluster, a MAC-only message) is dropped with its reason, never thrown and never
// half-parsed; key rotation; and the MAC-only wire (version 1) kept for a rolling upgrade, byte
// for byte as the first release sent it.
import { createCipheriv, createDecipheriv, createHmac, hkdfSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ByteWriter } from './bytes.ts';
import { ENVELOPE_BYTES_MAX, MeshCodec, type DropReason, type MacOnlyMode } from './codec.ts';
import { Keyring, MAC_BYTES, NONCE_BYTES, TAG_BYTES } from './keyring.ts';
import { encodeUpdate, type PushPull, type StateUpdate, type Update } from './messages.ts';

const KEY = Buffer.alloc(32, 1);
const OTHER_KEY = Buffer.alloc(32, 2);
const LIMITS = { stateValueBytesMax: 1024, membersMax: 512, stateEntriesMax: 4096 };
const NONCE = Buffer.from('000102030405060708090a0b', 'hex');

function codec(options: { cluster?: string; keys?: Buffer[]; datagramBytesMax?: number; macOnly?: MacOnlyMode; nonce?: Buffer | null } = {}): MeshCodec {
  const nonce = options.nonce === null ? undefined : (options.nonce ?? NONCE);
  return new MeshCodec({
    clusterName: options.cluster ?? 'c1',
    keyring: new Keyring(options.keys ?? [KEY], nonce ? { nonce: () => nonce } : {}),
    datagramBytesMax: options.datagramBytesMax ?? 1400,
    frameBytesMax: 1 << 20,
    limits: LIMITS,
    ...(options.macOnly ? { macOnly: options.macOnly } : {}),
  });
}

const ascii = (s: string): number[] => [...Buffer.from(s, 'ascii')];
/** The AES key of a configured key, computed here without the keyring: HKDF-SHA256, empty salt, the v2 info string. */
const aesKey = (key: Buffer): Buffer => Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), 'edgeq mesh aes-256-gcm v2', 32));
/** The clear header (and AAD) of cluster c1: version 2, str8 "c1". */
const HEADER = Buffer.from([2, 2, ...ascii('c1')]);
/** A version-2 envelope sealed here with node:crypto alone (not the codec). */
function sealV2(plain: Buffer | number[], key = KEY, nonce = NONCE, header = HEADER): Buffer {
  const c = createCipheriv('aes-256-gcm', aesKey(key), nonce);
  c.setAAD(header);
  const body = Buffer.concat([c.update(Buffer.from(plain)), c.final()]);
  return Buffer.concat([header, nonce, body, c.getAuthTag()]);
}
/** The plaintext of a version-2 envelope of cluster c1, opened here with node:crypto alone. */
function openV2(bytes: Buffer, key = KEY): Buffer {
  const d = createDecipheriv('aes-256-gcm', aesKey(key), bytes.subarray(HEADER.length, HEADER.length + NONCE_BYTES));
  d.setAAD(bytes.subarray(0, HEADER.length));
  d.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
  return Buffer.concat([d.update(bytes.subarray(HEADER.length + NONCE_BYTES, bytes.length - TAG_BYTES)), d.final()]);
}
/** An encrypted envelope for cluster c1, sender `a`, with `type` and raw payload bytes. */
const raw = (type: number, payload: number[], key = KEY): Buffer => sealV2([type, 1, ...ascii('a'), ...payload], key);

const mac = (key: Buffer, body: Buffer): Buffer => createHmac('sha256', key).update(body).digest();
const sealed = (body: Buffer, key = KEY): Buffer => Buffer.concat([body, mac(key, body)]);
/** A MAC-only (version 1) envelope for cluster c1, sender `a`. */
const rawV1 = (type: number, payload: number[], key = KEY): Buffer => sealed(Buffer.from([1, type, 2, ...ascii('c1'), 1, ...ascii('a'), ...payload]), key);

describe('the encrypted envelope (version 2), byte by byte', () => {
  it('encodes a ping as version, cluster, nonce, AES-256-GCM of type, sender, payload and update count, and the tag', () => {
    const bytes = codec().encodePacket('a', { type: 'ping', seq: 0x01020304, target: 'b', sourceAddr: '10.0.0.1:7946' });
    const plain = Buffer.from([1, 1, ...ascii('a'), 1, 2, 3, 4, 1, ...ascii('b'), 13, ...ascii('10.0.0.1:7946'), 0]);
    expect(bytes.subarray(0, HEADER.length)).toEqual(HEADER);
    expect(bytes.subarray(HEADER.length, HEADER.length + NONCE_BYTES)).toEqual(NONCE);
    expect(bytes).toEqual(sealV2(plain));
    expect(bytes.length).toBe(HEADER.length + NONCE_BYTES + plain.length + TAG_BYTES);
    expect(openV2(bytes)).toEqual(plain);
    // The sender and the payload are not in the clear.
    expect(bytes.indexOf(Buffer.from('10.0.0.1:7946'))).toBe(-1);
  });

  it('a fixed key and nonce give a fixed ciphertext (pinned: a change of derivation, AAD or layout shows here)', () => {
    const bytes = codec().encodePacket('a', { type: 'ack', seq: 7 });
    expect(bytes.toString('hex')).toBe(PINNED_ACK_HEX);
  });

  it('draws a fresh random nonce per message by default: the same message twice gives two ciphertexts', () => {
    const c = codec({ nonce: null });
    const one = c.encodePacket('a', { type: 'ack', seq: 7 });
    const two = c.encodePacket('a', { type: 'ack', seq: 7 });
    expect(one.subarray(HEADER.length, HEADER.length + NONCE_BYTES)).not.toEqual(two.subarray(HEADER.length, HEADER.length + NONCE_BYTES));
    expect(one).not.toEqual(two);
    expect(openV2(one)).toEqual(openV2(two));
  });

  it('encodes ack, nack, ping-req and gossip payloads', () => {
    const c = codec();
    const payload = (b: Buffer): number[] => [...openV2(b).subarray(3)];
    const type = (b: Buffer): number => openV2(b)[0]!;
    expect(payload(c.encodePacket('a', { type: 'ack', seq: 7 }))).toEqual([0, 0, 0, 7, 0]);
    expect(type(c.encodePacket('a', { type: 'ack', seq: 7 }))).toBe(2);
    expect(payload(c.encodePacket('a', { type: 'nack', seq: 0xffffffff }))).toEqual([255, 255, 255, 255, 0]);
    expect(type(c.encodePacket('a', { type: 'nack', seq: 1 }))).toBe(3);
    const pr = c.encodePacket('a', { type: 'ping-req', seq: 9, target: 'x', targetAddr: 'h:1', sourceAddr: 'g:2', nack: true });
    expect(type(pr)).toBe(4);
    expect(payload(pr)).toEqual([0, 0, 0, 9, 1, ...ascii('x'), 3, ...ascii('h:1'), 3, ...ascii('g:2'), 1, 0]);
    const g = c.encodePacket('a', { type: 'gossip' });
    expect(type(g)).toBe(5);
    expect(payload(g)).toEqual([0]);
  });

  it('encodes each update kind', () => {
    expect([...encodeUpdate({ kind: 'alive', member: 'm', region: 'r', incarnation: 258, address: 'h:1', tags: { k: 'v' } })]).toEqual([
      1, 1, ...ascii('m'), 1, ...ascii('r'), 0, 0, 1, 2, 3, ...ascii('h:1'), 1, 1, ...ascii('k'), 1, ...ascii('v'),
    ]);
    expect([...encodeUpdate({ kind: 'suspect', member: 'm', incarnation: 1, from: 'f' })]).toEqual([2, 1, ...ascii('m'), 0, 0, 0, 1, 1, ...ascii('f')]);
    expect([...encodeUpdate({ kind: 'dead', member: 'm', incarnation: 2, from: 'f' })]).toEqual([3, 1, ...ascii('m'), 0, 0, 0, 2, 1, ...ascii('f')]);
    expect([...encodeUpdate({ kind: 'left', member: 'm', incarnation: 3 })]).toEqual([4, 1, ...ascii('m'), 0, 0, 0, 3]);
    const version = 1_700_000_000_000_123;
    const v = Buffer.alloc(8);
    v.writeDoubleBE(version);
    expect([...encodeUpdate({ kind: 'state', key: 'k/1', version, member: 'w', deleted: false, json: true, value: Buffer.from('{}') })]).toEqual([
      5, 3, ...ascii('k/1'), ...v, 1, ...ascii('w'), 2, 0, 2, ...ascii('{}'),
    ]);
    expect([...encodeUpdate({ kind: 'state', key: 'k', version: 5, member: 'w', deleted: true, json: false, value: Buffer.alloc(0) })].slice(-3)).toEqual([1, 0, 0]);
  });

  it('round-trips a datagram with piggybacked updates', () => {
    const c = codec();
    const updates: Update[] = [
      { kind: 'alive', member: 'us-east-gw-1', region: 'us-east', incarnation: 4, address: '[::1]:7946', tags: { role: 'gateway' } },
      { kind: 'suspect', member: 'b', incarnation: 1, from: 'c' },
      { kind: 'state', key: 'region/us-east', version: 123_456, member: 'a', deleted: false, json: true, value: Buffer.from('{"ok":true}') },
    ];
    const bytes = c.encodePacket('a', { type: 'ping', seq: 1, target: 'b', sourceAddr: '127.0.0.1:1' }, updates.map(encodeUpdate));
    const d = c.decodePacket(bytes);
    expect(d).toEqual({ ok: true, value: { sender: 'a', primary: { type: 'ping', seq: 1, target: 'b', sourceAddr: '127.0.0.1:1' }, updates } });
  });

  it('round-trips a push-pull, members in every state and tombstones included', () => {
    const c = codec();
    const entries: StateUpdate[] = [
      { kind: 'state', key: 'a', version: 1, member: 'm1', deleted: false, json: false, value: Buffer.from([0, 255]) },
      { kind: 'state', key: 'b', version: 2, member: 'm2', deleted: true, json: false, value: Buffer.alloc(0) },
    ];
    const p: PushPull = {
      join: true,
      response: false,
      members: [
        { member: 'm0', region: 'r', incarnation: 0, address: 'h:1', tags: {}, state: 'alive' },
        { member: 'm1', region: 'r', incarnation: 1, address: 'h:2', tags: { k: 'v' }, state: 'suspect', accuser: 'm0' },
        { member: 'm2', region: 'r', incarnation: 2, address: 'h:3', tags: {}, state: 'dead', accuser: 'm3' },
        { member: 'm3', region: 'r', incarnation: 3, address: 'h:4', tags: {}, state: 'left' },
      ],
      entries,
    };
    const bytes = c.encodePushPull('m0', p);
    expect(openV2(bytes)[0]).toBe(6);
    expect(openV2(bytes)[4]).toBe(1); // flags after the 3-byte sender: join
    expect(c.decodePushPull(bytes)).toEqual({ ok: true, value: { sender: 'm0', pushPull: p } });
  });

  it('reports the room left for updates exactly', () => {
    const c = codec({ datagramBytesMax: 600 });
    const primary = { type: 'ping' as const, seq: 1, target: 'b', sourceAddr: 'h:1' };
    const room = c.updateRoom('a', primary);
    const filler = (n: number) => encodeUpdate({ kind: 'state', key: 'k', version: 1, member: 'a', deleted: false, json: false, value: Buffer.alloc(n - 16) });
    expect(filler(room).length).toBe(room);
    expect(c.encodePacket('a', primary, [filler(room)]).length).toBe(600);
    expect(() => c.encodePacket('a', primary, [filler(room + 1)])).toThrow(/over datagramBytesMax/);
  });
});

describe('bad datagrams are dropped with their reason', () => {
  const c = codec();
  const good = c.encodePacket('a', { type: 'ping', seq: 1, target: 'b', sourceAddr: 'h:1' });
  const flip = (b: Buffer, at: number): Buffer => {
    const x = Buffer.from(b);
    x[at] = x[at]! ^ 0x40;
    return x;
  };
  const withUpdate = c.encodePacket('a', { type: 'gossip' }, ['m', 'n', 'o', 'p'].map((member) => encodeUpdate({ kind: 'left', member, incarnation: 3 })));
  const nonceAt = HEADER.length;
  const bodyAt = HEADER.length + NONCE_BYTES;
  const table: [string, Buffer, DropReason][] = [
    ['empty', Buffer.alloc(0), 'malformed'],
    ['shorter than any envelope', Buffer.from([2, ...Buffer.alloc(20, 1)]), 'malformed'],
    ['over datagramBytesMax', Buffer.alloc(1401, 2), 'oversized'],
    ['version 0', Buffer.concat([Buffer.from([0]), good.subarray(1)]), 'bad-version'],
    ['version 3', Buffer.concat([Buffer.from([3]), good.subarray(1)]), 'bad-version'],
    ['a MAC-only (version 1) message', codec({ macOnly: 'send' }).encodePacket('a', { type: 'ack', seq: 1 }), 'mac-only'],
    ['another cluster', codec({ cluster: 'c2' }).encodePacket('a', { type: 'ack', seq: 1 }), 'wrong-cluster'],
    ['a flipped cluster byte', flip(good, 2), 'wrong-cluster'],
    ['cluster length past the end', Buffer.from([2, 200, ...Buffer.alloc(40)]), 'malformed'],
    ['a header with no room for nonce and tag', Buffer.concat([HEADER, Buffer.alloc(NONCE_BYTES + TAG_BYTES + 2)]).subarray(0, 34), 'malformed'],
    ['another key', codec({ keys: [OTHER_KEY] }).encodePacket('a', { type: 'ack', seq: 1 }), 'bad-mac'],
    ['a flipped nonce byte', flip(good, nonceAt), 'bad-mac'],
    ['a flipped first ciphertext byte (the type)', flip(good, bodyAt), 'bad-mac'],
    ['a flipped payload byte', flip(good, bodyAt + 10), 'bad-mac'],
    ['a flipped tag byte', flip(good, good.length - 1), 'bad-mac'],
    ['truncated by one byte', good.subarray(0, good.length - 1), 'bad-mac'],
    ['truncated by the tag', withUpdate.subarray(0, withUpdate.length - TAG_BYTES), 'bad-mac'],
    ['truncated into the tag', good.subarray(0, good.length - TAG_BYTES), 'malformed'],
    ['one byte appended', Buffer.concat([good, Buffer.from([0])]), 'bad-mac'],
    // The cluster name is in the clear but authenticated: relabelling c2's message as c1's breaks the tag.
    ['sealed for cluster c2, relabelled c1', Buffer.from(codec({ cluster: 'c2' }).encodePacket('a', { type: 'ack', seq: 1 })).fill(0x31, 3, 4), 'bad-mac'],
    ['unknown type 9', raw(9, [0]), 'unknown-type'],
    ['type 0', raw(0, [0]), 'unknown-type'],
    ['a push-pull as a datagram', raw(6, [0, 0, 0, 0, 0, 0, 0]), 'unknown-type'],
    ['an empty plaintext', sealV2([]), 'malformed'],
    ['a plaintext with no sender', sealV2([2]), 'malformed'],
    ['ping cut short', raw(1, [0, 0, 0, 1, 1]), 'malformed'],
    ['trailing bytes', raw(2, [0, 0, 0, 1, 0, 9]), 'malformed'],
    ['update count past the end', raw(2, [0, 0, 0, 1, 2, 4, 1, ...ascii('m'), 0, 0, 0, 1]), 'malformed'],
    ['unknown update kind', raw(5, [1, 9, 0]), 'malformed'],
    ['member id with a space', raw(5, [1, 4, 2, ...ascii('m '), 0, 0, 0, 1]), 'malformed'],
    ['member id empty', raw(5, [1, 4, 0, 0, 0, 0, 1]), 'malformed'],
    ['ping target address without a port', raw(1, [0, 0, 0, 1, 1, ...ascii('b'), 1, ...ascii('h'), 0]), 'malformed'],
    ['ping-req flags 2', raw(4, [0, 0, 0, 1, 1, ...ascii('b'), 3, ...ascii('h:1'), 3, ...ascii('h:2'), 2, 0]), 'malformed'],
    ['alive with a bad region', raw(5, [1, 1, 1, ...ascii('m'), 2, ...ascii('US'), 0, 0, 0, 0, 3, ...ascii('h:1'), 0]), 'malformed'],
    ['alive with a tag count past the end', raw(5, [1, 1, 1, ...ascii('m'), 1, ...ascii('r'), 0, 0, 0, 0, 3, ...ascii('h:1'), 5]), 'malformed'],
    ['alive with a __proto__ tag', raw(5, [1, 1, 1, ...ascii('m'), 1, ...ascii('r'), 0, 0, 0, 0, 3, ...ascii('h:1'), 1, 9, ...ascii('__proto__'), 1, ...ascii('x')]), 'malformed'],
    ['state with a negative version', raw(5, [1, 5, 1, ...ascii('k'), 0xbf, 0xf0, 0, 0, 0, 0, 0, 0, 1, ...ascii('w'), 0, 0, 0]), 'malformed'],
    ['state with a fractional version', raw(5, [1, 5, 1, ...ascii('k'), 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 1, ...ascii('w'), 0, 0, 0]), 'malformed'],
    ['state with flags 4', raw(5, [1, 5, 1, ...ascii('k'), 0, 0, 0, 0, 0, 0, 0, 0, 1, ...ascii('w'), 4, 0, 0]), 'malformed'],
    ['a tombstone with a value', raw(5, [1, 5, 1, ...ascii('k'), 0, 0, 0, 0, 0, 0, 0, 0, 1, ...ascii('w'), 1, 0, 1, 7]), 'malformed'],
    ['a state value over its bound', raw(5, [1, 5, 1, ...ascii('k'), 0, 0, 0, 0, 0, 0, 0, 0, 1, ...ascii('w'), 0, 0x04, 0x01, ...Buffer.alloc(1025)]), 'malformed'],
    ['a state key with a space', raw(5, [1, 5, 2, ...ascii('k '), 0, 0, 0, 0, 0, 0, 0, 0, 1, ...ascii('w'), 0, 0, 0]), 'malformed'],
    ['a sender id with a slash', sealV2([2, 2, ...ascii('a/'), 0, 0, 0, 1, 0]), 'malformed'],
  ];
  const cases = table.map(([name, bytes, reason]) => ({ name, bytes, reason }));
  it.each(cases)('$name → $reason', ({ bytes, reason }) => {
    const d = c.decodePacket(bytes);
    expect(d.ok).toBe(false);
    if (!d.ok) expect(d.reason).toBe(reason);
  });

  it('refuses every single-bit flip of a valid datagram, each with a reason', () => {
    const reasons = new Map<string, number>();
    for (let at = 0; at < good.length; at++) {
      for (let bit = 0; bit < 8; bit++) {
        const x = Buffer.from(good);
        x[at] = x[at]! ^ (1 << bit);
        const d = c.decodePacket(x);
        expect(d.ok, `bit ${bit} of byte ${at}`).toBe(false);
        if (!d.ok) reasons.set(d.reason, (reasons.get(d.reason) ?? 0) + 1);
      }
    }
    // Version byte: bad-version or mac-only; cluster: wrong-cluster or malformed; the rest: the tag.
    expect(reasons.get('bad-mac')).toBe((good.length - HEADER.length) * 8);
  });

  it('refuses a push-pull frame split, truncated or bit-flipped', () => {
    const frame = c.encodePushPull('a', { join: false, response: false, members: [{ member: 'a', region: 'r', incarnation: 0, address: 'h:1', tags: {}, state: 'alive' }], entries: [] });
    expect(c.decodePushPull(frame).ok).toBe(true);
    for (const cut of [frame.length - 1, frame.length - TAG_BYTES, HEADER.length + NONCE_BYTES + 5, 40]) {
      expect(c.decodePushPull(frame.subarray(0, cut)), `first ${cut} bytes`).toMatchObject({ ok: false });
      expect(c.decodePushPull(frame.subarray(cut)), `from ${cut} on`).toMatchObject({ ok: false });
    }
    for (const at of [HEADER.length, HEADER.length + NONCE_BYTES, frame.length - 1]) expect(c.decodePushPull(flip(frame, at))).toMatchObject({ ok: false, reason: 'bad-mac' });
  });

  it('refuses a push-pull over its bound, and datagram types on a stream', () => {
    const small = new MeshCodec({ clusterName: 'c1', keyring: new Keyring([KEY]), datagramBytesMax: 1400, frameBytesMax: 2048, limits: LIMITS });
    expect(() => small.encodePushPull('a', { join: false, response: false, members: Array.from({ length: 10 }, (_, i) => ({ member: `m${i}`, region: 'r', incarnation: 0, address: 'h:1', tags: { t: 'x'.repeat(60), u: 'y'.repeat(60), v: 'z'.repeat(60) }, state: 'alive' as const })), entries: [] })).toThrow(/frameBytesMax/);
    expect(small.decodePushPull(Buffer.alloc(2049, 1))).toMatchObject({ ok: false, reason: 'oversized' });
    expect(codec().decodePushPull(codec().encodePacket('a', { type: 'ack', seq: 1 }))).toMatchObject({ ok: false, reason: 'unknown-type' });
    expect(codec().decodePushPull(raw(6, [3, 0, 1, 1, ...ascii('m'), 1, ...ascii('r'), 0, 0, 0, 0, 3, ...ascii('h:1'), 0, 9, 0, 0, 0, 0]))).toMatchObject({ ok: false, reason: 'malformed' });
    expect(codec().decodePushPull(raw(6, [0, 0, 0, 0, 0, 0, 0]))).toMatchObject({ ok: true });
  });

  it('envelope overhead constant covers the longest names in either version', () => {
    const v1 = new ByteWriter();
    v1.u8(1).u8(1).str8('c'.repeat(64)).str8('m'.repeat(64));
    expect(v1.length + MAC_BYTES).toBe(ENVELOPE_BYTES_MAX);
    const long = new MeshCodec({ clusterName: 'c'.repeat(64), keyring: new Keyring([KEY]), datagramBytesMax: 1400, frameBytesMax: 1 << 20, limits: LIMITS });
    const g = long.encodePacket('m'.repeat(64), { type: 'gossip' });
    expect(g.length - 1).toBeLessThanOrEqual(ENVELOPE_BYTES_MAX); // minus the update count
    expect(g.length - 1).toBe(ENVELOPE_BYTES_MAX - 4);
  });
});

describe('key rotation', () => {
  it('seals with the primary key and opens under either key of the ring', () => {
    const oldOnly = codec({ keys: [OTHER_KEY] });
    const rotating = codec({ keys: [KEY, OTHER_KEY] });
    const newOnly = codec({ keys: [KEY] });
    const fromOld = oldOnly.encodePacket('a', { type: 'ack', seq: 1 });
    const fromRotating = rotating.encodePacket('a', { type: 'ack', seq: 2 });
    expect(rotating.decodePacket(fromOld).ok).toBe(true);
    expect(newOnly.decodePacket(fromRotating).ok).toBe(true);
    expect(oldOnly.decodePacket(fromRotating)).toMatchObject({ ok: false, reason: 'bad-mac' });
    expect(openV2(fromRotating, KEY)).toEqual(Buffer.from([2, 1, ...ascii('a'), 0, 0, 0, 2, 0]));
    expect(() => openV2(fromRotating, OTHER_KEY)).toThrow();
  });

  it('derives the AES key with HKDF, so keys of any length of at least 32 bytes work', () => {
    const passphrase = Buffer.from('a passphrase of more than thirty-two bytes, as an operator may set');
    const bytes = codec({ keys: [passphrase] }).encodePacket('a', { type: 'ack', seq: 3 });
    expect(openV2(bytes, passphrase)).toEqual(Buffer.from([2, 1, ...ascii('a'), 0, 0, 0, 3, 0]));
  });
});

describe('the MAC-only wire (version 1), kept for a rolling upgrade', () => {
  it("macOnly 'send' sends the first release's bytes: version 1, type, cluster, sender, payload, HMAC-SHA256 of everything before it", () => {
    const bytes = codec({ macOnly: 'send' }).encodePacket('a', { type: 'ping', seq: 0x01020304, target: 'b', sourceAddr: '10.0.0.1:7946' });
    const body = Buffer.from([1, 1, 2, ...ascii('c1'), 1, ...ascii('a'), 1, 2, 3, 4, 1, ...ascii('b'), 13, ...ascii('10.0.0.1:7946'), 0]);
    expect(bytes).toEqual(Buffer.concat([body, mac(KEY, body)]));
  });

  it("'send' and 'accept' open both versions; 'off' (the default) refuses version 1 as mac-only", () => {
    const v1 = codec({ macOnly: 'send' }).encodePacket('a', { type: 'ack', seq: 1 });
    const v2 = codec().encodePacket('a', { type: 'ack', seq: 1 });
    for (const mode of ['send', 'accept'] as const) {
      expect(codec({ macOnly: mode }).decodePacket(v1)).toMatchObject({ ok: true, value: { sender: 'a', primary: { type: 'ack', seq: 1 } } });
      expect(codec({ macOnly: mode }).decodePacket(v2)).toMatchObject({ ok: true, value: { sender: 'a', primary: { type: 'ack', seq: 1 } } });
    }
    expect(codec().decodePacket(v1)).toMatchObject({ ok: false, reason: 'mac-only' });
    expect(codec({ macOnly: 'accept' }).decodePacket(rawV1(2, [0, 0, 0, 1, 0], OTHER_KEY))).toMatchObject({ ok: false, reason: 'bad-mac' });
    expect(codec({ macOnly: 'accept' }).decodePacket(rawV1(2, [0, 0, 0, 1, 0]))).toMatchObject({ ok: true });
    expect(codec({ macOnly: 'accept' }).decodePushPull(codec({ macOnly: 'send' }).encodePushPull('a', { join: true, response: false, members: [], entries: [] }))).toMatchObject({ ok: true });
  });

  it('reports the room left for updates exactly in both versions', () => {
    for (const macOnly of ['off', 'send'] as const) {
      const c = codec({ datagramBytesMax: 600, macOnly });
      const primary = { type: 'ping' as const, seq: 1, target: 'b', sourceAddr: 'h:1' };
      const room = c.updateRoom('a', primary);
      const filler = (n: number) => encodeUpdate({ kind: 'state', key: 'k', version: 1, member: 'a', deleted: false, json: false, value: Buffer.alloc(n - 16) });
      expect(c.encodePacket('a', primary, [filler(room)]).length).toBe(600);
      expect(() => c.encodePacket('a', primary, [filler(room + 1)])).toThrow(/over datagramBytesMax/);
    }
  });

  it('refuses an unknown mode with INVALID_CONFIG', () => {
    expect(() => codec({ macOnly: 'sometimes' as MacOnlyMode })).toThrow(/macOnly/);
  });
});

/** `encodePacket('a', ack 7)` with KEY and NONCE, cluster c1: header 02 02 6331, the nonce, 8 bytes of ciphertext, the tag. */
const PINNED_ACK_HEX = '02026331000102030405060708090a0be4265f89e5568f9b91e09a97f95868b5c4e4e0efeddd1b23';
