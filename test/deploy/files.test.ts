// Proves the deploy/ files are usable as written: every YAML and JSON file parses; every rendered
// Kubernetes object of each region overlay validates against the Kubernetes (and KEDA) schemas,
// with the properties the cell depends on; the alert rules pass promtool (or a field check without
// it); the compose file has the 3 regions' shape and passes `docker compose config` where the
// plugin exists; every edgeq flag the compose file and the manifests pass exists in the CLI; and
// auth and TLS are on everywhere: no broker runs `--auth none`, every broker serves TLS with client
// certificates and a keys file, gateways serve HTTPS and reach brokers and each other over TLS, etcd
// speaks mutual TLS, and every TLS file a process is given is mounted from a Secret (Kubernetes)
// or written by the compose `certs` service.
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { miniKustomize, renderOverlay, validateObject, type K8sObject } from './k8s.ts';

const run = promisify(execFile);
const repo = fileURLToPath(new URL('../../', import.meta.url));
const deployDir = join(repo, 'deploy');
const BIN = join(repo, 'bin/edgeq.js');
const REGIONS = ['us-east', 'eu-west', 'ap-south'];

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await filesUnder(p)));
    else out.push(p);
  }
  return out;
}

async function hasCommand(cmd: string, args: string[]): Promise<boolean> {
  try {
    await run(cmd, args, { timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
}

describe('every YAML and JSON file under deploy/', () => {
  it('parses', async () => {
    const files = (await filesUnder(deployDir)).filter((f) => /\.(ya?ml|json)$/.test(f));
    // compose, 2 prometheus configs, rules, 2 grafana provisioning files, the dashboard, the keys
    // file, and the k8s base, components and overlays: far more than 10 when the tree is there.
    expect(files.length).toBeGreaterThan(10);
    for (const f of files) {
      const text = await readFile(f, 'utf8');
      if (f.endsWith('.json')) {
        expect(() => JSON.parse(text), relative(repo, f)).not.toThrow();
        continue;
      }
      for (const doc of parseAllDocuments(text)) expect(doc.errors.map((e) => `${relative(repo, f)}: ${e.message}`)).toEqual([]);
    }
  });
});

describe('Kubernetes manifests', () => {
  for (const region of REGIONS) {
    it(`overlays/${region} renders to objects that validate, with the cell's properties`, async () => {
      const objects = await renderOverlay(join(deployDir, 'k8s/overlays', region));
      const kinds = objects.map((o) => o.kind).sort();
      expect(kinds).toEqual(['ConfigMap', 'Deployment', 'Namespace', 'NetworkPolicy', 'PodDisruptionBudget', 'PodDisruptionBudget', 'ScaledObject', 'Service', 'Service', 'Service', 'Service', 'StatefulSet', 'StatefulSet']);
      for (const o of objects) {
        expect(() => validateObject(o), `${o.kind}/${o.metadata?.name}`).not.toThrow();
        if (o.kind !== 'Namespace') expect(o.metadata?.namespace).toBe(`edgeq-${region}`);
      }
      const broker = find(objects, 'StatefulSet', 'edgeq-broker');
      const spec = broker.spec as any;
      expect(spec.podManagementPolicy).toBe('Parallel');
      expect(spec.serviceName).toBe('edgeq-broker');
      expect(spec.volumeClaimTemplates[0].metadata.name).toBe('data');
      const pod = spec.template.spec;
      expect(pod.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey).toBe('kubernetes.io/hostname');
      expect(pod.containers[0].readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'admin' });
      expect((find(objects, 'Service', 'edgeq-broker').spec as any).clusterIP).toBe('None');
      expect((find(objects, 'PodDisruptionBudget', 'edgeq-broker').spec as any).maxUnavailable).toBe(1);
      const so = find(objects, 'ScaledObject', 'edgeq-gateway').spec as any;
      expect(so.scaleTargetRef.name).toBe('edgeq-gateway');
      expect(so.triggers[0].metadata.query).toBe(`max(edgeq_planner_desired_instances{component="gateway",region="${region}"})`);
      const cm = objects.find((o) => o.kind === 'ConfigMap')!;
      expect((cm as any).data.EDGEQ_REGION).toBe(region);
      expect((cm as any).data.EDGEQ_MESH_SEEDS.split(',')).toHaveLength(REGIONS.length - 1);
    });
  }

  it('the HPA alternative renders and validates, reading the region\'s plan', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'edgeq-k8s-hpa-'));
    try {
      // An overlay of our own: the real one's settings with the hpa component instead (kustomize
      // takes other folders by relative path only).
      const overlay = (await readFile(join(deployDir, 'k8s/overlays/eu-west/kustomization.yaml'), 'utf8'))
        .replace('../../components/keda', relative(dir, join(deployDir, 'k8s/components/hpa')))
        .replace('../../base', relative(dir, join(deployDir, 'k8s/base')))
        .replace('  - namespace.yaml\n', '');
      await writeFile(join(dir, 'kustomization.yaml'), overlay);
      const objects = await renderOverlay(dir);
      expect(objects.some((o) => o.kind === 'ScaledObject')).toBe(false);
      const hpa = find(objects, 'HorizontalPodAutoscaler', 'edgeq-gateway');
      expect(() => validateObject(hpa)).not.toThrow();
      const m = (hpa.spec as any).metrics[0].external;
      expect(m.metric).toEqual({ name: 'edgeq_planner_desired_instances', selector: { matchLabels: { component: 'gateway', region: 'eu-west' } } });
      expect(m.target).toEqual({ type: 'AverageValue', averageValue: '1' });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('the fallback renderer (for machines without kustomize) gives what kustomize gives', async (ctx) => {
    const real = await renderOverlay(join(deployDir, 'k8s/overlays/us-east'));
    const mini = await miniKustomize(join(deployDir, 'k8s/overlays/us-east'));
    if (JSON.stringify(real) === JSON.stringify(sortObjects(mini))) return; // no kustomize here: renderOverlay was the fallback
    // kustomize names a generated ConfigMap with a hash of its content; the fallback does not.
    const norm = (objs: K8sObject[]) => JSON.parse(JSON.stringify(sortObjects(objs)).replace(/edgeq-region-[a-z0-9]{10}/g, 'edgeq-region'));
    expect(norm(mini)).toEqual(norm(real));
    ctx.annotate?.('compared with kustomize');
  });

  it('the validator refuses a manifest the API server would (so a pass means something)', () => {
    const bad = { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'x' }, spec: { replicas: 'three', serviceName: 'x', selector: {}, template: {} } };
    expect(() => validateObject(bad)).toThrow(/replicas/);
    expect(() => validateObject({ apiVersion: 'example.com/v1', kind: 'Unknown', metadata: { name: 'x' } })).toThrow(/no schema/);
    const cert = { apiVersion: 'cert-manager.io/v1', kind: 'Certificate', metadata: { name: 'c' }, spec: { secretName: 's', issuerRef: { name: 'i', kind: 'Issuer' }, commonName: 'x', usages: ['client auth'] } };
    expect(() => validateObject(cert)).not.toThrow();
    expect(() => validateObject({ ...cert, spec: { ...cert.spec, usages: ['clientAuth'] } })).toThrow(/usages/);
    expect(() => validateObject({ ...cert, spec: { ...cert.spec, dnsName: ['x'] } })).toThrow(/dnsName: unknown field/);
    expect(() => validateObject({ ...cert, spec: { ...cert.spec, secretName: undefined } })).toThrow(/secretName/);
    expect(() => validateObject({ ...cert, spec: { ...cert.spec, duration: '90d' } })).toThrow(/duration/);
  });

  it('the cert-manager component renders per region and its Issuers and Certificates fill every Secret the base mounts', async (ctx) => {
    if (!(await hasRenderer())) {
      console.log('skipped: the component uses kustomize replacements, which the fallback renderer does not do; install kubectl or kustomize');
      ctx.skip();
    }
    const dir = await mkdtemp(join(tmpdir(), 'edgeq-k8s-cm-'));
    try {
      const region = 'ap-south';
      const overlay = (await readFile(join(deployDir, 'k8s/overlays', region, 'kustomization.yaml'), 'utf8'))
        .replace('  - ../../components/keda\n', `  - ${relative(dir, join(deployDir, 'k8s/components/keda'))}\n  - ${relative(dir, join(deployDir, 'k8s/components/cert-manager'))}\n`)
        .replace('../../base', relative(dir, join(deployDir, 'k8s/base')));
      await writeFile(join(dir, 'kustomization.yaml'), overlay);
      await writeFile(join(dir, 'namespace.yaml'), await readFile(join(deployDir, 'k8s/overlays', region, 'namespace.yaml'), 'utf8'));
      const objects = await renderOverlay(dir);
      for (const o of objects) expect(() => validateObject(o), `${o.kind}/${o.metadata?.name}`).not.toThrow();
      const certs = objects.filter((o) => o.kind === 'Certificate').map((o) => o.spec as any);
      const issuers = new Set(objects.filter((o) => o.kind === 'Issuer').map((o) => o.metadata?.name));
      for (const c of certs) expect(issuers.has(c.issuerRef.name), c.secretName).toBe(true);
      const bySecret = new Map(certs.map((c) => [c.secretName as string, c]));
      // Every TLS Secret a pod of the region mounts is a Certificate's (the API keys and mesh key are not certificates).
      const mounted = secretVolumes(objects).filter((n) => !['edgeq-broker-keys', 'edgeq-gateway-keys'].includes(n));
      expect(mounted.sort()).toEqual([...bySecret.keys()].sort());
      const ns = `edgeq-${region}`;
      const broker = bySecret.get('edgeq-broker-tls')!;
      expect(broker.commonName).toBe(`edgeq-broker.${region}`);
      expect(broker.dnsNames).toContain(`*.edgeq-broker.${ns}.svc`);
      expect(broker.usages).toEqual(expect.arrayContaining(['server auth', 'client auth']));
      expect(bySecret.get('edgeq-gateway-broker-tls')!.commonName).toBe(`edgeq-gateway.${region}`);
      expect(bySecret.get('edgeq-gateway-tls')!.dnsNames).toEqual(['edgeq-gateway', `edgeq-gateway.${ns}.svc`]);
      expect(bySecret.get('edgeq-mesh-tls')!.issuerRef.name).toBe('edgeq-mesh-ca');
      expect(bySecret.get('edgeq-mesh-tls')!.usages).toEqual(expect.arrayContaining(['server auth', 'client auth']));
      // etcd's certificate names the endpoints exactly as the brokers dial them (gRPC checks the name).
      const cm = objects.find((o) => o.kind === 'ConfigMap') as any;
      const hosts = (cm.data.EDGEQ_ARBITER_ENDPOINTS as string).split(',').map((e) => e.slice(0, e.lastIndexOf(':')));
      expect(bySecret.get('edgeq-etcd-tls')!.dnsNames).toEqual(expect.arrayContaining([...hosts, `*.edgeq-etcd.${ns}.svc`]));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('auth and TLS are on outside the dev deployment', () => {
  it('no file under deploy/ runs a broker with `--auth none` or a gateway with `--no-auth`', async () => {
    for (const f of (await filesUnder(deployDir)).filter((x) => /\.(ya?ml|json|sh|mjs)$|Dockerfile$/.test(x))) {
      const text = (await readFile(f, 'utf8')).split('\n').filter((l) => !/^\s*#/.test(l)).join('\n');
      expect(text, relative(repo, f)).not.toMatch(/--auth[ =,"']+\s*none|EDGEQ_AUTH["']?\s*[:=]\s*["']?none|--no-auth/);
    }
  });

  for (const region of REGIONS) {
    it(`Kubernetes ${region}: brokers, gateways and etcd run TLS from mounted Secrets, brokers with a keys file; probes and the preStop still reach what they need`, async () => {
      const objects = await renderOverlay(join(deployDir, 'k8s/overlays', region));
      const broker = (find(objects, 'StatefulSet', 'edgeq-broker').spec as any).template.spec;
      const bc = broker.containers[0];
      const bargs = flagsOf(bc.args.join(' '));
      expect(bargs.get('--auth')).toBeUndefined();
      // Client certificates required in Kubernetes (compose, a demo on one host, takes API keys alone too).
      expect(bargs.get('--tls-client-auth')).toBe('required');
      for (const f of ['--auth-keys', '--tls-cert', '--tls-key', '--tls-ca']) expect(bargs.get(f), f).toMatch(/^\/etc\/edgeq\//);
      const benv = Object.fromEntries((bc.env as { name: string; value?: string }[]).map((e) => [e.name, e.value]));
      for (const e of ['EDGEQ_ETCD_CA', 'EDGEQ_ETCD_CERT', 'EDGEQ_ETCD_KEY']) expect(benv[e], e).toMatch(/^\/etc\/edgeq\//);
      // Every file a broker is given lies in a read-only Secret volume, mounted whole (no subPath: reloads).
      expectMounted(broker, [...bargs.values()].filter((v) => v.startsWith('/etc/')).concat([benv.EDGEQ_ETCD_CA!, benv.EDGEQ_ETCD_CERT!, benv.EDGEQ_ETCD_KEY!]));
      // The admin port stays plain HTTP (no scheme: HTTP) for the probes and Prometheus.
      for (const p of [bc.readinessProbe, bc.livenessProbe, bc.startupProbe]) {
        expect(p.httpGet.port).toBe('admin');
        expect(p.httpGet.scheme ?? 'HTTP').toBe('HTTP');
      }
      expect(bargs.get('--admin-port')).toBe('9192');
      // The preStop's `edgeq handoff` talks to etcd only: the container's EDGEQ_ARBITER* and EDGEQ_ETCD_* are all it needs.
      expect(bc.lifecycle.preStop.exec.command.join(' ')).toMatch(/edgeq\.js handoff --broker-id/);
      expect(benv.EDGEQ_ARBITER).toBe('etcd');
      expect(bc.envFrom[0].configMapRef.name).toMatch(/^edgeq-region/);

      const gw = (find(objects, 'Deployment', 'edgeq-gateway').spec as any).template.spec;
      const gc = gw.containers[0];
      const gargs = new Map((gc.args as string[]).filter((a) => a.startsWith('--')).map((a) => [a.split('=')[0]!, a.slice(a.indexOf('=') + 1)]));
      for (const f of ['--tls-cert', '--tls-key', '--brokers-tls-ca', '--brokers-tls-cert', '--brokers-tls-key', '--mesh-tls-ca', '--mesh-tls-cert', '--mesh-tls-key', '--keys']) expect(gargs.get(f), f).toMatch(/^\/etc\/edgeq\//);
      expect(gargs.has('--no-auth')).toBe(false);
      expectMounted(gw, [...gargs.values()].filter((v) => v.startsWith('/etc/')));
      for (const p of [gc.readinessProbe, gc.livenessProbe]) expect(p.httpGet.scheme).toBe('HTTPS');
      const envNames = (gc.env as { name: string; valueFrom?: any }[]).filter((e) => e.valueFrom?.secretKeyRef).map((e) => e.name);
      expect(envNames).toEqual(expect.arrayContaining(['EDGEQ_MESH_KEY', 'EDGEQ_API_KEY']));

      const etcd = (find(objects, 'StatefulSet', 'edgeq-etcd').spec as any).template.spec;
      const ec = etcd.containers[0];
      const eargs = (ec.command as string[]).join(' ');
      expect(eargs).not.toMatch(/http:\/\/[^ ]*:(2379|2380)/);
      for (const f of ['--client-cert-auth', '--peer-client-cert-auth', '--cert-file=', '--trusted-ca-file=', '--listen-client-urls=https://']) expect(eargs).toContain(f);
      expectMounted(etcd, (ec.command as string[]).filter((a) => /-file=/.test(a)).map((a) => a.slice(a.indexOf('=') + 1)));
      expect(ec.readinessProbe.httpGet.port).toBe('metrics');
      expect(eargs).toContain('--listen-metrics-urls=http://0.0.0.0:2381');
      const np = find(objects, 'NetworkPolicy', 'edgeq-etcd').spec as any;
      expect(np.podSelector.matchLabels).toEqual({ 'app.kubernetes.io/component': 'etcd' });
      expect(np.ingress[0]).toEqual({ from: [{ podSelector: { matchLabels: { 'app.kubernetes.io/component': 'broker' } } }], ports: [{ port: 2379, protocol: 'TCP' }] });

      // Every Secret the region's pods use is one docs/deploy.md tells the operator to create.
      const docs = await readFile(join(repo, 'docs/deploy.md'), 'utf8');
      for (const name of secretVolumes(objects)) expect(docs, `docs/deploy.md names Secret ${name}`).toContain(name);
    });
  }

  it('compose: a one-shot certs service comes first; etcd, brokers and gateways run TLS with its files, brokers with a keys file', async () => {
    const doc = parseYaml(await readFile(join(deployDir, 'compose/compose.yaml'), 'utf8'), { merge: true }) as { services: Record<string, any>; volumes: Record<string, unknown> };
    const certs = doc.services.certs;
    expect(certs.volumes).toContain('certs:/certs');
    expect(certs.command.join(' ')).toMatch(/gen-certs\.sh \/certs/);
    expect(doc.volumes).toHaveProperty('certs');
    for (const [name, s] of Object.entries(doc.services)) {
      if (name === 'certs' || !(s.volumes ?? []).some((v: string) => v.startsWith('certs:'))) continue;
      expect(s.depends_on?.certs, name).toEqual({ condition: 'service_completed_successfully' });
      expect(s.volumes.filter((v: string) => v.startsWith('certs:')).every((v: string) => v.endsWith(':ro')), name).toBe(true);
    }
    for (const r of REGIONS) {
      for (const n of [1, 2, 3]) {
        const b = doc.services[`${r}-broker-${n}`];
        const flags = flagsOf((b.command as string[]).join(' '));
        expect(flags.get('--auth')).toBeUndefined();
        expect(flags.get('--auth-keys')).toBe('/etc/edgeq/keys.json');
        expect(b.volumes).toContain(`./keys/broker-${r}.json:/etc/edgeq/keys.json:ro`);
        expect(flags.get('--tls-cert')).toBe(`/certs/${r}-broker-${n}.crt`);
        expect(flags.get('--tls-ca')).toBe('/certs/ca.crt');
        expect(flags.get('--tls-client-auth')).toMatch(/^(optional|required)$/);
        expect(b.environment).toMatchObject({ EDGEQ_ETCD_CA: '/certs/ca.crt', EDGEQ_ETCD_CERT: `/certs/${r}-broker-${n}.crt` });
        const e = doc.services[`${r}-etcd-${n}`].command.join(' ');
        expect(e).toContain('--client-cert-auth');
        expect(e).not.toMatch(/http:\/\//);
      }
      const g = flagsOf((doc.services[`${r}-gateway`].command as string[]).join(' '));
      expect(g.get('--tls-cert')).toBe(`/certs/${r}-gateway.crt`);
      expect(g.get('--brokers-tls-ca')).toBe('/certs/ca.crt');
      expect(g.get('--brokers-tls-cert')).toBe(`/certs/${r}-gateway.crt`);
      expect(g.get('--mesh-tls-ca')).toBe('/certs/mesh-ca.crt');
    }
    // Prometheus scrapes the gateways over HTTPS against the compose CA.
    const prom = parseYaml(await readFile(join(deployDir, 'prometheus/prometheus.compose.yml'), 'utf8')) as any;
    const gwJob = prom.scrape_configs.find((j: any) => j.job_name === 'edgeq-gateway');
    expect(gwJob.scheme).toBe('https');
    expect(gwJob.tls_config.ca_file).toBe('/etc/prometheus/certs/ca.crt');
    expect(doc.services.prometheus.volumes).toContain('certs:/etc/prometheus/certs:ro');
  });
});

describe('Prometheus alert rules', () => {
  const rulesFile = join(deployDir, 'prometheus/rules/edgeq.rules.yml');
  const wanted = ['EdgeqUnderReplicatedPartitions', 'EdgeqPartitionWithoutLeader', 'EdgeqMeshMemberSuspect', 'EdgeqMeshMemberDead', 'EdgeqGeoLagHigh', 'EdgeqGeoGap', 'EdgeqSustainedThrottling', 'EdgeqForecastFallback', 'EdgeqFsyncSlow'];

  it('name every alert the issue asks for, each with an expression, a severity, a summary and a description', async () => {
    const doc = parseYaml(await readFile(rulesFile, 'utf8')) as { groups: { name: string; rules: Record<string, any>[] }[] };
    const rules = doc.groups.flatMap((g) => g.rules);
    expect(rules.map((r) => r.alert)).toEqual(expect.arrayContaining(wanted));
    for (const r of rules) {
      expect(typeof r.expr, r.alert).toBe('string');
      expect(['critical', 'warning', 'info']).toContain(r.labels?.severity);
      expect(r.annotations?.summary, r.alert).toBeTruthy();
      expect(r.annotations?.description, r.alert).toBeTruthy();
      if (r.for !== undefined) expect(r.for).toMatch(/^\d+[smh]$/);
    }
  });

  it('pass `promtool check rules` and their unit tests (`promtool test rules`), and the configs `promtool check config` (when promtool is installed)', async (ctx) => {
    if (!(await hasCommand('promtool', ['--version']))) {
      console.log('skipped: promtool is not installed (scripts/test.sh installs Debian\'s prometheus for it)');
      ctx.skip();
    }
    const { stdout } = await run('promtool', ['check', 'rules', rulesFile], { timeout: 30_000 });
    expect(stdout).toMatch(/SUCCESS: \d+ rules found/);
    // The rules' unit tests: synthetic series in the exposed shape, the alerts that must (not) fire.
    const tested = await run('promtool', ['test', 'rules', join(deployDir, 'prometheus/tests/edgeq.rules.test.yml')], { timeout: 30_000 });
    expect(tested.stdout + tested.stderr).toMatch(/SUCCESS/);
    const checked = await run('promtool', ['check', 'config', '--syntax-only', join(deployDir, 'prometheus/prometheus.compose.yml')], { timeout: 30_000 });
    expect(checked.stdout).toMatch(/SUCCESS/);
    // Debian builds Prometheus without Kubernetes service discovery: its promtool refuses
    // kubernetes_sd_configs itself, and then that must be the only complaint.
    const k8s = await run('promtool', ['check', 'config', '--syntax-only', join(deployDir, 'prometheus/prometheus.k8s.yml')], { timeout: 30_000 }).then(
      (r) => r.stdout + r.stderr,
      (err: { stdout: string; stderr: string }) => err.stdout + err.stderr,
    );
    if (/field kubernetes_sd_configs not found/.test(k8s)) {
      console.log('promtool here is built without Kubernetes service discovery: prometheus.k8s.yml checked for that field alone');
      expect(k8s.match(/line \d+: field \S+ not found/g)).toEqual([expect.stringMatching(/kubernetes_sd_configs/)]);
    } else {
      expect(k8s).toMatch(/SUCCESS/);
    }
  });

  it('the Prometheus configs name the rules folder and the two jobs the rules use', async () => {
    for (const f of ['prometheus.compose.yml', 'prometheus.k8s.yml']) {
      const cfg = parseYaml(await readFile(join(deployDir, 'prometheus', f), 'utf8')) as any;
      expect(cfg.rule_files).toEqual(['/etc/prometheus/rules/*.yml']);
      expect(cfg.scrape_configs.length).toBeGreaterThan(0);
    }
    const compose = parseYaml(await readFile(join(deployDir, 'prometheus/prometheus.compose.yml'), 'utf8')) as any;
    expect(compose.scrape_configs.map((s: any) => s.job_name).sort()).toEqual(['edgeq-broker', 'edgeq-gateway']);
    const targets = compose.scrape_configs.flatMap((s: any) => s.static_configs.flatMap((c: any) => c.targets));
    expect(targets).toHaveLength(REGIONS.length * 4);
  });
});

describe('compose file', () => {
  const file = join(deployDir, 'compose/compose.yaml');

  it('has 3 regions of a 3-node etcd, 3 brokers and a gateway, with the mesh between the gateways', async () => {
    const doc = parseYaml(await readFile(file, 'utf8'), { merge: true }) as { services: Record<string, any> };
    for (const r of REGIONS) {
      for (const n of [1, 2, 3]) {
        expect(doc.services[`${r}-etcd-${n}`]?.image).toMatch(/etcd/);
        const cmd = doc.services[`${r}-broker-${n}`].command as string[];
        expect(cmd.slice(0, 3)).toEqual(['broker', '--id', String(n)]);
        expect(cmd[cmd.indexOf('--arbiter') + 1]).toBe('etcd');
        expect(cmd[cmd.indexOf('--cell-id') + 1]).toBe(r);
      }
      const gw = doc.services[`${r}-gateway`].command as string[];
      const seeds = gw[gw.indexOf('--mesh-seeds') + 1]!.split(',');
      expect(seeds).toHaveLength(REGIONS.length - 1);
    }
    expect(Object.keys(doc.services)).toEqual(expect.arrayContaining(['prometheus', 'grafana']));
  });

  it('validates against the Compose Specification schema, and every dependency and named volume it refers to exists', async (ctx) => {
    const doc = parseYaml(await readFile(file, 'utf8'), { merge: true }) as { services: Record<string, any>; volumes: Record<string, unknown> };
    for (const [name, svc] of Object.entries(doc.services)) {
      for (const dep of Array.isArray(svc.depends_on) ? svc.depends_on : Object.keys(svc.depends_on ?? {})) expect(doc.services, `${name} depends on ${dep}`).toHaveProperty(dep);
      for (const v of (svc.volumes ?? []) as string[]) {
        const src = v.split(':')[0]!;
        if (!src.startsWith('.') && !src.startsWith('/')) expect(doc.volumes, `${name} mounts volume ${src}`).toHaveProperty(src);
      }
    }
    // The spec's JSON schema as the docker-compose package (a dependency of testcontainers) ships it:
    // no network, and a check where the compose plugin is missing (as here).
    const schemaFile = join(repo, 'node_modules/docker-compose/schema/compose-spec.json');
    const schema = await readFile(schemaFile, 'utf8').then(JSON.parse, () => null);
    if (!schema) {
      console.log(`skipped the schema check: ${relative(repo, schemaFile)} is not installed`);
      ctx.skip();
    }
    const { Ajv } = await import('ajv');
    // draft-07 meta-schema not loaded (validateSchema off); formats are Compose's own, not checked.
    const validate = new Ajv({ strict: false, allErrors: true, validateFormats: false, validateSchema: false }).compile(schema);
    expect(validate(doc), JSON.stringify(validate.errors?.slice(0, 5))).toBe(true);
    // And it refuses what Compose refuses (so a pass means something).
    const bad = structuredClone(doc);
    bad.services.certs.depends_on = { prometheus: { condition: 'service_done' } };
    expect(validate(bad)).toBe(false);
  });

  it('passes `docker compose config` (where the compose plugin exists)', async (ctx) => {
    if (!(await hasCommand('docker', ['compose', 'version']))) {
      console.log('skipped: no `docker compose` plugin on this machine');
      ctx.skip();
    }
    const { stdout } = await run('docker', ['compose', '-f', file, 'config', '--quiet'], { env: { ...process.env, EDGEQ_MESH_KEY: Buffer.alloc(32, 7).toString('base64') }, timeout: 60_000 });
    expect(stdout).toBe('');
  });
});

describe('the image', () => {
  it('is multi-stage on node:20-slim, non-root, under tini, with production dependencies, the health check and the services\' V8 flags', async () => {
    const df = await readFile(join(deployDir, 'docker/Dockerfile'), 'utf8');
    expect(df).toMatch(/^ARG NODE_IMAGE=node:20-slim$/m);
    expect(df.match(/^FROM \$\{NODE_IMAGE\} AS \w+$/gm)).toHaveLength(2);
    expect(df).toMatch(/^RUN npm ci --omit=dev /m);
    expect(df).toMatch(/^USER node$/m);
    expect(df).toMatch(/^HEALTHCHECK .*CMD \["node", "\/app\/deploy\/docker\/healthcheck\.mjs"\]$/m);
    const entry = JSON.parse(df.match(/^ENTRYPOINT (\[.*\])$/m)![1]!) as string[];
    expect(entry.slice(0, 3)).toEqual(['/usr/bin/tini', '--', 'node']);
    // The flags `edgeq dev` gives every service (src/cli/supervisor.ts), so the image runs them as tested.
    const { serviceNodeFlags } = await import('../../src/cli/supervisor.ts');
    expect(entry.slice(3, 3 + serviceNodeFlags.length)).toEqual([...serviceNodeFlags]);
    expect(entry.at(-1)).toBe('/app/bin/edgeq.js');
    const ignore = (await readFile(join(repo, '.dockerignore'), 'utf8')).split('\n');
    expect(ignore).toEqual(expect.arrayContaining(['.git', 'node_modules', 'data', 'dist']));
  });
});

describe('the Grafana dashboard', () => {
  it('has the operators\' panels, each on the provisioned Prometheus data source', async () => {
    const dash = JSON.parse(await readFile(join(deployDir, 'grafana/dashboards/edgeq.json'), 'utf8')) as { uid: string; panels: { type: string; title: string; datasource?: { uid: string }; targets?: { expr: string }[] }[] };
    const ds = parseYaml(await readFile(join(deployDir, 'grafana/provisioning/datasources/prometheus.yml'), 'utf8')) as { datasources: { uid: string }[] };
    const uid = ds.datasources[0]!.uid;
    const titles = dash.panels.map((p) => p.title);
    for (const t of ['Ingress vs forecast and limiter ceiling', 'Desired instances (planner)', 'Limiter admitted per tenant', 'Limiter refused per tenant', 'Brokers online', 'Bytes in / out per broker', 'Records in per topic', 'p99 produce latency', 'Mesh members by state', 'Geo lag (seconds)']) {
      expect(titles).toContain(t);
    }
    for (const p of dash.panels.filter((x) => x.type !== 'row')) {
      expect(p.datasource?.uid, p.title).toBe(uid);
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
    }
    const provider = parseYaml(await readFile(join(deployDir, 'grafana/provisioning/dashboards/edgeq.yml'), 'utf8')) as { providers: { options: { path: string } }[] };
    expect(provider.providers[0]!.options.path).toBe('/var/lib/grafana/dashboards');
  });
});

describe('edgeq flags used by deploy/', () => {
  it('exist in the CLI (`edgeq broker --help`, `edgeq gateway --help`, `edgeq handoff --help`)', async () => {
    const compose = parseYaml(await readFile(join(deployDir, 'compose/compose.yaml'), 'utf8'), { merge: true }) as { services: Record<string, any> };
    const used: Record<string, Set<string>> = { broker: new Set(), gateway: new Set(), handoff: new Set() };
    const collect = (words: string[]) => {
      const role = words.find((w) => w === 'broker' || w === 'gateway' || w === 'handoff');
      if (!role) return;
      for (const w of words) for (const m of w.matchAll(/(?:^|\s)(--[a-z][a-z-]*)/g)) used[role]!.add(m[1]!);
    };
    for (const s of Object.values(compose.services)) if (Array.isArray(s.command)) collect(s.command);
    for (const region of REGIONS) {
      for (const o of await renderOverlay(join(deployDir, 'k8s/overlays', region))) {
        for (const c of (o.spec as any)?.template?.spec?.containers ?? []) {
          collect([...(c.command ?? []), ...(c.args ?? [])].flatMap((a: string) => a.split(/\s+/)));
          collect((c.lifecycle?.preStop?.exec?.command ?? []).flatMap((a: string) => a.split(/\s+/)));
        }
      }
    }
    const nodeFlags = new Set(['--no-memory-reducer', '--no-incremental-marking']);
    // The broker's preStop runs `edgeq handoff`.
    expect(used.handoff!.has('--broker-id')).toBe(true);
    for (const role of ['broker', 'gateway', 'handoff'] as const) {
      expect(used[role]!.size).toBeGreaterThan(role === 'handoff' ? 1 : 5);
      // --brokers is the program's global option (the cluster commands share it).
      const stdout = (await run(process.execPath, [BIN, role, '--help'], { timeout: 60_000 })).stdout + (await run(process.execPath, [BIN, '--help'], { timeout: 60_000 })).stdout;
      const missing = [...used[role]!].filter((f) => !nodeFlags.has(f) && !stdout.includes(`${f} `) && !stdout.includes(`${f},`));
      expect(missing, `flags of edgeq ${role} that deploy/ uses but the CLI lacks`).toEqual([]);
    }
  });
});

/** `--flag value` pairs of a command line (flags without a value map to ''). */
function flagsOf(line: string): Map<string, string> {
  const words = line.split(/\s+/).filter(Boolean);
  const out = new Map<string, string>();
  words.forEach((w, i) => {
    if (!w.startsWith('--')) return;
    if (w.includes('=')) out.set(w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1));
    else out.set(w, words[i + 1] && !words[i + 1]!.startsWith('--') ? words[i + 1]!.replace(/^"|"$/g, '') : '');
  });
  return out;
}

/** Secrets mounted as volumes by the pods of `objects`. */
function secretVolumes(objects: K8sObject[]): string[] {
  return [...new Set(objects.flatMap((o) => ((o.spec as any)?.template?.spec?.volumes ?? []).filter((v: any) => v.secret).map((v: any) => v.secret.secretName as string)))];
}

/** Each path lies under a mount of a Secret volume of `pod`, read-only and without subPath. */
function expectMounted(pod: any, paths: string[]): void {
  expect(paths.length).toBeGreaterThan(0);
  const secretVols = new Set((pod.volumes as any[]).filter((v) => v.secret).map((v) => v.name));
  const mounts = (pod.containers[0].volumeMounts as any[]).filter((m) => secretVols.has(m.name));
  for (const p of paths) {
    const m = mounts.find((x) => p.startsWith(`${x.mountPath}/`));
    expect(m, `${p} is in a mounted Secret`).toBeTruthy();
    expect(m.readOnly).toBe(true);
    expect(m.subPath).toBeUndefined();
  }
}

async function hasRenderer(): Promise<boolean> {
  return (await hasCommand('kubectl', ['version', '--client'])) || (await hasCommand('kustomize', ['version']));
}

function sortObjects(objects: K8sObject[]): K8sObject[] {
  const key = (o: K8sObject) => `${o.kind}/${o.metadata?.name}`;
  return [...objects].sort((a, b) => key(a).localeCompare(key(b)));
}

function find(objects: K8sObject[], kind: string, name: string): K8sObject {
  const o = objects.find((x) => x.kind === kind && x.metadata?.name === name);
  if (!o) throw new Error(`no ${kind}/${name} in the rendered overlay`);
  return o;
}
