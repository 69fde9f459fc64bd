/** Route targets: `host:port` strings, checked once when a route is added. */
import { EdgeqError } from '../core/index.ts';

/** A parsed `host:port`. */
export interface HostPort {
  host: string;
  port: number;
}

/** Parses `host:port` (IPv6 hosts in brackets), or INVALID_ARGUMENT naming `field`. */
export function parseHostPort(raw: unknown, field: string): HostPort {
  const bad = (): EdgeqError => new EdgeqError('INVALID_ARGUMENT', `${field} must be host:port, got ${JSON.stringify(raw)}`, { details: { field } });
  if (typeof raw !== 'string') throw bad();
  const i = raw.lastIndexOf(':');
  if (i <= 0) throw bad();
  let host = raw.slice(0, i);
  const portText = raw.slice(i + 1);
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  const port = Number(portText);
  if (host === '' || !/^\d{1,5}$/.test(portText) || port < 1 || port > 65535) throw bad();
  return { host, port };
}

/** A listening port: an integer in 0..65535 (0: the OS picks one), or INVALID_ARGUMENT. */
export function checkListenPort(raw: unknown): number {
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 0 || raw > 65535) {
    throw new EdgeqError('INVALID_ARGUMENT', `listenPort must be an integer in 0..65535, got ${String(raw)}`, { details: { field: 'listenPort' } });
  }
  return raw;
}
