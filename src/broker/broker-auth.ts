/**
 * Who a binary-protocol connection is: an API key sent in an Authenticate request, or the
 * identity of a verified client certificate (mTLS), mapped to a principal. The keys file is the
 * gateway's (docs/http-api.md: SHA-256 digests, a tenant and per-topic grants per key), so one
 * file gives a tenant the same grants over HTTP and over the binary protocol; it may add:
 *
 *   { "keys": [ { "sha256": "…", "tenant": "acme", "grants": [ … ] },
 *               { "sha256": "…", "tenant": "gw-us-east", "role": "internal", "grants": [] } ],
 *     "certificates": [ { "identity": "broker-*.us-east.edgeq", "role": "broker" },
 *                       { "identity": "gateway.eu-west.edgeq", "role": "internal" },
 *                       { "identity": "billing-app", "tenant": "billing", "grants": [ … ] } ] }
 *
 * (the gateway ignores `role` and `certificates`). Roles: `tenant` (grants apply, quotas apply),
 * `internal` (the cell's own clients that are not brokers: gateways, which check grants per HTTP
 * request themselves, and other regions' exchange; every topic, no replica fetch), `broker` (a
 * broker of the cell: everything, replica fetches included). A certificate identity ending in `*`
 * matches by prefix. Keys are compared as the gateway does: every digest with timingSafeEqual.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Counter, type Registry } from 'prom-client';
import { z } from 'zod';
import { EdgeqError } from '../core/index.ts';

/** What a grant allows (the gateway's actions). */
export type GrantAction = 'read' | 'write' | 'admin';
/** What kind of client a principal is (see the file comment). */
export type PrincipalRole = 'tenant' | 'internal' | 'broker';

/** Grants per key or certificate (the gateway's bound). */
export const BINARY_GRANTS_PER_PRINCIPAL_MAX = 1024;
/** Topics whose grant answers a principal remembers; over it the memo starts again (a bound, not a cache policy). */
export const GRANT_MEMO_TOPICS_MAX = 4096;

const grantSchema = z.object({ topic: z.string().min(1), actions: z.array(z.enum(['read', 'write', 'admin'])) });
const roleSchema = z.enum(['tenant', 'internal', 'broker']);
const fileSchema = z.object({
  keys: z.array(
    z.object({
      sha256: z.string().regex(/^[0-9a-f]{64}$/i, 'sha256 must be 64 hex characters'),
      tenant: z.string().min(1),
      role: roleSchema.exclude(['broker']).optional(),
      grants: z.array(grantSchema).max(BINARY_GRANTS_PER_PRINCIPAL_MAX),
    }),
  ),
  certificates: z
    .array(
      z.object({
        identity: z.string().min(1).max(256),
        role: roleSchema.optional(),
        tenant: z.string().min(1).optional(),
        grants: z.array(grantSchema).max(BINARY_GRANTS_PER_PRINCIPAL_MAX).optional(),
      }),
    )
    .optional(),
});

/** A keys file with the binary protocol's additions. */
export type BinaryKeysFile = z.infer<typeof fileSchema>;

/** An authenticated client of the binary protocol. */
export class BinaryPrincipal {
  /** action bits per topic, answered once (bit 1 read, 2 write, 4 admin). */
  private readonly memo = new Map<string, number>();

  constructor(
    /** The key's tenant or the certificate's identity. */
    readonly name: string,
    /** The tenant quotas and grants apply to (for internal roles, the name). */
    readonly tenant: string,
    readonly role: PrincipalRole,
    private readonly grants: readonly { topic: string; actions: readonly GrantAction[] }[],
  ) {}

  /** True when any grant names `topic` (or `*`): it sees the topic in listings, as over HTTP. */
  sees(topic: string): boolean {
    return this.role !== 'tenant' || this.grants.some((g) => g.topic === '*' || g.topic === topic);
  }

  /** True when the principal may do `action` on `topic` (`*`: every topic); cell roles may do anything. */
  can(action: GrantAction, topic: string): boolean {
    if (this.role !== 'tenant') return true;
    let bits = this.memo.get(topic);
    if (bits === undefined) {
      bits = 0;
      for (const g of this.grants) {
        if (g.topic !== '*' && g.topic !== topic) continue;
        for (const a of g.actions) bits |= ACTION_BIT[a];
      }
      if (this.memo.size >= GRANT_MEMO_TOPICS_MAX) this.memo.clear();
      this.memo.set(topic, bits);
    }
    return (bits & ACTION_BIT[action]) !== 0;
  }
}

const ACTION_BIT: Record<GrantAction, number> = { read: 1, write: 2, admin: 4 };

/** How a connection authenticated, and what came of it (the counters' labels). */
export type AuthMethod = 'api_key' | 'certificate';

/** The broker's authentication: keys, certificate identities and the counters of outcomes. */
export class BrokerAuth {
  private readonly keys: { digest: Buffer; principal: BinaryPrincipal }[];
  private readonly certificates: { identity: string; prefix: boolean; role: PrincipalRole; tenant: string; grants: BinaryKeysFile['keys'][number]['grants'] }[];
  private readonly outcomes: Counter<'method' | 'outcome'> | null;
  private readonly refusals: Counter<'reason'> | null;
  /** Refusals per reason, for tests and logs (the Prometheus counter holds the same). */
  readonly refused = new Map<string, number>();

  constructor(file: BinaryKeysFile, options: { registry?: Registry } = {}) {
    this.keys = file.keys.map((k) => ({ digest: Buffer.from(k.sha256, 'hex'), principal: new BinaryPrincipal(k.tenant, k.tenant, k.role ?? 'tenant', k.grants) }));
    this.certificates = (file.certificates ?? []).map((c) => {
      const role = c.role ?? 'tenant';
      if (role === 'tenant' && c.tenant === undefined) throw new EdgeqError('INVALID_CONFIG', `keys file: certificates: identity "${c.identity}" has role tenant but no tenant`, { details: { key: 'certificates' } });
      const prefix = c.identity.endsWith('*');
      return { identity: prefix ? c.identity.slice(0, -1) : c.identity, prefix, role, tenant: c.tenant ?? c.identity, grants: c.grants ?? [] };
    });
    const registers = options.registry ? [options.registry] : [];
    this.outcomes = options.registry
      ? new Counter({ name: 'edgeq_auth_attempts_total', help: 'Binary-protocol authentications by method (api_key, certificate) and outcome (ok, failed).', labelNames: ['method', 'outcome'], registers })
      : null;
    this.refusals = options.registry
      ? new Counter({
          name: 'edgeq_auth_refusals_total',
          help: 'Binary-protocol requests refused by authentication or authorization, by reason (unauthenticated, bad_key, forbidden, replica_fetch, unknown_certificate).',
          labelNames: ['reason'],
          registers,
        })
      : null;
  }

  /** Validates a parsed keys document (INVALID_CONFIG naming the bad field). */
  static fromJson(doc: unknown, options: { registry?: Registry } = {}): BrokerAuth {
    const parsed = fileSchema.safeParse(doc);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new EdgeqError('INVALID_CONFIG', `keys file: ${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`, { details: { key: 'keys' } });
    }
    return new BrokerAuth(parsed.data, options);
  }

  /** Loads a keys file. */
  static async fromFile(path: string, options: { registry?: Registry } = {}): Promise<BrokerAuth> {
    let doc: unknown;
    try {
      doc = JSON.parse(await readFile(path, 'utf8'));
    } catch (err) {
      throw new EdgeqError('INVALID_CONFIG', `keys file ${path} could not be read as JSON: ${(err as Error).message}`, { cause: err, details: { key: 'keys' } });
    }
    return BrokerAuth.fromJson(doc, options);
  }

  /** The principal of an API key, or null (counted) when no stored digest matches. */
  authenticateKey(key: string): BinaryPrincipal | null {
    const digest = createHash('sha256').update(key, 'utf8').digest();
    let found: BinaryPrincipal | null = null;
    for (const e of this.keys) if (timingSafeEqual(digest, e.digest) && !found) found = e.principal;
    this.outcomes?.inc({ method: 'api_key', outcome: found ? 'ok' : 'failed' });
    return found;
  }

  /**
   * The principal of a verified certificate's identity, or null when the file maps none (the
   * connection may still authenticate with a key). Exact identities win over prefixes.
   */
  principalOfCertificate(identity: string): BinaryPrincipal | null {
    const hit = this.certificates.find((c) => !c.prefix && c.identity === identity) ?? this.certificates.find((c) => c.prefix && identity.startsWith(c.identity));
    this.outcomes?.inc({ method: 'certificate', outcome: hit ? 'ok' : 'failed' });
    if (!hit) return null;
    return new BinaryPrincipal(identity, hit.role === 'tenant' ? hit.tenant : identity, hit.role, hit.grants);
  }

  /** Counts a refused request or authentication. */
  countRefusal(reason: 'unauthenticated' | 'bad_key' | 'forbidden' | 'replica_fetch' | 'unknown_certificate'): void {
    this.refused.set(reason, (this.refused.get(reason) ?? 0) + 1);
    this.refusals?.inc({ reason });
  }
}
