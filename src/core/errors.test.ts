// Proves the error table: wire codes are unique and round-trip, retriable flags and HTTP statuses
// come from the table, and anything thrown can be wrapped.
import { describe, expect, it } from 'vitest';
import { ERROR_SPECS, EdgeqError, codeFromWire, errorFromWire, isEdgeqError, toEdgeqError, type ErrorCode } from './errors.ts';

describe('EdgeqError', () => {
  it('has a unique wire code per error code', () => {
    const wires = Object.values(ERROR_SPECS).map((s) => s.wire);
    expect(new Set(wires).size).toBe(wires.length);
    for (const code of Object.keys(ERROR_SPECS) as ErrorCode[]) expect(codeFromWire(ERROR_SPECS[code].wire)).toBe(code);
    expect(codeFromWire(99999)).toBe('UNKNOWN');
  });

  it('takes retriable and HTTP status from the table, with cause and details', () => {
    const cause = new Error('ENOSPC');
    const e = new EdgeqError('STORAGE_FULL', 'disk full', { cause, details: { dir: '/x' } });
    expect(e.retriable).toBe(true);
    expect(e.httpStatus).toBe(507);
    expect(e.cause).toBe(cause);
    expect(e.toJSON()).toEqual({ code: 'STORAGE_FULL', message: 'disk full', retriable: true, details: { dir: '/x' } });
    expect(new EdgeqError('CORRUPT_BATCH', 'x').retriable).toBe(false);
    const back = errorFromWire(e.wireCode, e.message);
    expect(isEdgeqError(back, 'STORAGE_FULL')).toBe(true);
  });

  it('wraps foreign errors and keeps its own', () => {
    const own = new EdgeqError('TIMEOUT', 't');
    expect(toEdgeqError(own)).toBe(own);
    const wrapped = toEdgeqError(new TypeError('boom'), 'INVALID_ARGUMENT');
    expect(wrapped.code).toBe('INVALID_ARGUMENT');
    expect(wrapped.message).toBe('boom');
  });
});
