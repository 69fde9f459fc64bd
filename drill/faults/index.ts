/** The faults a drill injects: the driver interface and the local deployment's driver. */
export type { Deployment, DeploymentBroker, DeploymentLink, DeploymentProcess, DeploymentRegion, FaultDriver, LinkDegradation } from './driver.ts';
export { CONTROL_CALL_MS, DevControlDriver, RELEASE_CALL_MS } from './dev-driver.ts';
