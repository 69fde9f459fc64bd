/**
 * Loading the configuration: defaults, then a JSON file, then environment variables, then
 * explicit overrides (CLI flags). The result is validated once, at start-up; every problem is
 * reported with the key it concerns and where its value came from.
 *
 * Environment variables: `EDGEQ_<SECTION>__<KEY>` in SCREAMING_SNAKE_CASE, e.g.
 * `EDGEQ_LOG__FLUSH_POLICY=sync`, `EDGEQ_BROKER__PORT=9093`, plus the aliases in ENV_ALIASES.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { EdgeqError } from '../core/errors.ts';
import { resolveLogConfig } from '../log/index.ts';
import { configSchema, DEFAULT_CONFIG, ENV_ALIASES, type Config } from './schema.ts';

/** Where the configuration comes from. */
export interface ConfigSources {
  /** Path of a JSON config file. */
  file?: string;
  env?: NodeJS.ProcessEnv;
  /** Dotted keys to values, e.g. `{ 'broker.port': 9093 }` (from CLI flags). */
  overrides?: Record<string, unknown>;
}

/** One problem found while loading. */
export interface ConfigIssue {
  key: string;
  message: string;
  source: string;
}

type Obj = Record<string, unknown>;

function camelToEnv(key: string): string {
  return key.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
}

/** Every leaf key of the schema with its zod type name, e.g. `log.flushPolicy` → `enum`. */
function leafTypes(): Map<string, string> {
  const out = new Map<string, string>();
  for (const [section, sectionSchema] of Object.entries(configSchema.shape)) {
    for (const [key, field] of Object.entries((sectionSchema as z.ZodObject).shape)) {
      out.set(`${section}.${key}`, (field as z.ZodType).def.type);
    }
  }
  return out;
}

function setPath(target: Obj, path: string, value: unknown): void {
  const parts = path.split('.');
  let o = target;
  for (const p of parts.slice(0, -1)) {
    if (typeof o[p] !== 'object' || o[p] === null) o[p] = {};
    o = o[p] as Obj;
  }
  o[parts[parts.length - 1]!] = value;
}

function deepMerge(base: Obj, over: Obj): Obj {
  const out: Obj = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && b && typeof b === 'object' ? deepMerge(b as Obj, v as Obj) : v;
  }
  return out;
}

function parseEnvValue(type: string, raw: string): unknown {
  if (type === 'number') return raw.trim() === '' ? raw : Number(raw);
  if (type === 'boolean') return raw === 'true' ? true : raw === 'false' ? false : raw;
  return raw;
}

/** Loads and validates the configuration; throws INVALID_CONFIG naming every bad key. */
export function loadConfig(sources: ConfigSources = {}): Config {
  const issues: ConfigIssue[] = [];
  const origin = new Map<string, string>();
  let merged: Obj = structuredClone(DEFAULT_CONFIG) as unknown as Obj;

  if (sources.file) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(sources.file, 'utf8'));
    } catch (err) {
      throw new EdgeqError('INVALID_CONFIG', `cannot read config file ${sources.file}: ${(err as Error).message}`, {
        cause: err,
        details: { file: sources.file },
      });
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new EdgeqError('INVALID_CONFIG', `config file ${sources.file} must hold a JSON object`);
    }
    for (const [section, body] of Object.entries(parsed as Obj)) {
      if (body && typeof body === 'object') for (const k of Object.keys(body as Obj)) origin.set(`${section}.${k}`, `file ${sources.file}`);
    }
    merged = deepMerge(merged, parsed as Obj);
  }

  const types = leafTypes();
  const envNames = new Map<string, string>();
  for (const key of types.keys()) {
    const [section, field] = key.split('.') as [string, string];
    envNames.set(`EDGEQ_${camelToEnv(section)}__${camelToEnv(field)}`, key);
  }
  for (const [name, key] of Object.entries(ENV_ALIASES)) envNames.set(name, key);
  for (const [name, raw] of Object.entries(sources.env ?? {})) {
    if (raw === undefined || !name.startsWith('EDGEQ_')) continue;
    const key = envNames.get(name);
    if (key === undefined) {
      if (name.includes('__')) issues.push({ key: name, message: 'unknown configuration variable', source: `env ${name}` });
      continue;
    }
    setPath(merged, key, parseEnvValue(types.get(key)!, raw));
    origin.set(key, `env ${name}`);
  }

  for (const [key, value] of Object.entries(sources.overrides ?? {})) {
    if (!types.has(key)) {
      issues.push({ key, message: 'unknown configuration key', source: 'flag' });
      continue;
    }
    setPath(merged, key, value);
    origin.set(key, 'flag');
  }

  const result = configSchema.safeParse(merged);
  if (!result.success) {
    for (const issue of result.error.issues) {
      const base = issue.path.join('.');
      const keys = issue.code === 'unrecognized_keys' ? issue.keys.map((k) => (base ? `${base}.${k}` : k)) : [base];
      for (const key of keys) {
        const message = issue.code === 'unrecognized_keys' ? 'unknown configuration key' : issue.message;
        issues.push({ key, message, source: origin.get(key) ?? 'default' });
      }
    }
  } else {
    try {
      resolveLogConfig(result.data.log as Parameters<typeof resolveLogConfig>[0]);
    } catch (err) {
      const key = ((err as EdgeqError).details?.key as string | undefined) ?? 'log';
      issues.push({ key, message: (err as Error).message, source: origin.get(key) ?? 'default' });
    }
  }

  if (issues.length > 0) {
    const text = issues.map((i) => `${i.key}: ${i.message} (from ${i.source})`).join('; ');
    throw new EdgeqError('INVALID_CONFIG', `invalid configuration: ${text}`, { details: { issues } });
  }
  return result.data as Config;
}
