/** Free loopback ports for servers a test or benchmark starts. */
import { createServer } from 'node:net';

/** A TCP port free on 127.0.0.1 right now (the OS picks it; another process could take it, rarely). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}
