/**
 * Topic names: what users may call a topic. Names become folder names on disk and path segments
 * in the gateway's URLs, so the alphabet is small and `.`/`..` are refused.
 */
import { EdgeqError } from '../core/index.ts';

export const TOPIC_NAME_BYTES_MAX = 249;
const TOPIC_NAME_PATTERN = /^[a-zA-Z0-9._-]+$/;
/** Names starting with this are the broker's own topics (consumer offsets, mesh state, …). */
export const INTERNAL_TOPIC_PREFIX = '__';
export const CONSUMER_OFFSETS_TOPIC = '__consumer_offsets';
/**
 * The region's ingress history (src/gateway/ingress-history/): created and written by the
 * gateways of the cell (GATEWAY_CLIENT_ID) and no one else; a local topic, never exchanged.
 */
export const INGRESS_HISTORY_TOPIC = '__ingress_history';

/** True for the broker's internal topics. */
export function isInternalTopic(name: string): boolean {
  return name.startsWith(INTERNAL_TOPIC_PREFIX);
}

/** Throws INVALID_TOPIC unless `name` is a valid topic name (internal names included). */
export function validateTopicName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0) {
    throw new EdgeqError('INVALID_TOPIC', 'topic name is empty');
  }
  if (name.length > TOPIC_NAME_BYTES_MAX) {
    throw new EdgeqError('INVALID_TOPIC', `topic name is ${name.length} characters, the limit is ${TOPIC_NAME_BYTES_MAX}`, {
      details: { topic: name.slice(0, 64) },
    });
  }
  if (name === '.' || name === '..') throw new EdgeqError('INVALID_TOPIC', `topic name "${name}" is reserved`);
  if (!TOPIC_NAME_PATTERN.test(name)) {
    throw new EdgeqError('INVALID_TOPIC', `topic name "${name}" may contain only letters, digits, ".", "_" and "-"`, {
      details: { topic: name },
    });
  }
  return name;
}

/** Throws INVALID_TOPIC for names users may not create or delete. */
export function validateUserTopicName(name: unknown): string {
  const n = validateTopicName(name);
  if (isInternalTopic(n)) {
    throw new EdgeqError('INVALID_TOPIC', `topic names starting with "${INTERNAL_TOPIC_PREFIX}" are reserved for the broker`, {
      details: { topic: n },
    });
  }
  return n;
}
