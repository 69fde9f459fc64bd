/**
 * JSON request bodies: parsed once, and refused as INVALID_ARGUMENT (400) with the parser's own
 * message when they do not parse or are not an object.
 */
import { EdgeqError } from '../core/index.ts';

/** True for a JSON object (not null, not an array). */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Parses `body` as a JSON object; `notObject` is the message when it parses to something else. */
export function parseJsonObject(body: Buffer, notObject = 'body must be a JSON object'): Record<string, unknown> {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw new EdgeqError('INVALID_ARGUMENT', `body is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  if (!isPlainObject(doc)) throw new EdgeqError('INVALID_ARGUMENT', notObject);
  return doc;
}
