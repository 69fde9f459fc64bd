/** Proves that the runtime loads TensorFlow.js once, falls back to wasm when tfjs-node is absent, reports the backend, and honours EDGEQ_TF_BACKEND. */
import { afterEach, describe, expect, it, vi } from 'vitest';

const envVar = 'EDGEQ_TF_BACKEND';
const saved = process.env[envVar];

async function freshRuntime(): Promise<typeof import('./index.ts')> {
  vi.resetModules(); // the loader caches per module instance: a fresh import re-runs the selection
  return import('./index.ts');
}

afterEach(() => {
  if (saved === undefined) delete process.env[envVar];
  else process.env[envVar] = saved;
});

describe('loadTf', () => {
  it('picks wasm (with SIMD measured) when tfjs-node is not installed, once per process', async () => {
    delete process.env[envVar];
    const runtime = await freshRuntime();
    expect(runtime.backendName()).toBeUndefined();
    const a = await runtime.loadTf();
    const b = await runtime.loadTf();
    expect(b).toBe(a);
    expect(a.backend).toBe('wasm');
    expect(typeof a.simd).toBe('boolean');
    expect(a.tf.getBackend()).toBe('wasm');
    expect(runtime.backendName()).toBe('wasm');
    expect(a.tf.tensor1d([1, 2, 3]).sum().dataSync()[0]).toBe(6);
  });

  it('uses the pure-JS cpu backend when EDGEQ_TF_BACKEND=cpu', async () => {
    process.env[envVar] = 'cpu';
    const runtime = await freshRuntime();
    const { backend, tf } = await runtime.loadTf();
    expect(backend).toBe('cpu');
    expect(tf.getBackend()).toBe('cpu');
    expect(runtime.backendName()).toBe('cpu');
  });

  it('fails clearly when EDGEQ_TF_BACKEND=tensorflow and tfjs-node is absent, or on an unknown name', async () => {
    process.env[envVar] = 'tensorflow';
    await expect((await freshRuntime()).loadTf()).rejects.toThrow(/tfjs-node/);
    process.env[envVar] = 'gpu';
    await expect((await freshRuntime()).loadTf()).rejects.toThrow(/expected one of/);
  });
});
