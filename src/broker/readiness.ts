/**
 * Whether a broker is ready (`GET /readyz` on its admin port, what a Kubernetes readiness probe
 * asks): started, and, in a cell, holding a valid lease with a current watch and caught up, i.e.
 * in the ISR of every partition it replicates and recovering none. A rolling restart that waits
 * for each broker to be ready before stopping the next therefore never takes a second replica of a
 * partition out of the ISR. Pure: it reads the broker's replicas and the cell's view, nothing else.
 */
import type { CellController } from './controller.ts';

/** Partitions named in one answer: a broker far behind on 10 000 partitions says how many, and the first few. */
export const READINESS_PARTITIONS_NAMED_MAX = 20;

/** The replica fields readiness reads (a `Partition` has them). */
export interface ReplicaView {
  readonly topic: string;
  readonly index: number;
  readonly isr: readonly number[];
  readonly recovering: unknown;
}

/** What `/readyz` answers. */
export interface Readiness {
  ready: boolean;
  /** Why not, one line each; empty when ready. */
  reasons: string[];
  /** Local replicas looked at. */
  replicas: number;
  /** Local replicas not in their ISR (as the cell says), and recovering ones. */
  notInIsr: number;
  recovering: number;
  /** The first READINESS_PARTITIONS_NAMED_MAX of them, `topic/partition`. */
  behind: string[];
}

/** The readiness of broker `brokerId` from its replicas and its cell (null: a lone broker); `started` is false while starting or stopping. */
export function brokerReadiness(o: { brokerId: number; started: boolean; cell: CellController | null; replicas: readonly ReplicaView[] }): Readiness {
  const reasons: string[] = [];
  if (!o.started) reasons.push('starting (recovering logs, joining the cell) or stopping');
  if (o.cell && o.started && !o.cell.canLead()) reasons.push('no valid lease or no current watch on the arbiter');
  let notInIsr = 0;
  let recovering = 0;
  const behind: string[] = [];
  if (o.started) {
    for (const p of o.replicas) {
      // The cell's state is the authority (written by the leader through the arbiter); a lone
      // broker's replica is its own ISR.
      const isr = o.cell ? (o.cell.partitionState(p.topic, p.index)?.isr ?? p.isr) : p.isr;
      const inIsr = isr.includes(o.brokerId);
      const isRecovering = p.recovering !== null && p.recovering !== undefined;
      if (!inIsr) notInIsr++;
      if (isRecovering) recovering++;
      if ((!inIsr || isRecovering) && behind.length < READINESS_PARTITIONS_NAMED_MAX) behind.push(`${p.topic}/${p.index}`);
    }
  }
  if (notInIsr > 0) reasons.push(`not in the ISR of ${notInIsr} partition(s)`);
  if (recovering > 0) reasons.push(`${recovering} replica(s) recovering (may lack records they once held)`);
  return { ready: reasons.length === 0, reasons, replicas: o.replicas.length, notInIsr, recovering, behind };
}
