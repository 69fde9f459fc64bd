/**
 * A child process's log, appended to a file by its supervisor: every line the child prints on
 * stdout (its structured log, and its listening line). Bounded: past `bytesMax` the file is moved
 * to `<path>.1` (replacing an older one) and a new one begun, so a deployment left running keeps at
 * most twice the bound per process.
 *
 * Written synchronously to a descriptor opened for appending: a rotation is then a plain close,
 * rename and open with nothing in flight (a stream still opening or flushing would write into the
 * wrong file), and a line costs one write(2) in a process that does little else.
 */
import { closeSync, fstatSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/** Default bound on one log file before it is rotated (64 MiB; two kept per process). */
export const LOG_FILE_BYTES_MAX = 64 * 1024 * 1024;

export class LogFile {
  private fd: number | null;
  private bytes: number;

  constructor(
    readonly path: string,
    private readonly bytesMax = LOG_FILE_BYTES_MAX,
  ) {
    mkdirSync(dirname(path), { recursive: true });
    this.fd = openSync(path, 'a');
    this.bytes = fstatSync(this.fd).size;
  }

  /** Appends one line (a newline is added); nothing after `close`. */
  write(line: string): void {
    if (this.fd === null) return;
    const buf = Buffer.from(`${line}\n`);
    if (this.bytes > 0 && this.bytes + buf.length > this.bytesMax) this.rotate();
    writeSync(this.fd, buf);
    this.bytes += buf.length;
  }

  /** Closes the file. */
  close(): void {
    if (this.fd === null) return;
    closeSync(this.fd);
    this.fd = null;
  }

  private rotate(): void {
    closeSync(this.fd!);
    renameSync(this.path, `${this.path}.1`);
    this.fd = openSync(this.path, 'a');
    this.bytes = 0;
  }
}
