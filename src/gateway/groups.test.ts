// Proves an HTTP member's commit refused by a rebalance (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS) is answered retriable and says the member rejoins by itself, while other commit failures pass through unchanged.
import { afterEach, describe, expect, it } from 'vitest';
import type { EdgeqClient } from '../client/index.ts';
import { EdgeqError, type ErrorCode } from '../core/index.ts';
import { GroupMembers } from './groups.ts';
import { resolveLimits } from './limits.ts';
import { toProblem } from './errors.ts';

/** A client whose consumers join nothing and refuse every commit with `code`. */
function refusingClient(code: ErrorCode): EdgeqClient {
  const consumer = {
    subscribe: () => undefined,
    poll: async () => [],
    commit: async () => {
      throw new EdgeqError(code, 'refused by the coordinator');
    },
    close: async () => undefined,
  };
  return { consumer: () => consumer } as unknown as EdgeqClient;
}

let members: GroupMembers | null = null;
afterEach(async () => {
  await members?.close();
  members = null;
});

async function commitError(code: ErrorCode): Promise<EdgeqError> {
  members = new GroupMembers(refusingClient(code), resolveLimits());
  const { memberId } = members.join('g', { topics: ['t'], fromBeginning: false });
  const err = await members.commit('g', memberId, [{ topic: 't', partition: 0, offset: 1 }]).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(EdgeqError);
  return err as EdgeqError;
}

describe('GroupMembers.commit', () => {
  it.each(['ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID', 'REBALANCE_IN_PROGRESS'] as const)('answers %s as retriable, saying the member rejoins', async (code) => {
    const err = await commitError(code);
    const problem = toProblem(err);
    expect(problem).toMatchObject({ code, status: 409, retriable: true });
    expect(problem.detail).toContain('rejoins group "g" by itself: poll again');
    expect(err.details).toMatchObject({ group: 'g', rejoining: true });
  });

  it('passes other failures through unchanged', async () => {
    const err = await commitError('COORDINATOR_NOT_AVAILABLE');
    expect(err.message).toBe('refused by the coordinator');
    expect(toProblem(err)).toMatchObject({ code: 'COORDINATOR_NOT_AVAILABLE', status: 503, retriable: true });
    const bad = await commitError('UNKNOWN_TOPIC_OR_PARTITION');
    expect(toProblem(bad)).toMatchObject({ status: 404, retriable: false });
  });
});
