/**
 * Rendering and validating deploy/k8s for the tests, with no network. An overlay is rendered by
 * `kubectl kustomize` (or `kustomize build`) when either is installed; otherwise by `miniKustomize`
 * below, a small merge that does what deploy/k8s uses and nothing more: resources and components
 * (recursively), `namespace`, `labels` (metadata and templates), `configMapGenerator`
 * literals (without kustomize's name hash), `images` (newName/newTag) and JSON-patch `replace`
 * operations. Objects are validated by the typed models of `kubernetes-models` (the Kubernetes
 * OpenAPI schemas compiled to validators) and `@kubernetes-models/keda` for the ScaledObject.
 *
 * cert-manager's Issuer and Certificate (the optional components/cert-manager) have no model in
 * those packages, and adding one (`@kubernetes-models/cert-manager`) for two kinds is not worth a
 * dependency: `validateCertManager` checks the subset of the cert-manager.io/v1 CRD schema those
 * manifests use (required fields, types, the enums of usages and key algorithms, Go durations)
 * and refuses any field outside it, as the API server's strict field validation would.
 */
import { execFile } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { ConfigMap, Namespace, Secret, Service } from 'kubernetes-models/v1';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1';

const run = promisify(execFile);

/** A rendered object. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata?: { name?: string; namespace?: string; labels?: Record<string, string> };
  spec?: unknown;
  [k: string]: unknown;
}

/** The models deploy/k8s uses, by apiVersion and kind. */
const MODELS: Record<string, new (data: any) => { validate(): void }> = {
  'v1/Namespace': Namespace,
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'apps/v1/StatefulSet': StatefulSet,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'keda.sh/v1alpha1/ScaledObject': ScaledObject,
};

/** Throws, naming the field, when `o` does not match its kind's schema (or has no known schema). */
export function validateObject(o: { apiVersion: string; kind: string; [k: string]: unknown }): void {
  if (o.apiVersion === 'cert-manager.io/v1') return validateCertManager(o);
  const Model = MODELS[`${o.apiVersion}/${o.kind}`];
  if (!Model) throw new Error(`no schema for ${o.apiVersion} ${o.kind}`);
  new Model(o).validate();
}

let renderer: Promise<string[] | null> | null = null;

/** The installed renderer's command, or null. */
function findRenderer(): Promise<string[] | null> {
  renderer ??= (async () => {
    for (const cmd of [['kubectl', 'kustomize'], ['kustomize', 'build']]) {
      try {
        await run(cmd[0]!, cmd[0] === 'kubectl' ? ['version', '--client'] : ['version'], { timeout: 10_000 });
        return cmd;
      } catch {
        // not installed
      }
    }
    return null;
  })();
  return renderer;
}

/** The objects of the kustomization in `dir`. */
export async function renderOverlay(dir: string): Promise<K8sObject[]> {
  const cmd = await findRenderer();
  if (cmd) {
    const { stdout } = await run(cmd[0]!, [...cmd.slice(1), dir], { timeout: 30_000, maxBuffer: 16 << 20 });
    return parseAllDocuments(stdout).map((d) => d.toJSON() as K8sObject).filter(Boolean);
  }
  return miniKustomize(dir);
}

const resolvePath = (dir: string, p: string) => (isAbsolute(p) ? p : join(dir, p));

/** The fallback renderer: see the header. */
export async function miniKustomize(dir: string): Promise<K8sObject[]> {
  const k = parseYaml(await readFile(join(dir, 'kustomization.yaml'), 'utf8')) as Record<string, any>;
  const objects: K8sObject[] = [];
  for (const r of [...(k.resources ?? []), ...(k.components ?? [])] as string[]) {
    const p = resolvePath(dir, r);
    if ((await stat(p)).isDirectory()) objects.push(...(await miniKustomize(p)));
    else objects.push(...parseAllDocuments(await readFile(p, 'utf8')).map((d) => d.toJSON() as K8sObject).filter(Boolean));
  }
  for (const g of (k.configMapGenerator ?? []) as { name: string; literals: string[] }[]) {
    const data = Object.fromEntries(g.literals.map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
    objects.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: g.name }, data });
  }
  for (const o of objects) {
    o.metadata ??= {};
    if (k.namespace && o.kind !== 'Namespace') o.metadata.namespace = k.namespace;
    for (const l of (k.labels ?? []) as { pairs: Record<string, string>; includeTemplates?: boolean }[]) {
      o.metadata.labels = { ...o.metadata.labels, ...l.pairs };
      const tpl = (o.spec as any)?.template;
      if (!l.includeTemplates) continue;
      // kustomize labels pod templates and a StatefulSet's volume claim templates alike.
      for (const t of [tpl, ...((o.spec as any)?.volumeClaimTemplates ?? [])].filter(Boolean)) t.metadata = { ...t.metadata, labels: { ...t.metadata?.labels, ...l.pairs } };
    }
    for (const img of (k.images ?? []) as { name: string; newName?: string; newTag?: string }[]) {
      for (const c of (o.spec as any)?.template?.spec?.containers ?? []) {
        const [name] = String(c.image).split(':');
        if (name === img.name) c.image = `${img.newName ?? name}:${img.newTag ?? 'latest'}`;
      }
    }
  }
  for (const p of (k.patches ?? []) as { target: { kind: string; name: string }; patch: string }[]) {
    for (const o of objects.filter((x) => x.kind === p.target.kind && x.metadata?.name === p.target.name)) {
      for (const op of parseYaml(p.patch) as { op: string; path: string; value: unknown }[]) {
        if (op.op !== 'replace') throw new Error(`miniKustomize does only replace, not ${op.op}`);
        const keys = op.path.split('/').slice(1);
        let at: any = o;
        for (const key of keys.slice(0, -1)) at = at[key];
        at[keys.at(-1)!] = op.value;
      }
    }
  }
  return objects;
}

/** cert-manager.io/v1 KeyUsage values (the CRD's enum). */
const CM_USAGES = new Set(['signing', 'digital signature', 'content commitment', 'key encipherment', 'key agreement', 'data encipherment', 'cert sign', 'crl sign', 'encipher only', 'decipher only', 'any', 'server auth', 'client auth', 'code signing', 'email protection', 's/mime', 'ipsec end system', 'ipsec tunnel', 'ipsec user', 'timestamping', 'ocsp signing', 'microsoft sgc', 'netscape sgc']);
/** A Go time.Duration as cert-manager parses duration and renewBefore. */
const GO_DURATION = /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/;

function fail(o: { kind: string; metadata?: unknown }, path: string, why: string): never {
  throw new Error(`${o.kind}/${(o.metadata as { name?: string } | undefined)?.name}: ${path}: ${why}`);
}

function onlyKeys(o: { kind: string }, path: string, v: unknown, allowed: string[]): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) fail(o, path, 'must be an object');
  for (const k of Object.keys(v)) if (!allowed.includes(k)) fail(o, `${path}.${k}`, 'unknown field');
  return v as Record<string, unknown>;
}

function str(o: { kind: string }, path: string, v: unknown, required = false): void {
  if (v === undefined && !required) return;
  if (typeof v !== 'string' || v === '') fail(o, path, 'must be a non-empty string');
}

/** The cert-manager.io/v1 Issuer and Certificate subset deploy/k8s uses; throws naming the field. */
export function validateCertManager(o: { apiVersion: string; kind: string; [k: string]: unknown }): void {
  onlyKeys(o, '', o, ['apiVersion', 'kind', 'metadata', 'spec']);
  const meta = onlyKeys(o, 'metadata', o.metadata, ['name', 'namespace', 'labels', 'annotations']);
  str(o, 'metadata.name', meta.name, true);
  if (o.kind === 'Issuer' || o.kind === 'ClusterIssuer') {
    const spec = onlyKeys(o, 'spec', o.spec, ['ca', 'selfSigned']);
    if (Object.keys(spec).length !== 1) fail(o, 'spec', 'exactly one issuer type');
    if (spec.ca !== undefined) str(o, 'spec.ca.secretName', onlyKeys(o, 'spec.ca', spec.ca, ['secretName', 'crlDistributionPoints']).secretName, true);
    return;
  }
  if (o.kind !== 'Certificate') throw new Error(`no schema for ${o.apiVersion} ${o.kind}`);
  const spec = onlyKeys(o, 'spec', o.spec, ['secretName', 'issuerRef', 'commonName', 'dnsNames', 'uris', 'ipAddresses', 'usages', 'privateKey', 'duration', 'renewBefore', 'isCA', 'subject', 'secretTemplate']);
  str(o, 'spec.secretName', spec.secretName, true);
  const ref = onlyKeys(o, 'spec.issuerRef', spec.issuerRef, ['name', 'kind', 'group']);
  str(o, 'spec.issuerRef.name', ref.name, true);
  if (ref.kind !== undefined && ref.kind !== 'Issuer' && ref.kind !== 'ClusterIssuer') fail(o, 'spec.issuerRef.kind', 'Issuer or ClusterIssuer');
  str(o, 'spec.commonName', spec.commonName);
  if (typeof spec.commonName === 'string' && spec.commonName.length > 64) fail(o, 'spec.commonName', 'at most 64 characters (X.509)');
  for (const f of ['dnsNames', 'uris', 'ipAddresses', 'usages'] as const) {
    const list = spec[f];
    if (list === undefined) continue;
    if (!Array.isArray(list) || list.some((x) => typeof x !== 'string' || x === '')) fail(o, `spec.${f}`, 'must be a list of non-empty strings');
  }
  for (const u of (spec.usages as string[] | undefined) ?? []) if (!CM_USAGES.has(u)) fail(o, 'spec.usages', `unknown usage "${u}"`);
  if (spec.commonName === undefined && spec.dnsNames === undefined && spec.uris === undefined && spec.ipAddresses === undefined) fail(o, 'spec', 'needs commonName, dnsNames, uris or ipAddresses');
  if (spec.privateKey !== undefined) {
    const pk = onlyKeys(o, 'spec.privateKey', spec.privateKey, ['algorithm', 'size', 'rotationPolicy', 'encoding']);
    if (pk.algorithm !== undefined && !['RSA', 'ECDSA', 'Ed25519'].includes(pk.algorithm as string)) fail(o, 'spec.privateKey.algorithm', 'RSA, ECDSA or Ed25519');
    if (pk.algorithm === 'ECDSA' && pk.size !== undefined && ![256, 384, 521].includes(pk.size as number)) fail(o, 'spec.privateKey.size', 'ECDSA: 256, 384 or 521');
    if (pk.rotationPolicy !== undefined && !['Never', 'Always'].includes(pk.rotationPolicy as string)) fail(o, 'spec.privateKey.rotationPolicy', 'Never or Always');
  }
  for (const f of ['duration', 'renewBefore'] as const) if (spec[f] !== undefined && !GO_DURATION.test(String(spec[f]))) fail(o, `spec.${f}`, 'a Go duration such as 2160h');
}
