/** TensorFlow.js runtime: one loader, one backend per thread, reported by name. */
export { loadTf, backendName, backendEnvVar, type Tf, type TfRuntime, type TfBackendName } from './load-tf.ts';
