/**
 * Saving and loading a trained LSTM as a folder: `model.json` (tfjs layers topology + weights
 * manifest), `weights.bin` (float32 weights) and `meta.json` (format version, feature and network
 * specs, normalisation statistics, training figures). tfjs without tfjs-node has no file:// IO
 * handler, so this module is that handler. Loading validates everything it reads and reports any
 * defect as INVALID_MODEL: a damaged folder must never crash a caller nor forecast wrongly.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { EdgeqError } from '../../src/core/index.ts';
import type { FeatureSpec, NormStats } from './features.ts';
import type { NetworkSpec } from './model.ts';
import type { ModelArtifactsLite, TrainingFigures } from './train.ts';

/** Version of the folder format; bump on any incompatible change of features or files. */
export const modelFormatVersion = 1;
/** Marker in meta.json, so a folder of some other model is not mistaken for this one. */
export const modelKind = 'edgeq-lstm-forecaster';

/** Contents of meta.json. */
export interface ModelMeta {
  readonly formatVersion: number;
  readonly kind: string;
  /** History a forecast needs (the forecaster's `window`). */
  readonly window: number;
  readonly horizon: number;
  readonly season: number;
  readonly features: FeatureSpec;
  readonly network: NetworkSpec;
  readonly normalisation: NormStats & { readonly transform: 'log1p' | 'identity' };
  readonly quantiles: readonly number[];
  readonly backend: string;
  readonly training: TrainingFigures & Record<string, unknown>;
  readonly savedAt?: string;
}

const files = { model: 'model.json', weights: 'weights.bin', meta: 'meta.json' } as const;
const bytesPerDtype: Record<string, number> = { float32: 4, int32: 4, bool: 1 };

function invalid(dir: string, why: string, cause?: unknown): EdgeqError {
  return new EdgeqError('INVALID_MODEL', `invalid LSTM model folder ${dir}: ${why}`, { cause, details: { dir } });
}

/** Writes the three files of a model folder (creating the folder). */
export async function saveModelFolder(dir: string, artifacts: ModelArtifactsLite, meta: ModelMeta): Promise<void> {
  await mkdir(dir, { recursive: true });
  const modelJson = {
    format: 'layers-model',
    generatedBy: modelKind,
    modelTopology: artifacts.modelTopology,
    weightsManifest: [{ paths: [files.weights], weights: artifacts.weightSpecs }],
  };
  await writeFile(path.join(dir, files.weights), new Uint8Array(artifacts.weightData));
  await writeFile(path.join(dir, files.model), JSON.stringify(modelJson));
  await writeFile(path.join(dir, files.meta), JSON.stringify({ ...meta, savedAt: new Date().toISOString() }, null, 2));
}

async function readJson(dir: string, file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path.join(dir, file), 'utf8');
  } catch (err) {
    throw invalid(dir, `cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`, err);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw invalid(dir, `${file} is not valid JSON`, err);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isPosInt = (v: unknown): v is number => Number.isInteger(v) && (v as number) > 0;
const isFiniteNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

function checkMeta(dir: string, raw: unknown): ModelMeta {
  if (!isObject(raw)) throw invalid(dir, 'meta.json is not an object');
  if (raw.kind !== modelKind) throw invalid(dir, `meta.json kind is ${String(raw.kind)}, expected ${modelKind}`);
  if (raw.formatVersion !== modelFormatVersion) {
    throw invalid(dir, `format version ${String(raw.formatVersion)} is not supported (this build reads ${modelFormatVersion})`);
  }
  const f = raw.features;
  const n = raw.network;
  const s = raw.normalisation;
  const ok =
    isPosInt(raw.window) &&
    isPosInt(raw.horizon) &&
    isPosInt(raw.season) &&
    isObject(f) &&
    isPosInt(f.windowSteps) &&
    f.season === raw.season &&
    f.horizon === raw.horizon &&
    isPosInt(f.profileDays) &&
    typeof f.weeklyLag === 'boolean' &&
    typeof f.logTransform === 'boolean' &&
    typeof f.levelInputs === 'boolean' &&
    isObject(n) &&
    isPosInt(n.units) &&
    isPosInt(n.hiddenUnits) &&
    Array.isArray(n.quantiles) &&
    n.quantiles.length === 3 &&
    n.quantiles.every((q) => isFiniteNum(q) && q > 0 && q < 1) &&
    isObject(s) &&
    isFiniteNum(s.mean) &&
    isFiniteNum(s.std) &&
    s.std > 0;
  if (!ok) throw invalid(dir, 'meta.json is missing fields or has values of the wrong type');
  return raw as unknown as ModelMeta;
}

/** Reads and validates a model folder; every defect is an INVALID_MODEL EdgeqError. */
export async function loadModelFolder(dir: string): Promise<{ artifacts: ModelArtifactsLite; meta: ModelMeta }> {
  const meta = checkMeta(dir, await readJson(dir, files.meta));
  const model = await readJson(dir, files.model);
  if (!isObject(model) || !isObject(model.modelTopology) || !Array.isArray(model.weightsManifest)) {
    throw invalid(dir, 'model.json lacks modelTopology or weightsManifest');
  }
  const groups = model.weightsManifest as unknown[];
  const group = groups[0];
  if (groups.length !== 1 || !isObject(group) || !Array.isArray(group.weights) || !Array.isArray(group.paths) || group.paths[0] !== files.weights) {
    throw invalid(dir, `model.json weightsManifest must name one file, ${files.weights}`);
  }
  let expectedBytes = 0;
  for (const spec of group.weights as unknown[]) {
    const shapeOk = isObject(spec) && typeof spec.name === 'string' && Array.isArray(spec.shape) && spec.shape.every((d) => Number.isInteger(d) && d >= 0);
    const width = isObject(spec) ? bytesPerDtype[String(spec.dtype ?? 'float32')] : undefined;
    if (!shapeOk || width === undefined || isObject(spec.quantization)) throw invalid(dir, 'model.json has a malformed weight entry');
    expectedBytes += width * (spec.shape as number[]).reduce((a, d) => a * d, 1);
  }
  let bytes: Buffer;
  try {
    bytes = await readFile(path.join(dir, files.weights));
  } catch (err) {
    throw invalid(dir, `cannot read ${files.weights} (${(err as NodeJS.ErrnoException).code ?? 'error'})`, err);
  }
  if (bytes.byteLength !== expectedBytes) {
    throw invalid(dir, `${files.weights} has ${bytes.byteLength} bytes, the manifest needs ${expectedBytes} (truncated or foreign file)`);
  }
  const weightData = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  return {
    meta,
    artifacts: { modelTopology: model.modelTopology, weightSpecs: group.weights as ModelArtifactsLite['weightSpecs'], weightData },
  };
}
