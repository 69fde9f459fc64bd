/**
 * TLS to etcd for the commands that reach a cell's arbiter over etcd (`edgeq broker --arbiter
 * etcd`): `--etcd-ca` (the CA that signed etcd's certificate; turns TLS on, endpoints become
 * https://), `--etcd-cert` and `--etcd-key` (this process's client certificate, for an etcd run
 * with `--client-cert-auth`), or EDGEQ_ETCD_CA / EDGEQ_ETCD_CERT / EDGEQ_ETCD_KEY. The files are
 * read and checked by src/tls (PEM, the key matches the certificate, not expired) once at start:
 * etcd3 builds its gRPC credentials when the client is made, so a renewed certificate takes a
 * restart (docs/security.md).
 */
import type { Command } from 'commander';
import { EdgeqError } from '../core/index.ts';
import { FileTlsMaterial, tlsFilesFromFlags } from '../tls/index.ts';
import type { EtcdTlsOptions } from '../../region/arbiter/index.ts';
import { env } from './tls-flags.ts';

/** The flags. */
export interface EtcdTlsFlags {
  etcdCa?: string;
  etcdCert?: string;
  etcdKey?: string;
}

/** Adds `--etcd-ca`, `--etcd-cert`, `--etcd-key`. */
export function addEtcdTlsOptions(command: Command): Command {
  return command
    .option('--etcd-ca <file>', 'PEM CA of etcd\'s certificate: reach etcd over TLS (https://) (EDGEQ_ETCD_CA)')
    .option('--etcd-cert <file>', 'PEM client certificate presented to etcd (--client-cert-auth) (EDGEQ_ETCD_CERT)')
    .option('--etcd-key <file>', 'PEM private key of --etcd-cert (EDGEQ_ETCD_KEY)');
}

/** The PEM bytes for EtcdArbiter's `tls` from the flags then the environment, or undefined when TLS to etcd is off. */
export async function loadEtcdTls(flags: EtcdTlsFlags): Promise<EtcdTlsOptions | undefined> {
  const merged = { tlsCa: flags.etcdCa ?? env('EDGEQ_ETCD_CA'), tlsCert: flags.etcdCert ?? env('EDGEQ_ETCD_CERT'), tlsKey: flags.etcdKey ?? env('EDGEQ_ETCD_KEY') };
  const files = tlsFilesFromFlags(merged, { role: 'client', prefix: '--etcd' });
  if (files === null) return undefined;
  if (files.caFile === undefined) throw new EdgeqError('INVALID_CONFIG', '--etcd-cert and --etcd-key need --etcd-ca (the CA etcd\'s certificate is checked against)', { details: { key: '--etcd-ca' } });
  const material = await FileTlsMaterial.load(files, { watch: false });
  try {
    const o = material.serverOptions();
    const pem = (v: unknown): Buffer | undefined => (v === undefined ? undefined : Buffer.isBuffer(v) ? v : Buffer.from(String(v)));
    const ca = pem(o.ca)!;
    const cert = pem(o.cert);
    const key = pem(o.key);
    return { ca, ...(cert ? { cert } : {}), ...(key ? { key } : {}) };
  } finally {
    material.close();
  }
}
