/** The regional cell: a broker's membership, elections, ISR and topics through the arbiter. */
export { ArbiterCellController, type CellControllerOptions } from './cell-controller.ts';
export { CellKeys } from './cell-keys.ts';
