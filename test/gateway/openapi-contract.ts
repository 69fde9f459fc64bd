/**
 * docs/openapi.yaml as a checker of real HTTP exchanges, for the conformance test: each exchange
 * must hit a documented operation and answer a status, media type, headers and body that the
 * operation documents (bodies validated by ajv, JSON Schema 2020-12, plus a walk that flags fields
 * the schema does not name, so a new field cannot slip in undocumented); a request the document
 * refuses must be refused (400, or the checks that come before the body: 401, 403, 413, 415); and
 * the checker remembers which (operation, status) pairs were seen, so the test can require that
 * every documented one was exercised.
 */
import { readFile } from 'node:fs/promises';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formatsModule from 'ajv-formats';
import { parse } from 'yaml';

// ajv-formats is CommonJS: under NodeNext its default import is the module, whose `default` is the plugin.
const addFormats = formatsModule.default;

/** A JSON Schema or OpenAPI object, as parsed from the YAML. */
type Node = Record<string, unknown>;

/** One request and its answer, as the conformance test saw them on the wire. */
export interface Exchange {
  method: string;
  /** Path and query, as sent. */
  url: string;
  requestHeaders: Record<string, string>;
  /** The JSON request body when it was JSON (undefined: none, or not JSON). */
  requestJson?: unknown;
  status: number;
  responseHeaders: Headers;
  /** The body as text; null for bodies the test does not read to the end (streams). */
  responseText: string | null;
}

/** A documented operation. */
export interface Operation {
  id: string;
  method: string;
  template: string;
  /** JSON pointer of the operation object in the document. */
  pointer: string;
  node: Node;
  parameters: Node[];
}

/** Statuses a request outside the documented schema may get: 400, or a check made before the body is read. */
const REFUSALS = new Set([400, 401, 403, 413, 415]);
/** OpenAPI fields at the top of the document: annotations for ajv, which compiles only the schemas inside. */
const OPENAPI_KEYWORDS = ['openapi', 'info', 'servers', 'paths', 'components', 'security', 'tags', 'webhooks', 'externalDocs', 'jsonSchemaDialect'];
const DOC_ID = 'openapi.yaml';
/** The fields an OpenAPI 3.1 response object may have. */
const RESPONSE_FIELDS = new Set(['description', 'headers', 'content', 'links', '$ref', 'summary']);
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

const pointerToken = (s: string): string => encodeURIComponent(s.replaceAll('~', '~0').replaceAll('/', '~1'));

function baseType(contentType: string | null): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

const isJsonMedia = (type: string): boolean => type === 'application/json' || type.endsWith('+json');

/** The document, compiled. */
export class OpenApiContract {
  readonly operations: Operation[] = [];
  /** "operationId status" pairs answered so far. */
  readonly seen = new Set<string>();
  private readonly ajv: Ajv2020;
  private readonly validators = new Map<string, ValidateFunction>();

  private constructor(readonly doc: Node) {
    // Strict, so a typo in the document is an error; union types (`type: [string, 'null']`) are OpenAPI 3.1's nullable.
    this.ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
    addFormats(this.ajv);
    // OpenAPI's format for raw bytes: nothing to check in a JSON value.
    this.ajv.addFormat('binary', true);
    for (const k of OPENAPI_KEYWORDS) this.ajv.addKeyword(k);
    this.ajv.addSchema(doc, DOC_ID);
    const paths = (doc['paths'] ?? {}) as Record<string, Node>;
    for (const [template, item] of Object.entries(paths)) {
      for (const method of METHODS) {
        const op = item[method] as Node | undefined;
        if (!op) continue;
        const parameters = [...((item['parameters'] ?? []) as Node[]), ...((op['parameters'] ?? []) as Node[])].map((p) => this.deref(p));
        this.operations.push({ id: String(op['operationId'] ?? ''), method: method.toUpperCase(), template, pointer: `/paths/${pointerToken(template)}/${method}`, node: op, parameters });
      }
    }
  }

  /** Reads and compiles `file`. */
  static async load(file: string): Promise<OpenApiContract> {
    return new OpenApiContract(parse(await readFile(file, 'utf8')) as Node);
  }

  /** Problems of the document itself that make generated clients weak or checks impossible. */
  lint(): string[] {
    const out: string[] = [];
    const ids = new Set<string>();
    for (const op of this.operations) {
      const name = `${op.method} ${op.template}`;
      if (!op.id) out.push(`${name} has no operationId`);
      else if (ids.has(op.id)) out.push(`${name}: operationId ${op.id} is used twice`);
      ids.add(op.id);
      const responses = (op.node['responses'] ?? {}) as Record<string, Node>;
      if (!responses['default']) out.push(`${name} has no default response`);
      const secured = op.node['security'] === undefined ? (this.doc['security'] as unknown[]).length > 0 : (op.node['security'] as unknown[]).length > 0;
      if (secured && !responses['401']) out.push(`${name} needs a key but documents no 401`);
      for (const [status, raw] of Object.entries(responses)) {
        const res = this.deref(raw);
        // A YAML flow mapping splits an unquoted description at its commas into stray keys.
        const stray = Object.keys(res).filter((k) => !RESPONSE_FIELDS.has(k));
        if (stray.length > 0) out.push(`${name} ${status}: unknown response fields ${JSON.stringify(stray)} (an unquoted comma in a description?)`);
        const wwwAuthenticate = (res['headers'] as Record<string, Node> | undefined)?.['WWW-Authenticate'];
        if (status === '401' && !(wwwAuthenticate && this.deref(wwwAuthenticate)['required'])) {
          out.push(`${name} 401 does not require WWW-Authenticate (RFC 9110 §15.5.2)`);
        }
        for (const [media, m] of Object.entries((res['content'] ?? {}) as Record<string, Node>)) {
          if (isJsonMedia(media) && m['schema']) this.lintObjects(m['schema'] as Node, `${name} ${status} ${media}`, out, new Set());
        }
      }
    }
    return out;
  }

  /** Every object schema with properties in an answer must say which are always there. */
  private lintObjects(schema: Node, where: string, out: string[], visiting: Set<Node>): void {
    const s = this.deref(schema);
    if (visiting.has(s)) return;
    visiting.add(s);
    if (s['properties'] && !(Array.isArray(s['required']) && s['required'].length > 0)) out.push(`${where}: an object schema (${Object.keys(s['properties'] as Node).join(', ')}) lists no required fields`);
    for (const p of Object.values((s['properties'] ?? {}) as Record<string, Node>)) this.lintObjects(p, where, out, visiting);
    if (s['items']) this.lintObjects(s['items'] as Node, where, out, visiting);
    for (const sub of (s['allOf'] ?? []) as Node[]) this.lintObjects(sub, where, out, visiting);
  }

  /** The operation an exchange hit, or null. */
  operationOf(method: string, path: string): Operation | null {
    for (const op of this.operations) {
      if (op.method !== method) continue;
      const re = new RegExp(`^${op.template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]+\\?\}/g, '([^/]+)')}$`);
      if (re.test(path)) return op;
    }
    return null;
  }

  /** Checks one exchange; returns what does not conform (empty when it does) and records it as seen. */
  check(ex: Exchange): string[] {
    const url = new URL(ex.url, 'http://gateway');
    const name = `${ex.method} ${url.pathname}${url.search} → ${ex.status}`;
    const op = this.operationOf(ex.method, url.pathname);
    if (!op) return [`${name}: no documented operation`];
    const problems: string[] = [];
    const responses = (op.node['responses'] ?? {}) as Record<string, Node>;
    // `default` describes only the 5xx answers any route may give; a 4xx must be listed by status.
    const key = responses[String(ex.status)] ? String(ex.status) : ex.status >= 500 && responses['default'] ? 'default' : null;
    if (key === null) problems.push(`${name}: status ${ex.status} is not documented for ${op.id || `${op.method} ${op.template}`}`);
    else {
      this.seen.add(`${op.id} ${key === 'default' ? 'default' : ex.status}`);
      problems.push(...this.checkResponse(op, key, ex, name));
    }
    problems.push(...this.checkRequest(op, ex, url, name));
    return problems;
  }

  private checkResponse(op: Operation, key: string, ex: Exchange, name: string): string[] {
    const problems: string[] = [];
    const res = this.deref(((op.node['responses'] as Node)[key]) as Node);
    const resPointer = `${op.pointer}/responses/${pointerToken(key)}`;
    for (const [header, raw] of Object.entries((res['headers'] ?? {}) as Record<string, Node>)) {
      const h = this.deref(raw);
      if (h['required'] && !ex.responseHeaders.has(header)) problems.push(`${name}: documented header ${header} is missing`);
    }
    const content = res['content'] as Record<string, Node> | undefined;
    const type = baseType(ex.responseHeaders.get('content-type'));
    if (!content) {
      if (ex.responseText !== null && ex.responseText !== '') problems.push(`${name}: documented without a body, answered ${JSON.stringify(ex.responseText.slice(0, 200))}`);
      return problems;
    }
    const media = content[type];
    if (!media) return [...problems, `${name}: content type "${type}" is not documented (${Object.keys(content).join(', ')})`];
    if (!isJsonMedia(type) || ex.responseText === null) return problems;
    let body: unknown;
    try {
      body = JSON.parse(ex.responseText);
    } catch {
      return [...problems, `${name}: ${type} body is not JSON: ${ex.responseText.slice(0, 200)}`];
    }
    const schemaRef = this.schemaPointer(res, `${resPointer}/content/${pointerToken(type)}/schema`, ['content', type, 'schema']);
    problems.push(...this.validate(schemaRef, body, `${name}: body`));
    problems.push(...this.undocumentedFields(media['schema'] as Node, body, `${name}: body`));
    if (type === 'application/problem+json' && typeof body === 'object' && body !== null && (body as Node)['status'] !== ex.status) {
      problems.push(`${name}: problem status ${String((body as Node)['status'])} is not the HTTP status`);
    }
    return problems;
  }

  /** A request the document refuses must not succeed, and is answered 400 unless an earlier check refused it. */
  private checkRequest(op: Operation, ex: Exchange, url: URL, name: string): string[] {
    const violations: string[] = [];
    const pathValues = this.pathValues(op.template, url.pathname);
    op.parameters.forEach((p, i) => {
      const where = String(p['in']);
      const pname = String(p['name']);
      const raw = where === 'query' ? url.searchParams.get(pname) : where === 'path' ? pathValues.get(pname) : where === 'header' ? this.header(ex.requestHeaders, pname) : null;
      if (raw === null || raw === undefined) return;
      const schema = (p['schema'] ?? {}) as Node;
      const typed = schema['type'] === 'integer' && /^-?\d+$/.test(raw) ? Number(raw) : raw;
      const pointer = this.parameterPointer(op, p, i);
      violations.push(...this.validate(`${pointer}/schema`, typed, `parameter ${pname}`));
    });
    const body = op.node['requestBody'] ? this.deref(op.node['requestBody'] as Node) : null;
    const type = baseType(this.header(ex.requestHeaders, 'content-type') ?? null);
    if (body && ex.requestJson !== undefined && type === 'application/json') {
      const rbPointer = (op.node['requestBody'] as Node)['$ref'] ? this.refPointer(String((op.node['requestBody'] as Node)['$ref'])) : `${op.pointer}/requestBody`;
      if ((body['content'] as Node | undefined)?.[type]) violations.push(...this.validate(`${rbPointer}/content/${pointerToken(type)}/schema`, ex.requestJson, 'request body'));
    }
    if (violations.length === 0) return [];
    if (ex.status >= 200 && ex.status < 300) return [`${name}: the gateway accepted a request the document refuses (${violations.join('; ')})`];
    if (!REFUSALS.has(ex.status)) return [`${name}: a request outside the documented schema (${violations.join('; ')}) must be refused with 400, not ${ex.status}`];
    return [];
  }

  /** (operation, status) pairs documented but never answered, except `default` and `allowed` ("operationId status"). */
  unexercised(allowed: ReadonlySet<string>): string[] {
    const out: string[] = [];
    for (const op of this.operations) {
      for (const status of Object.keys((op.node['responses'] ?? {}) as Node)) {
        const k = `${op.id} ${status}`;
        if (status !== 'default' && !this.seen.has(k) && !allowed.has(k)) out.push(k);
      }
    }
    return out;
  }

  /** True when "operationId status" is documented. */
  documents(key: string): boolean {
    const [id, status] = key.split(' ');
    const op = this.operations.find((o) => o.id === id);
    return op !== undefined && status !== undefined && ((op.node['responses'] ?? {}) as Node)[status] !== undefined;
  }

  // -------------------------------------------------------------------------------------------

  private validate(pointer: string, value: unknown, what: string): string[] {
    let v = this.validators.get(pointer);
    if (!v) {
      v = this.ajv.compile({ $ref: `${DOC_ID}#${pointer}` });
      this.validators.set(pointer, v);
    }
    if (v(value)) return [];
    return (v.errors ?? []).map((e) => `${what}${e.instancePath} ${e.message ?? 'is invalid'}${e.params && 'allowedValues' in e.params ? ` (${JSON.stringify(e.params['allowedValues'])})` : ''}`);
  }

  /** Names in `data` that `schema` does not list (where it says nothing about extra properties). */
  private undocumentedFields(schema: Node | undefined, data: unknown, where: string): string[] {
    if (!schema || data === null || typeof data !== 'object') return [];
    const s = this.deref(schema);
    if (Array.isArray(data)) return s['items'] ? data.flatMap((d, i) => this.undocumentedFields(s['items'] as Node, d, `${where}[${i}]`)) : [];
    const parts = [s, ...((s['allOf'] ?? []) as Node[]).map((x) => this.deref(x))];
    const props = new Map<string, Node>();
    for (const p of parts) for (const [k, v] of Object.entries((p['properties'] ?? {}) as Record<string, Node>)) props.set(k, v);
    const extra = parts.find((p) => p['additionalProperties'] !== undefined)?.['additionalProperties'];
    const out: string[] = [];
    for (const [k, v] of Object.entries(data as Node)) {
      const sub = props.get(k) ?? (typeof extra === 'object' ? (extra as Node) : undefined);
      if (!props.has(k) && extra === undefined && props.size > 0) out.push(`${where}.${k} is not in the document`);
      else if (sub) out.push(...this.undocumentedFields(sub, v, `${where}.${k}`));
    }
    return out;
  }

  /** Follows a local `$ref` (OpenAPI components or schemas). */
  private deref(node: Node): Node {
    let n = node;
    for (let hops = 0; typeof n['$ref'] === 'string' && hops < 16; hops++) n = this.at(this.refPointer(n['$ref'] as string));
    return n;
  }

  private refPointer(ref: string): string {
    if (!ref.startsWith('#')) throw new Error(`only local $refs are supported, got ${ref}`);
    return ref.slice(1);
  }

  private at(pointer: string): Node {
    let n: unknown = this.doc;
    for (const raw of pointer.split('/').slice(1)) n = (n as Node)[decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~')];
    if (n === undefined) throw new Error(`${pointer} is not in the document`);
    return n as Node;
  }

  /** The pointer of a schema inside a response that may itself be a `$ref`. */
  private schemaPointer(res: Node, direct: string, path: string[]): string {
    const owner = Object.entries((this.doc['components'] as Node)['responses'] as Record<string, Node>).find(([, r]) => r === res);
    return owner ? `/components/responses/${pointerToken(owner[0])}/${path.map(pointerToken).join('/')}` : direct;
  }

  private parameterPointer(op: Operation, p: Node, index: number): string {
    const named = Object.entries(((this.doc['components'] as Node)['parameters'] ?? {}) as Record<string, Node>).find(([, x]) => x === p);
    if (named) return `/components/parameters/${pointerToken(named[0])}`;
    const pathLevel = ((this.at(`/paths/${pointerToken(op.template)}`)['parameters'] ?? []) as Node[]).length;
    return index < pathLevel ? `/paths/${pointerToken(op.template)}/parameters/${index}` : `${op.pointer}/parameters/${index - pathLevel}`;
  }

  private pathValues(template: string, path: string): Map<string, string> {
    const names = [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
    const re = new RegExp(`^${template.replace(/\{[^}]+\}/g, '([^/]+)')}$`);
    const m = re.exec(path);
    return new Map(names.map((n, i) => [n, decodeURIComponent(m?.[i + 1] ?? '')]));
  }

  private header(headers: Record<string, string>, name: string): string | undefined {
    const k = Object.keys(headers).find((h) => h.toLowerCase() === name.toLowerCase());
    return k === undefined ? undefined : headers[k];
  }
}
