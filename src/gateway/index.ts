/** The regional HTTP gateway: a Hono app in front of one cell, with API-key auth and problem+json errors. */
export { createGatewayApp, READ_RECORDS_DEFAULT, READYZ_TIMEOUT_MS, type GatewayApp, type GatewayDeps } from './app.ts';
export { auth, authorize, Authenticator, Principal, hashApiKey, GRANTS_PER_KEY_MAX, type Action, type AuthVariables, type KeysFile } from './auth.ts';
export { problemResponse, toProblem, problemType, PROBLEM_CONTENT_TYPE, RETRY_AFTER_SECONDS_DEFAULT, type Problem } from './errors.ts';
export { GATEWAY_LIMITS, resolveLimits, type GatewayLimits } from './limits.ts';
export { READ_ROUND_TRIP_MS, READ_SERVE_MS_MAX, READ_RETRY_AFTER_MS } from './backend.ts';
export { GroupMembers, MEMBER_TOPICS_MAX, MEMBERS_RETRY_AFTER_MS, type JoinRequest } from './groups.ts';
export { StreamSlots, STREAM_RETRY_AFTER_MS } from './stream.ts';
export { GatewayMetrics, UNMATCHED_ROUTE, type GatewayAcksLabel, type GatewayMetricsOptions } from './metrics.ts';
export type { FailoverPartitionView, FailoverView, GatewayMesh, GlobalTopicRequest, MeshMemberView, MeshRegionView, MeshSelfView, MeshView } from './mesh.ts';
