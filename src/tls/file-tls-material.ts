/**
 * TLS material read from PEM files and reloaded when they change, without a restart.
 *
 * - **Watching.** The folders holding the files are watched (`fs.watch`), not the files: a
 *   Kubernetes Secret volume replaces its files by swapping a `..data` symlink, which a watch on
 *   the old file's inode never sees. `fs.watch` is not reliable everywhere (network file systems,
 *   some container overlays), so a poll (`fs.watchFile`, stat every `pollIntervalMs`) runs beside
 *   it. Both only schedule a check; checks are debounced (`debounceMs`) because writing a cert
 *   and its key is several events, and the first of them may see the cert new and the key old.
 * - **Checking.** A check reads the files (each bounded by TLS_FILE_BYTES_MAX); identical bytes
 *   change nothing. New bytes must make a secure context, the key must match the certificate and
 *   the certificate must be valid now; otherwise the old material stays in force, and the failure
 *   is logged and counted (an operator who wrote a bad pair still has a working endpoint, and
 *   the next write is checked again).
 * - **Applying.** Listeners registered with `onChange` run with the new material: a server calls
 *   `setSecureContext` (connections already open keep the context they were made with, new
 *   handshakes get the new one); clients read `clientOptions()` at each new connection.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { watch, watchFile, unwatchFile, type FSWatcher } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createSecureContext, type ConnectionOptions, type SecureContext, type SecureContextOptions } from 'node:tls';
import { EdgeqError, silentLogger, systemClock, toEdgeqError, type Clock, type Logger, type TimerHandle } from '../core/index.ts';
import { TLS_MIN_VERSION_DEFAULT, type TlsFilesConfig } from './tls-config.ts';
import type { TlsMaterial, TlsReloadStats } from './tls-material.ts';

/** Largest PEM file read (a CA bundle of the public roots is ~220 KB; 1 MiB leaves room). */
export const TLS_FILE_BYTES_MAX = 1024 * 1024;
/** Wait after the last file event before checking: a cert and key written one after the other are one change. */
export const TLS_RELOAD_DEBOUNCE_MS_DEFAULT = 200;
/** The poll beside fs.watch: how late a change is seen where watching does not work. */
export const TLS_POLL_INTERVAL_MS_DEFAULT = 5_000;

/** How to watch the files. */
export interface FileTlsMaterialOptions {
  /** Debounce of file events (default TLS_RELOAD_DEBOUNCE_MS_DEFAULT). */
  debounceMs?: number;
  /** Poll interval of the fallback (default TLS_POLL_INTERVAL_MS_DEFAULT); 0 turns the poll off. */
  pollIntervalMs?: number;
  /** false: load once, never reload (tests and one-shot CLI commands). Default true. */
  watch?: boolean;
  /** Counts reloads and failures (e.g. a Prometheus counter), beside `stats`. */
  onReload?: (outcome: 'reloaded' | 'failed', err?: EdgeqError) => void;
  clock?: Clock;
  logger?: Logger;
}

interface Loaded {
  cert: Buffer | undefined;
  key: Buffer | undefined;
  ca: Buffer | undefined;
  context: SecureContext;
  /** The certificate's subject, for logs. */
  subject: string;
  validToMs: number;
}

/** TLS material from files, reloaded when they change. Open with `FileTlsMaterial.load`. */
export class FileTlsMaterial implements TlsMaterial {
  private current: Loaded;
  private readonly listeners = new Set<() => void>();
  private readonly watchers: FSWatcher[] = [];
  private readonly polled: string[] = [];
  private debounce: TimerHandle | null = null;
  private checking: Promise<void> | null = null;
  private again = false;
  private closed = false;
  private readonly counters = { reloads: 0, failures: 0, lastError: null as string | null };
  private readonly clock: Clock;
  private readonly logger: Logger;

  private constructor(
    readonly files: TlsFilesConfig,
    first: Loaded,
    private readonly options: FileTlsMaterialOptions,
  ) {
    this.current = first;
    this.clock = options.clock ?? systemClock;
    this.logger = (options.logger ?? silentLogger).child({ component: 'tls' });
  }

  /** Reads and checks the files (INVALID_CONFIG naming the file when they are not usable), then watches them. */
  static async load(files: TlsFilesConfig, options: FileTlsMaterialOptions = {}): Promise<FileTlsMaterial> {
    const first = await readMaterial(files, (options.clock ?? systemClock).nowMs());
    const m = new FileTlsMaterial(files, first, options);
    if (options.watch !== false) m.startWatching();
    return m;
  }

  /** Lowest protocol version accepted. */
  get minVersion(): 'TLSv1.2' | 'TLSv1.3' {
    return this.files.minVersion ?? TLS_MIN_VERSION_DEFAULT;
  }

  serverOptions(): SecureContextOptions {
    const c = this.current;
    return { ...(c.cert ? { cert: c.cert } : {}), ...(c.key ? { key: c.key } : {}), ...(c.ca ? { ca: c.ca } : {}), minVersion: this.minVersion };
  }

  clientOptions(): ConnectionOptions {
    return { secureContext: this.current.context, minVersion: this.minVersion };
  }

  secureContext(): SecureContext {
    return this.current.context;
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get stats(): TlsReloadStats {
    return { ...this.counters, subject: this.current.subject, validToMs: this.current.validToMs };
  }

  /** Checks the files now (what a file event does after its debounce); resolves once applied or refused. */
  reload(): Promise<void> {
    if (this.checking) {
      this.again = true;
      return this.checking;
    }
    this.checking = (async () => {
      do {
        this.again = false;
        await this.checkOnce();
      } while (this.again && !this.closed);
    })().finally(() => (this.checking = null));
    return this.checking;
  }

  /** Stops watching. */
  close(): void {
    this.closed = true;
    this.debounce?.cancel();
    this.debounce = null;
    for (const w of this.watchers.splice(0)) w.close();
    for (const p of this.polled.splice(0)) unwatchFile(p);
    this.listeners.clear();
  }

  private async checkOnce(): Promise<void> {
    let next: Loaded;
    try {
      const bytes = await readFiles(this.files);
      const c = this.current;
      if (same(bytes.cert, c.cert) && same(bytes.key, c.key) && same(bytes.ca, c.ca)) return;
      next = buildMaterial(this.files, bytes, this.clock.nowMs());
    } catch (err) {
      const e = toEdgeqError(err, 'INVALID_CONFIG');
      this.counters.failures++;
      this.counters.lastError = e.message;
      this.logger.error({ err: e.message, files: this.files }, 'TLS files changed but cannot be used; keeping the certificate in force');
      this.options.onReload?.('failed', e);
      return;
    }
    if (this.closed) return;
    this.current = next;
    this.counters.reloads++;
    this.counters.lastError = null;
    this.logger.info({ subject: next.subject, validTo: new Date(next.validToMs).toISOString() }, 'TLS certificate reloaded');
    this.options.onReload?.('reloaded');
    for (const l of [...this.listeners]) {
      try {
        l();
      } catch (err) {
        this.logger.warn({ err: toEdgeqError(err).message }, 'a TLS reload listener threw');
      }
    }
  }

  private schedule(): void {
    if (this.closed) return;
    this.debounce?.cancel();
    this.debounce = this.clock.setTimeout(() => {
      this.debounce = null;
      void this.reload();
    }, this.options.debounceMs ?? TLS_RELOAD_DEBOUNCE_MS_DEFAULT);
  }

  private startWatching(): void {
    const paths = [this.files.certFile, this.files.keyFile, this.files.caFile].filter((p): p is string => p !== undefined);
    for (const dir of new Set(paths.map((p) => dirname(p)))) {
      try {
        const w = watch(dir, { persistent: false }, () => this.schedule());
        w.on('error', (err) => this.logger.warn({ err: err.message, dir }, 'watching TLS files failed; the poll still runs'));
        this.watchers.push(w);
      } catch (err) {
        this.logger.warn({ err: (err as Error).message, dir }, 'cannot watch the TLS folder; relying on the poll');
      }
    }
    const interval = this.options.pollIntervalMs ?? TLS_POLL_INTERVAL_MS_DEFAULT;
    if (interval > 0) {
      for (const p of new Set(paths)) {
        watchFile(p, { interval, persistent: false }, (now, before) => {
          if (now.mtimeMs !== before.mtimeMs || now.size !== before.size || now.ino !== before.ino) this.schedule();
        });
        this.polled.push(p);
      }
    }
  }
}

interface FileBytes {
  cert: Buffer | undefined;
  key: Buffer | undefined;
  ca: Buffer | undefined;
}

function same(a: Buffer | undefined, b: Buffer | undefined): boolean {
  return a === undefined ? b === undefined : b !== undefined && a.equals(b);
}

async function readBounded(path: string, what: string): Promise<Buffer> {
  try {
    const st = await stat(path);
    if (st.size > TLS_FILE_BYTES_MAX) throw new Error(`${st.size} bytes, over the ${TLS_FILE_BYTES_MAX} bytes a PEM file may have`);
    return await readFile(path);
  } catch (err) {
    throw new EdgeqError('INVALID_CONFIG', `TLS ${what} file ${path} cannot be read: ${(err as Error).message}`, { cause: err, details: { file: path } });
  }
}

async function readFiles(files: TlsFilesConfig): Promise<FileBytes> {
  const [cert, key, ca] = await Promise.all([
    files.certFile !== undefined ? readBounded(files.certFile, 'certificate') : undefined,
    files.keyFile !== undefined ? readBounded(files.keyFile, 'key') : undefined,
    files.caFile !== undefined ? readBounded(files.caFile, 'CA') : undefined,
  ]);
  return { cert, key, ca };
}

async function readMaterial(files: TlsFilesConfig, nowMs: number): Promise<Loaded> {
  return buildMaterial(files, await readFiles(files), nowMs);
}

/** Checks the bytes and makes the secure context; INVALID_CONFIG naming the file otherwise. */
function buildMaterial(files: TlsFilesConfig, b: FileBytes, nowMs: number): Loaded {
  let subject = '';
  let validToMs = Number.POSITIVE_INFINITY;
  if (b.cert && b.key) {
    let x509: X509Certificate;
    try {
      x509 = new X509Certificate(b.cert);
    } catch (err) {
      throw new EdgeqError('INVALID_CONFIG', `TLS certificate file ${files.certFile} is not a PEM certificate: ${(err as Error).message}`, { cause: err, details: { file: files.certFile } });
    }
    let matches = false;
    try {
      matches = x509.checkPrivateKey(createPrivateKey(b.key));
    } catch (err) {
      throw new EdgeqError('INVALID_CONFIG', `TLS key file ${files.keyFile} is not a PEM private key: ${(err as Error).message}`, { cause: err, details: { file: files.keyFile } });
    }
    if (!matches) throw new EdgeqError('INVALID_CONFIG', `TLS key file ${files.keyFile} does not belong to the certificate in ${files.certFile}`, { details: { file: files.keyFile } });
    validToMs = Date.parse(x509.validTo);
    if (!(validToMs > nowMs)) throw new EdgeqError('INVALID_CONFIG', `TLS certificate ${files.certFile} expired on ${x509.validTo}`, { details: { file: files.certFile } });
    subject = x509.subject.replace(/\n/g, ', ');
  }
  let context: SecureContext;
  try {
    context = createSecureContext({ ...(b.cert ? { cert: b.cert } : {}), ...(b.key ? { key: b.key } : {}), ...(b.ca ? { ca: b.ca } : {}), minVersion: files.minVersion ?? TLS_MIN_VERSION_DEFAULT });
  } catch (err) {
    throw new EdgeqError('INVALID_CONFIG', `TLS files ${[files.certFile, files.keyFile, files.caFile].filter(Boolean).join(', ')} do not make a secure context: ${(err as Error).message}`, { cause: err });
  }
  return { ...b, context, subject, validToMs };
}
