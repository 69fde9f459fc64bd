/**
 * Flow control (issue 14, in progress): the token bucket, quotas with wildcards, and max-min fair
 * shares by weight. Not yet wired into the gateway or the broker.
 */
export { TokenBucket, type BucketSpec, type TakeResult } from './token-bucket.ts';
export { parseQuota, resolveQuota, quotaKey, QUOTA_VALUE_MAX, TENANT_NAME, QUOTA_TOPIC_NAME, type Quota, type QuotaLimits } from './quota.ts';
export { maxMinFairShares, jainIndex, type Claim } from './fair-share.ts';
