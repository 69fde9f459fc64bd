/**
 * A test certificate authority, made fresh in each test run with `selfsigned` (built on
 * @peculiar/x509; EC P-256 keys, so a certificate takes milliseconds): a CA, server
 * certificates for 127.0.0.1/localhost, client certificates carrying an identity in their CN, an
 * expired certificate, and certificates from another CA. Files are written to a
 * temporary folder, since every TLS endpoint reads files.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';

/** A certificate and its key, as PEM text and as files. */
export interface Issued {
  cert: string;
  key: string;
  certFile: string;
  keyFile: string;
}

type Extensions = NonNullable<Parameters<typeof generate>[1]>['extensions'];

const DAY_MS = 86_400_000;

/** A CA that issues certificates into its own temporary folder. */
export class TestCa {
  private constructor(
    readonly name: string,
    readonly dir: string,
    readonly cert: string,
    private readonly key: string,
    /** The CA certificate's file (what `--tls-ca` takes). */
    readonly caFile: string,
  ) {}

  /** Makes a CA named `name` (its CN). */
  static async create(name = 'edgeq test CA', dir?: string): Promise<TestCa> {
    const folder = dir ?? (await mkdtemp(join(tmpdir(), 'edgeq-ca-')));
    const pems = await generate([{ name: 'commonName', value: name }], {
      keyType: 'ec',
      algorithm: 'sha256',
      notBeforeDate: new Date(Date.now() - DAY_MS),
      notAfterDate: new Date(Date.now() + 30 * DAY_MS),
      extensions: [
        { name: 'basicConstraints', cA: true, critical: true },
        { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
      ],
    });
    const caFile = join(folder, `${slug(name)}.ca.pem`);
    await writeFile(caFile, pems.cert);
    return new TestCa(name, folder, pems.cert, pems.private, caFile);
  }

  /** A server certificate for 127.0.0.1, ::1 and localhost (plus `cn` as the CN). */
  server(cn = 'edgeq-broker', options: { validDays?: number; file?: string } = {}): Promise<Issued> {
    return this.issue(cn, {
      ...options,
      extensions: [
        { name: 'basicConstraints', cA: false },
        { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
        // Brokers are servers to clients and clients to their leaders (replica fetch): both usages.
        { name: 'extKeyUsage', serverAuth: true, clientAuth: true },
        { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }, { type: 7, ip: '::1' }] },
      ],
    });
  }

  /**
   * A client certificate proving `identity` (its CN; no SAN, so the CN is the identity the broker
   * reads). `expired` issues one whose validity ended yesterday.
   */
  client(identity: string, options: { expired?: boolean; file?: string } = {}): Promise<Issued> {
    return this.issue(identity, {
      ...options,
      extensions: [
        { name: 'basicConstraints', cA: false },
        { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
        { name: 'extKeyUsage', clientAuth: true },
      ],
    });
  }

  private async issue(cn: string, options: { extensions: Extensions; expired?: boolean; validDays?: number; file?: string }): Promise<Issued> {
    const now = Date.now();
    const notBeforeDate = new Date(options.expired ? now - 10 * DAY_MS : now - DAY_MS);
    const notAfterDate = new Date(options.expired ? now - DAY_MS : now + (options.validDays ?? 30) * DAY_MS);
    const pems = await generate([{ name: 'commonName', value: cn }], {
      keyType: 'ec',
      algorithm: 'sha256',
      notBeforeDate,
      notAfterDate,
      extensions: options.extensions,
      ca: { key: this.key, cert: this.cert },
    });
    const base = options.file ?? join(this.dir, `${slug(cn)}${options.expired ? '.expired' : ''}.${Math.random().toString(36).slice(2, 8)}`);
    const certFile = `${base}.crt.pem`;
    const keyFile = `${base}.key.pem`;
    await writeFile(certFile, pems.cert);
    await writeFile(keyFile, pems.private);
    return { cert: pems.cert, key: pems.private, certFile, keyFile };
  }
}

function slug(s: string): string {
  return s.replace(/[^a-zA-Z0-9.-]+/g, '-');
}
