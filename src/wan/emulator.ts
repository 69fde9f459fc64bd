/**
 * The LinkEmulator: every directed link between the regions of a dev deployment and every route
 * on them. The dev supervisor creates one, adds a route for each address a region must reach in
 * another region, hands each region's processes the map from real addresses to their own routes,
 * and changes links live (the control API) to inject latency, loss, bandwidth limits and cuts.
 */
import { EdgeqError, silentLogger, systemClock, type Clock, type Logger } from '../core/index.ts';
import { Link, type LinkCounters } from './link.ts';
import { resolveWanLimits, type WanLimits } from './limits.ts';
import { checkLinkPatch, checkRegion, LINK_SETTINGS_DEFAULT, type LinkSettings } from './settings.ts';
import { checkListenPort, parseHostPort } from './target.ts';
import { TcpRoute } from './tcp-route.ts';
import { UdpRoute } from './udp-route.ts';

/** What the emulator is built from. */
export interface LinkEmulatorOptions {
  /** Settings of every new link (e.g. `{ latencyMs: flags.wanLatencyMs }`); validated like a change. */
  defaults?: Partial<LinkSettings>;
  /** Seed of every link's loss and jitter draws (each link derives its own from it and its name). */
  seed?: number;
  limits?: Partial<WanLimits>;
  clock?: Clock;
  logger?: Logger;
}

/** How to add a route. */
export interface RouteSpec {
  kind: 'udp' | 'tcp';
  /** `host:port` in the `to` region. */
  target: string;
  /** Port to listen on, on 127.0.0.1; absent or 0: an ephemeral one. */
  listenPort?: number;
}

/** A route as listed. */
export interface RouteInfo {
  kind: 'udp' | 'tcp';
  /** The listening address, in the `from` region's address space. */
  host: '127.0.0.1';
  port: number;
  target: string;
  /** Open TCP connections (0 for UDP). */
  connections: number;
}

/** A link as listed: its settings, its counters and its routes. */
export type LinkInfo = { from: string; to: string } & LinkSettings & LinkCounters & { routes: RouteInfo[] };

/** A change to a link: any subset of its settings; `reset: true` also resets the TCP connections crossing it. */
export type LinkChange = Partial<LinkSettings> & { reset?: boolean };

type Route = UdpRoute | TcpRoute;

interface LinkEntry {
  link: Link;
  routes: Route[];
}

const key = (from: string, to: string): string => `${from}>${to}`;

/** Owns every directed link and route. */
export class LinkEmulator {
  private readonly entries = new Map<string, LinkEntry>();
  private readonly defaults: LinkSettings;
  private readonly limits: WanLimits;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly seed: number;
  private closed = false;

  constructor(options: LinkEmulatorOptions = {}) {
    this.limits = resolveWanLimits(options.limits);
    let settings: Partial<LinkSettings>;
    try {
      ({ settings } = checkLinkPatch(options.defaults ?? {}, this.limits.latencyMsMax));
    } catch (err) {
      // Defaults come from start-up flags (--wan-latency-ms): a bad one is a configuration error.
      const e = err as EdgeqError;
      throw new EdgeqError('INVALID_CONFIG', `default link settings: ${e.message}`, { cause: err, details: { key: e.details['field'] } });
    }
    this.defaults = { ...LINK_SETTINGS_DEFAULT, ...settings };
    this.seed = options.seed ?? 1;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
  }

  private checkOpen(): void {
    if (this.closed) throw new EdgeqError('CONNECTION_CLOSED', 'the link emulator is closed');
  }

  private entry(from: string, to: string, create: boolean): LinkEntry | undefined {
    checkRegion(from, 'from');
    checkRegion(to, 'to');
    if (from === to) throw new EdgeqError('INVALID_ARGUMENT', `a link joins two regions, got ${from} to itself`, { details: { field: 'to' } });
    let e = this.entries.get(key(from, to));
    if (e === undefined && create) {
      this.checkOpen();
      if (this.entries.size >= this.limits.linksMax) throw new EdgeqError('QUEUE_FULL', `the emulator already has linksMax (${this.limits.linksMax}) links`, { details: { linksMax: this.limits.linksMax } });
      const link = new Link(from, to, this.defaults, { clock: this.clock, seed: this.seed, bandwidthBurstMs: this.limits.bandwidthBurstMs });
      e = { link, routes: [] };
      this.entries.set(key(from, to), e);
    }
    return e;
  }

  private existing(from: string, to: string): LinkEntry {
    const e = this.entry(from, to, false);
    if (e === undefined) throw new EdgeqError('NOT_FOUND', `no link from ${from} to ${to}`, { details: { from, to } });
    return e;
  }

  private info(e: LinkEntry): LinkInfo {
    const { link, routes } = e;
    return {
      from: link.from,
      to: link.to,
      ...link.settings,
      ...link.counters,
      routes: routes.map((r) => ({
        kind: r.kind,
        host: '127.0.0.1' as const,
        port: r.port,
        target: `${r.target.host}:${r.target.port}`,
        connections: r.kind === 'tcp' ? r.connectionCount : 0,
      })),
    };
  }

  /** The link `from → to`, created with the default settings if it does not exist yet. */
  link(from: string, to: string): LinkInfo {
    return this.info(this.entry(from, to, true)!);
  }

  /** The link `from → to`, or undefined. */
  get(from: string, to: string): LinkInfo | undefined {
    const e = this.entry(from, to, false);
    return e === undefined ? undefined : this.info(e);
  }

  /**
   * Listens on 127.0.0.1 in region `from` and forwards to `target` in region `to`, across the
   * link `from → to` (and, for TCP, back across `to → from`); creates the links it needs.
   * A taken `listenPort` is INVALID_CONFIG naming it.
   */
  async addRoute(from: string, to: string, spec: RouteSpec): Promise<{ host: '127.0.0.1'; port: number }> {
    this.checkOpen();
    if (spec.kind !== 'udp' && spec.kind !== 'tcp') throw new EdgeqError('INVALID_ARGUMENT', `kind must be "udp" or "tcp", got ${String(spec.kind)}`, { details: { field: 'kind' } });
    const target = parseHostPort(spec.target, 'target');
    const listenPort = checkListenPort(spec.listenPort ?? 0);
    const e = this.entry(from, to, true)!;
    if (e.routes.length >= this.limits.routesPerLinkMax) {
      throw new EdgeqError('QUEUE_FULL', `link ${from} to ${to} already has routesPerLinkMax (${this.limits.routesPerLinkMax}) routes`, { details: { from, to, routesPerLinkMax: this.limits.routesPerLinkMax } });
    }
    const reverse = spec.kind === 'tcp' ? this.entry(to, from, true)!.link : null;
    const common = { clock: this.clock, limits: this.limits, logger: this.logger };
    let route: Route;
    try {
      route = reverse === null ? await UdpRoute.open(e.link, target, listenPort, common) : await TcpRoute.open({ forward: e.link, reverse, target, ...common }, listenPort);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EADDRINUSE' || code === 'EACCES') {
        throw new EdgeqError('INVALID_CONFIG', `cannot listen on 127.0.0.1:${listenPort} (${spec.kind}) for the link ${from} to ${to}: ${code === 'EADDRINUSE' ? 'the port is in use' : 'permission denied'}`, {
          cause: err,
          details: { key: 'listenPort', port: listenPort, from, to },
        });
      }
      throw err;
    }
    if (this.closed) {
      await route.close();
      this.checkOpen();
    }
    e.routes.push(route);
    return { host: '127.0.0.1', port: route.port };
  }

  /** Closes the route listening on `port` of the link `from → to` (its connections are reset); false if there is none. */
  async removeRoute(from: string, to: string, port: number): Promise<boolean> {
    const e = this.existing(from, to);
    const i = e.routes.findIndex((r) => r.port === port);
    if (i < 0) return false;
    const [route] = e.routes.splice(i, 1);
    await route!.close();
    return true;
  }

  /**
   * Changes the link `from → to` live. Validated first (INVALID_ARGUMENT naming the field, and
   * nothing changed); NOT_FOUND for a link that does not exist. `reset: true` then resets, once,
   * every TCP connection that crosses the link in either direction.
   */
  set(from: string, to: string, change: LinkChange): LinkInfo {
    const e = this.existing(from, to);
    const { settings, reset } = checkLinkPatch(change, this.limits.latencyMsMax);
    e.link.apply(settings);
    if (reset) this.resetConnections(from, to);
    return this.info(e);
  }

  /** Resets every TCP connection crossing `from → to` (routes of that link and of its reverse); returns how many. */
  resetConnections(from: string, to: string): number {
    const e = this.existing(from, to);
    let n = 0;
    for (const r of e.routes) if (r.kind === 'tcp') n += r.resetAll();
    for (const r of this.entries.get(key(to, from))?.routes ?? []) if (r.kind === 'tcp') n += r.resetAll();
    e.link.counters.connectionsReset += n;
    return n;
  }

  /** Every link, sorted by `from` then `to`. */
  links(): LinkInfo[] {
    const order = (a: LinkEntry, b: LinkEntry): number => (a.link.from === b.link.from ? (a.link.to < b.link.to ? -1 : 1) : a.link.from < b.link.from ? -1 : 1);
    return [...this.entries.values()].sort(order).map((e) => this.info(e));
  }

  /** Closes every route (connections reset, datagrams in flight dropped); links stay listed. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const routes = [...this.entries.values()].flatMap((e) => e.routes.splice(0));
    await Promise.all(routes.map((r) => r.close()));
  }
}
