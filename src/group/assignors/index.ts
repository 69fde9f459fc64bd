/** Partition assignors behind one interface, and the registry the consumer picks them from. */
import { EdgeqError } from '../../core/index.ts';
import type { Assignor } from './assignor.ts';
import { rangeAssignor } from './range.ts';
import { roundRobinAssignor } from './round-robin.ts';

export type { Assignor, AssignorMember } from './assignor.ts';
export { rangeAssignor } from './range.ts';
export { roundRobinAssignor } from './round-robin.ts';

/** Every built-in assignor, by protocol name. */
export const ASSIGNORS: ReadonlyMap<string, Assignor> = new Map(
  [rangeAssignor, roundRobinAssignor].map((a) => [a.name, a] as const),
);

/** The built-in assignor called `name`; INVALID_ARGUMENT for an unknown name. */
export function assignorByName(name: string): Assignor {
  const a = ASSIGNORS.get(name);
  if (!a) {
    throw new EdgeqError('INVALID_ARGUMENT', `unknown assignor "${name}" (known: ${[...ASSIGNORS.keys()].join(', ')})`, {
      details: { assignor: name },
    });
  }
  return a;
}
