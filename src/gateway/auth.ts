/**
 * API keys: stored only as SHA-256 digests, each mapped to a tenant with per-topic grants. A
 * presented key is hashed and compared against every stored digest with timingSafeEqual (no early
 * exit), so neither the comparison nor the lookup tells an attacker how close a guess came.
 *
 * Keys file (JSON):
 *   { "keys": [ { "sha256": "<64 hex chars>", "tenant": "acme",
 *                 "grants": [ { "topic": "orders", "actions": ["read", "write"] },
 *                             { "topic": "*", "actions": ["admin"] } ] } ] }
 * `admin` covers creating, describing and deleting topics and reading the cell status; `*` names
 * every topic.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Context, MiddlewareHandler, Next } from 'hono';
import { z } from 'zod';
import { EdgeqError } from '../core/index.ts';

/** What a grant allows. */
export type Action = 'read' | 'write' | 'admin';

/** Topic patterns a key file may hold per key; a bound on the work of one check. */
export const GRANTS_PER_KEY_MAX = 1024;

const keysFileSchema = z.object({
  keys: z.array(
    z.object({
      sha256: z.string().regex(/^[0-9a-f]{64}$/i, 'sha256 must be 64 hex characters'),
      tenant: z.string().min(1),
      grants: z.array(z.object({ topic: z.string().min(1), actions: z.array(z.enum(['read', 'write', 'admin'])) })).max(GRANTS_PER_KEY_MAX),
    }),
  ),
});

/** The keys file's shape. */
export type KeysFile = z.infer<typeof keysFileSchema>;

/** Who made a request, and what they may do. */
export class Principal {
  constructor(
    readonly tenant: string,
    private readonly grants: readonly { topic: string; actions: readonly Action[] }[],
  ) {}

  /** True when a grant for `topic` (or `*`) includes `action`. */
  can(action: Action, topic: string): boolean {
    return this.grants.some((g) => (g.topic === '*' || g.topic === topic) && g.actions.includes(action));
  }

  /** True when any grant mentions `topic`, for listing. */
  seesTopic(topic: string): boolean {
    return this.grants.some((g) => g.topic === '*' || g.topic === topic);
  }
}

/** SHA-256 of a key, as stored in the keys file. */
export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** Resolves API keys to principals. */
export class Authenticator {
  private readonly entries: { digest: Buffer; principal: Principal }[];

  constructor(file: KeysFile) {
    this.entries = file.keys.map((k) => ({ digest: Buffer.from(k.sha256, 'hex'), principal: new Principal(k.tenant, k.grants) }));
  }

  /** Validates a parsed keys document (INVALID_CONFIG naming the bad field). */
  static fromJson(doc: unknown): Authenticator {
    const parsed = keysFileSchema.safeParse(doc);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new EdgeqError('INVALID_CONFIG', `keys file: ${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`);
    }
    return new Authenticator(parsed.data);
  }

  /** Loads a keys file. */
  static async fromFile(path: string): Promise<Authenticator> {
    let doc: unknown;
    try {
      doc = JSON.parse(await readFile(path, 'utf8'));
    } catch (err) {
      throw new EdgeqError('INVALID_CONFIG', `keys file ${path} could not be read as JSON: ${(err as Error).message}`, { cause: err });
    }
    return Authenticator.fromJson(doc);
  }

  /** The principal of `key`, or null when no stored digest matches. */
  authenticate(key: string): Principal | null {
    const digest = hashApiKey(key);
    let found: Principal | null = null;
    for (const e of this.entries) if (timingSafeEqual(digest, e.digest) && !found) found = e.principal;
    return found;
  }
}

/** Variables the auth middleware sets on the context. */
export interface AuthVariables {
  /** null when auth is disabled (local deployment): everything is allowed. */
  principal: Principal | null;
}

function presentedKey(c: Context): string | null {
  const authz = c.req.header('authorization');
  if (authz !== undefined) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authz);
    return m?.[1] ?? null;
  }
  return c.req.header('x-api-key') ?? null;
}

/**
 * The auth middleware: with an authenticator, a request needs a valid key (401 otherwise) and
 * the routes check grants with `authorize`; with null, every request is allowed.
 */
export function auth(authenticator: Authenticator | null): MiddlewareHandler<{ Variables: AuthVariables }> {
  return async function authMiddleware(c: Context<{ Variables: AuthVariables }>, next: Next): Promise<void> {
    if (!authenticator) {
      c.set('principal', null);
      return next();
    }
    const key = presentedKey(c);
    // `presented` picks the WWW-Authenticate challenge (errors.ts): none given, or one that is not valid.
    if (key === null) throw new EdgeqError('UNAUTHENTICATED', 'an API key is needed: Authorization: Bearer <key> or X-Api-Key', { details: { presented: false } });
    const principal = authenticator.authenticate(key);
    if (!principal) throw new EdgeqError('UNAUTHENTICATED', 'the API key is not valid', { details: { presented: true } });
    c.set('principal', principal);
    return next();
  };
}

/**
 * Throws FORBIDDEN unless the request's principal may do `action` (or one of `action`s) on `topic`
 * (`*`: every topic).
 */
export function authorize(c: Context<{ Variables: AuthVariables }>, action: Action | readonly Action[], topic: string): void {
  const p = c.get('principal');
  if (p === null || p === undefined) return;
  const actions: readonly Action[] = typeof action === 'string' ? [action] : action;
  if (!actions.some((a) => p.can(a, topic))) {
    throw new EdgeqError('FORBIDDEN', `tenant "${p.tenant}" has no ${actions.join(' or ')} grant on ${topic === '*' ? 'every topic' : `topic "${topic}"`}`, { details: { action: actions, topic } });
  }
}
