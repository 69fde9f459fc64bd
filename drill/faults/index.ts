/** The faults a drill injects: the driver interface and the local deployment's driver. */
export type { DeploymentLink, DeploymentProcess, FaultDriver, LinkDegradation } from './driver.ts';
export { CONTROL_CALL_MS, DevControlDriver } from './dev-driver.ts';
