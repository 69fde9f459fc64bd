/**
 * The TLS and authentication flags the commands share: a server's own certificate
 * (`--tls-cert`, `--tls-key`, `--tls-ca`, `--tls-client-auth`, `--tls-min-version`), and how a
 * command reaches TLS brokers with auth on (`--brokers-tls-ca`, `--brokers-tls-cert`,
 * `--brokers-tls-key`, `--brokers-api-key`, or their EDGEQ_* variables). docs/security.md.
 */
import type { Command } from 'commander';
import { EdgeqError, type Logger } from '../core/index.ts';
import { FileTlsMaterial, parseTlsClientAuth, tlsFilesFromFlags, type TlsClientAuth, type TlsMaterial } from '../tls/index.ts';

/** Flags of a TLS server. */
export interface ServerTlsFlags {
  tlsCert?: string;
  tlsKey?: string;
  tlsCa?: string;
  tlsClientAuth?: string;
  tlsMinVersion?: string;
}

/** Flags of a client of TLS brokers. */
export interface BrokerClientFlags {
  brokersTlsCa?: string;
  brokersTlsCert?: string;
  brokersTlsKey?: string;
  brokersApiKey?: string;
}

/** Adds the server TLS flags; `what` names the listener in the help. */
export function addServerTlsOptions(command: Command, what: string): Command {
  return command
    .option('--tls-cert <file>', `PEM certificate chain of the ${what} (EDGEQ_TLS_CERT); with --tls-key turns TLS on; reloaded when the file changes`)
    .option('--tls-key <file>', 'PEM private key of --tls-cert (EDGEQ_TLS_KEY)')
    .option('--tls-ca <file>', 'PEM CA bundle client certificates are checked against (EDGEQ_TLS_CA)')
    .option('--tls-client-auth <mode>', 'client certificates: required (mTLS), optional (verified when given) or none (EDGEQ_TLS_CLIENT_AUTH; default none, or required with --tls-ca)')
    .option('--tls-min-version <v>', 'lowest TLS version accepted: 1.3 (default) or 1.2 (EDGEQ_TLS_MIN_VERSION)');
}

/** Adds the flags of a command that connects to brokers. */
export function addBrokerClientOptions(command: Command): Command {
  return command
    .option('--brokers-tls-ca <file>', 'connect to the brokers over TLS, trusting this PEM CA bundle (EDGEQ_BROKERS_TLS_CA)')
    .option('--brokers-tls-cert <file>', 'client certificate presented to the brokers (mTLS; EDGEQ_BROKERS_TLS_CERT)')
    .option('--brokers-tls-key <file>', 'private key of --brokers-tls-cert (EDGEQ_BROKERS_TLS_KEY)')
    .option('--brokers-api-key <key>', 'API key sent to the brokers in Authenticate (EDGEQ_API_KEY; prefer the variable: flags show in ps)');
}

/** An environment variable's value, or undefined when unset or empty (a flag given wins over it). */
export const env = (name: string): string | undefined => {
  const v = process.env[name];
  return v === undefined || v === '' ? undefined : v;
};

/** A server's TLS from its flags (then EDGEQ_TLS_*), or null when off. */
export async function loadServerTls(flags: ServerTlsFlags, logger: Logger): Promise<{ material: TlsMaterial; clientAuth: TlsClientAuth } | null> {
  const merged = {
    tlsCert: flags.tlsCert ?? env('EDGEQ_TLS_CERT'),
    tlsKey: flags.tlsKey ?? env('EDGEQ_TLS_KEY'),
    tlsCa: flags.tlsCa ?? env('EDGEQ_TLS_CA'),
    tlsMinVersion: flags.tlsMinVersion ?? env('EDGEQ_TLS_MIN_VERSION'),
  };
  const rawClientAuth = flags.tlsClientAuth ?? env('EDGEQ_TLS_CLIENT_AUTH');
  const files = tlsFilesFromFlags(merged, { role: 'server' });
  if (!files) {
    if (rawClientAuth !== undefined && rawClientAuth !== 'none') throw new EdgeqError('INVALID_CONFIG', '--tls-client-auth needs --tls-cert and --tls-key', { details: { key: '--tls-client-auth' } });
    return null;
  }
  // A CA given for client certificates means mTLS unless said otherwise.
  const clientAuth = rawClientAuth === undefined ? (files.caFile ? 'required' : 'none') : parseTlsClientAuth(rawClientAuth);
  if (clientAuth !== 'none' && !files.caFile) throw new EdgeqError('INVALID_CONFIG', `--tls-client-auth ${clientAuth} needs --tls-ca (the CA client certificates are checked against)`, { details: { key: '--tls-ca' } });
  const material = await FileTlsMaterial.load(files, { logger });
  return { material, clientAuth };
}

/** How a command reaches the brokers: TLS material and an API key, from flags then EDGEQ_* variables. */
export async function loadBrokerClientSecurity(flags: BrokerClientFlags, logger: Logger, options: { watch?: boolean } = {}): Promise<{ tls?: TlsMaterial; apiKey?: string }> {
  const files = tlsFilesFromFlags(
    {
      tlsCa: flags.brokersTlsCa ?? env('EDGEQ_BROKERS_TLS_CA'),
      tlsCert: flags.brokersTlsCert ?? env('EDGEQ_BROKERS_TLS_CERT'),
      tlsKey: flags.brokersTlsKey ?? env('EDGEQ_BROKERS_TLS_KEY'),
      tlsMinVersion: env('EDGEQ_BROKERS_TLS_MIN_VERSION'),
    },
    { role: 'client', prefix: '--brokers-tls' },
  );
  const apiKey = flags.brokersApiKey ?? env('EDGEQ_API_KEY');
  const tls = files ? await FileTlsMaterial.load(files, { logger, ...(options.watch === false ? { watch: false } : {}) }) : undefined;
  return { ...(tls ? { tls } : {}), ...(apiKey !== undefined ? { apiKey } : {}) };
}
