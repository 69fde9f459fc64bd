/**
 * The consumer protocol's bytes: what a consumer puts in its JoinGroup protocol metadata (its
 * subscription) and what the leader puts in each SyncGroup assignment. The broker never looks
 * inside; clients encode and decode them with these helpers (protobuf messages of edgeq.proto).
 */
import { EdgeqError } from '../core/index.ts';
import { decodeBody, encodeMessage, type ConsumerAssignment, type ConsumerSubscription } from '../protocol/index.ts';

/** The protocol type consumers announce in JoinGroup. */
export const CONSUMER_PROTOCOL_TYPE = 'consumer';

/** A decoded subscription: topics in the member's order, userData empty when absent. */
export interface DecodedSubscription {
  topics: string[];
  userData: Buffer;
}

/** A decoded assignment: partitions per topic, userData empty when absent. */
export interface DecodedAssignment {
  partitions: { topic: string; partitions: number[] }[];
  userData: Buffer;
}

/** Encodes a member's subscription for JoinGroup protocol metadata. */
export function encodeSubscription(sub: ConsumerSubscription): Uint8Array {
  return encodeMessage('ConsumerSubscription', sub);
}

/** Decodes JoinGroup protocol metadata; INVALID_REQUEST when the bytes do not decode. */
export function decodeSubscription(bytes: Uint8Array): DecodedSubscription {
  const m = decodeBody<ConsumerSubscription>('ConsumerSubscription', bytes);
  return { topics: [...m.topics], userData: copyBytes(m.userData) };
}

/** Encodes one member's assignment for SyncGroup. */
export function encodeAssignment(assignment: ConsumerAssignment): Uint8Array {
  return encodeMessage('ConsumerAssignment', assignment);
}

/**
 * Decodes a SyncGroup assignment. Empty bytes (a member given nothing, or a group that never
 * synced) decode to no partitions.
 */
export function decodeAssignment(bytes: Uint8Array): DecodedAssignment {
  const m = decodeBody<ConsumerAssignment>('ConsumerAssignment', bytes);
  const partitions = m.partitions.map((tp) => {
    if (tp.topic === '') throw new EdgeqError('INVALID_REQUEST', 'assignment names an empty topic');
    return { topic: tp.topic, partitions: [...tp.partitions] };
  });
  return { partitions, userData: copyBytes(m.userData) };
}

/** Copies decoded bytes out of the (possibly shared) input buffer; proto3 defaults read as []. */
function copyBytes(b: Uint8Array | undefined): Buffer {
  return b && b.length > 0 ? Buffer.from(b) : Buffer.alloc(0);
}
