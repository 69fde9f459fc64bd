/**
 * Client ids of the cell's own clients. Without auth (`--auth none`, the local deployment) the
 * tenant of a binary-protocol request is its connection's client id (Kafka's client-id quotas),
 * and quotas are enforced per tenant; with auth on it is the authenticated tenant, and a tenant
 * cannot take an internal client id (docs/security.md). The cell's own traffic — replica fetchers, gateways (which enforce
 * quotas themselves, per authenticated tenant, so a second, per-connection limit at the broker
 * would throttle every tenant behind one gateway together), the exchange between regions — uses
 * client ids starting with `__`, which the broker never limits. TENANT_NAME allows `_`, so a
 * client id like `__x` would be a valid tenant name: it is the cell's all the same, never a tenant's.
 */

/** The prefix of the cell's own client ids. */
export const INTERNAL_CLIENT_ID_PREFIX = '__';

/** The client id of an internal component, e.g. `internalClientId('gateway')` is `__gateway`. */
export function internalClientId(name: string): string {
  return `${INTERNAL_CLIENT_ID_PREFIX}${name}`;
}

/** The client id of a gateway's clients: the gateway enforces quotas itself, per authenticated tenant. */
export const GATEWAY_CLIENT_ID = internalClientId('edgeq-gateway');

/** True for a client id of the cell's own (never quota-limited). */
export function isInternalClientId(clientId: string): boolean {
  return clientId.startsWith(INTERNAL_CLIENT_ID_PREFIX);
}
