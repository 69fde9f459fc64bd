/**
 * What a TLS endpoint is configured with: the PEM files of its certificate, key and trusted CA,
 * the lowest protocol version it accepts and, for a server, whether clients must present a
 * certificate. TLS 1.3 is the floor unless an operator lowers it to 1.2 explicitly (older
 * versions are never offered: their cipher suites and renegotiation are the known weak spots).
 */
import { EdgeqError } from '../core/index.ts';

/** Protocol versions an operator may choose as the floor. */
export type TlsMinVersion = 'TLSv1.2' | 'TLSv1.3';

/** The default floor. */
export const TLS_MIN_VERSION_DEFAULT: TlsMinVersion = 'TLSv1.3';

/**
 * Whether a server asks for client certificates: `required` refuses a handshake without a valid
 * one (mTLS), `optional` asks and verifies one when given (a client may then authenticate with an
 * API key instead), `none` does not ask.
 */
export type TlsClientAuth = 'required' | 'optional' | 'none';

/** The files of one TLS endpoint. */
export interface TlsFilesConfig {
  /** PEM certificate chain this side presents (a server needs one; a client only for mTLS). */
  certFile?: string;
  /** PEM private key of that certificate (given with certFile). */
  keyFile?: string;
  /** PEM bundle of the CAs whose certificates this side trusts; absent: Node's default roots. */
  caFile?: string;
  /** Lowest protocol version accepted (default TLSv1.3). */
  minVersion?: TlsMinVersion;
}

/** Parses a `--tls-min-version` value (INVALID_CONFIG naming the flag otherwise). */
export function parseTlsMinVersion(text: string | undefined, flag = '--tls-min-version'): TlsMinVersion {
  if (text === undefined || text === '') return TLS_MIN_VERSION_DEFAULT;
  const t = text.trim().toLowerCase();
  if (t === '1.3' || t === 'tlsv1.3') return 'TLSv1.3';
  if (t === '1.2' || t === 'tlsv1.2') return 'TLSv1.2';
  throw new EdgeqError('INVALID_CONFIG', `${flag}: "${text}" is not 1.2 or 1.3 (TLS 1.3 is the default; 1.2 must be asked for explicitly)`, { details: { key: flag } });
}

/** Parses a `--tls-client-auth` value. */
export function parseTlsClientAuth(text: string | undefined, flag = '--tls-client-auth'): TlsClientAuth {
  if (text === undefined || text === '') return 'none';
  if (text === 'required' || text === 'optional' || text === 'none') return text;
  throw new EdgeqError('INVALID_CONFIG', `${flag}: "${text}" is not required, optional or none`, { details: { key: flag } });
}

/**
 * The files of an endpoint from its flags, or null when TLS is off. A server needs a certificate
 * and its key; a client needs at least the CA (`--tls-ca`) and adds its own certificate for mTLS.
 * A certificate without its key (or the reverse) is a configuration error, never a silent
 * plaintext endpoint.
 */
export function tlsFilesFromFlags(
  flags: { tlsCert?: string; tlsKey?: string; tlsCa?: string; tlsMinVersion?: string },
  options: { role: 'server' | 'client'; prefix?: string },
): TlsFilesConfig | null {
  const prefix = options.prefix ?? '--tls';
  const { tlsCert, tlsKey, tlsCa } = flags;
  if (tlsCert === undefined && tlsKey === undefined && tlsCa === undefined) return null;
  if ((tlsCert === undefined) !== (tlsKey === undefined)) {
    const missing = tlsCert === undefined ? `${prefix}-cert` : `${prefix}-key`;
    const given = tlsCert === undefined ? `${prefix}-key` : `${prefix}-cert`;
    throw new EdgeqError('INVALID_CONFIG', `${missing} is needed with ${given}`, { details: { key: missing } });
  }
  if (options.role === 'server' && tlsCert === undefined) {
    throw new EdgeqError('INVALID_CONFIG', `${prefix}-ca needs ${prefix}-cert and ${prefix}-key: a TLS server presents a certificate`, { details: { key: `${prefix}-cert` } });
  }
  return {
    ...(tlsCert !== undefined ? { certFile: tlsCert } : {}),
    ...(tlsKey !== undefined ? { keyFile: tlsKey } : {}),
    ...(tlsCa !== undefined ? { caFile: tlsCa } : {}),
    minVersion: parseTlsMinVersion(flags.tlsMinVersion, `${prefix}-min-version`),
  };
}
