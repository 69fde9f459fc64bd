/**
 * Turns typed messages into frames and frames back into typed messages. Decoding a body is kept
 * apart from interpreting the errors inside it (KafkaJS's split): `decodeBody` only checks the
 * bytes; `throwIfError` / `errorOf` turn wire errors into EdgeqErrors.
 */
import { EdgeqError, ERROR_SPECS, errorFromWire, toEdgeqError } from '../core/index.ts';
import { apiSpec, ApiKey, type ApiName, type RequestOf, type ResponseOf } from './api.ts';
import { encodeFrame, FLAG_ERROR, FLAG_RESPONSE, type Frame } from './frame.ts';
import type { ErrorResponse, WireError } from './messages.ts';
import { messageType } from './schema.ts';

/** Encodes a message of the named protobuf type. */
export function encodeMessage(typeName: string, message: object): Uint8Array {
  const t = messageType(typeName);
  return t.encode(t.fromObject(message)).finish();
}

/**
 * Decodes a body of the named type. Missing fields read as proto3 defaults. A body that does not
 * decode is an INVALID_REQUEST, never a crash.
 */
export function decodeBody<T>(typeName: string, body: Uint8Array): T {
  try {
    return messageType(typeName).decode(body) as unknown as T;
  } catch (err) {
    throw new EdgeqError('INVALID_REQUEST', `${typeName} body does not decode: ${(err as Error).message}`, { cause: err });
  }
}

/** Encodes a request frame. */
export function encodeRequest<N extends ApiName>(name: N, apiVersion: number, correlationId: number, body: RequestOf<N>): Buffer {
  const spec = apiSpec(ApiKey[name])!;
  return encodeFrame({ flags: 0, apiKey: spec.key, apiVersion, correlationId }, encodeMessage(spec.requestType, body));
}

/** Encodes a response frame. */
export function encodeResponse<N extends ApiName>(name: N, apiVersion: number, correlationId: number, body: ResponseOf<N>): Buffer {
  const spec = apiSpec(ApiKey[name])!;
  return encodeFrame({ flags: FLAG_RESPONSE, apiKey: spec.key, apiVersion, correlationId }, encodeMessage(spec.responseType, body));
}

/** Encodes a response saying the request failed as a whole. */
export function encodeErrorResponse(request: Pick<Frame, 'apiKey' | 'apiVersion' | 'correlationId'>, err: unknown): Buffer {
  const body: ErrorResponse = { error: wireError(err) };
  return encodeFrame(
    { flags: FLAG_RESPONSE | FLAG_ERROR, apiKey: request.apiKey, apiVersion: request.apiVersion, correlationId: request.correlationId },
    encodeMessage('ErrorResponse', body),
  );
}

/** The wire form of an error (anything thrown becomes UNKNOWN with its message). */
export function wireError(err: unknown): WireError {
  const e = toEdgeqError(err);
  return { code: ERROR_SPECS[e.code].wire, message: e.message, retriable: e.retriable };
}

/** The EdgeqError a wire error stands for, or null when there is none (code 0 or absent). */
export function errorOf(w: WireError | null | undefined, details?: Record<string, unknown>): EdgeqError | null {
  if (!w || w.code === 0) return null;
  const e = errorFromWire(w.code, w.message, details);
  return e;
}

/** Throws the EdgeqError a wire error stands for. */
export function throwIfError(w: WireError | null | undefined, details?: Record<string, unknown>): void {
  const e = errorOf(w, details);
  if (e) throw e;
}

/** Decodes the body of a response frame, throwing the error of an ERROR frame. */
export function decodeResponse<N extends ApiName>(name: N, frame: Frame): ResponseOf<N> {
  if ((frame.flags & FLAG_ERROR) !== 0) {
    const body = decodeBody<ErrorResponse>('ErrorResponse', frame.body);
    throw errorOf(body.error) ?? new EdgeqError('UNKNOWN', `${name} failed without an error code`);
  }
  return decodeBody<ResponseOf<N>>(apiSpec(ApiKey[name])!.responseType, frame.body);
}
