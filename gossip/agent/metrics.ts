/**
 * The mesh agent's Prometheus metrics, registered into a registry the caller owns (the gateway's).
 * Counters and gauges are read from the agent at scrape time (its stats() and members()); the
 * probe RTT histogram observes each ack as it comes. Label values are bounded: `state` has 4,
 * `reason` the fixed list of drop reasons, `member` at most membersMax (the phi gauge).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { MeshAgent } from './mesh-agent.ts';
import { ALL_DROP_REASONS, type MeshStats } from './stats.ts';

/** Probe RTT buckets, seconds: a loopback ack (~0.1 ms) to a probe interval stretched by Lifeguard. */
const PROBE_RTT_BUCKETS_S = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1, 2.5];
const STATES = ['alive', 'suspect', 'dead', 'left'] as const;

/** Registers the agent's metrics in `registry`; returns a function that stops the RTT observation. */
export function registerMeshMetrics(registry: Registry, agent: MeshAgent): () => void {
  const registers = [registry];
  const counter = (name: string, help: string, read: (s: MeshStats) => number): void => {
    new Counter({
      name,
      help,
      registers,
      collect() {
        this.reset();
        this.inc(read(agent.stats()));
      },
    });
  };
  new Gauge({
    name: 'edgeq_mesh_members',
    help: 'Members of the mesh by state, as this member sees them (itself included).',
    labelNames: ['state'],
    registers,
    collect() {
      const counts: Record<string, number> = { alive: 0, suspect: 0, dead: 0, left: 0 };
      for (const m of agent.members()) counts[m.state]!++;
      for (const s of STATES) this.set({ state: s }, counts[s]!);
    },
  });
  new Gauge({
    name: 'edgeq_mesh_member_phi',
    help: 'Phi accrual suspicion of each member from this member (alive and suspect members).',
    labelNames: ['member', 'region'],
    registers,
    collect() {
      this.reset();
      for (const m of agent.members().slice(1)) if (m.state === 'alive' || m.state === 'suspect') this.set({ member: m.member, region: m.region }, m.phi);
    },
  });
  new Gauge({
    name: 'edgeq_mesh_members_phi_over_threshold',
    help: 'Alive and suspect members whose phi is at or above the phi threshold (8 by default): a warning line; SWIM decides suspicion.',
    registers,
    collect() {
      this.set(agent.members().slice(1).filter((m) => (m.state === 'alive' || m.state === 'suspect') && m.phi >= agent.config.phiThreshold).length);
    },
  });
  new Gauge({
    name: 'edgeq_mesh_health_score',
    help: "Lifeguard's local health score of this member (0 healthy; its probe timeouts are stretched by score + 1).",
    registers,
    collect() {
      this.set(agent.health());
    },
  });
  new Gauge({
    name: 'edgeq_mesh_incarnation',
    help: "This member's incarnation (raised by each refutation).",
    registers,
    collect() {
      this.set(agent.self().incarnation);
    },
  });
  counter('edgeq_mesh_probes_total', 'Probes sent by this member.', (s) => s.probes);
  counter('edgeq_mesh_probes_failed_total', 'Probes that ended without any ack.', (s) => s.probesFailed);
  counter('edgeq_mesh_suspicions_total', 'Suspicions this member raised from its own failed probes.', (s) => s.suspicions);
  counter('edgeq_mesh_refutations_total', 'Suspicions of this member it refuted.', (s) => s.refutations);
  counter('edgeq_mesh_deaths_total', "Members this member's suspicion timers declared dead.", (s) => s.deaths);
  counter('edgeq_mesh_messages_sent_total', 'Datagrams sent.', (s) => s.messagesSent);
  counter('edgeq_mesh_messages_received_total', 'Datagrams received (before authentication).', (s) => s.messagesReceived);
  counter('edgeq_mesh_bytes_sent_total', 'Bytes sent: datagrams and push-pull frames.', (s) => s.bytesSent);
  counter('edgeq_mesh_bytes_received_total', 'Bytes received: datagrams and push-pull frames.', (s) => s.bytesReceived);
  counter('edgeq_mesh_push_pulls_total', 'Push-pull exchanges run or answered.', (s) => s.pushPulls);
  counter('edgeq_mesh_push_pulls_failed_total', 'Push-pull exchanges that failed.', (s) => s.pushPullsFailed);
  new Counter({
    name: 'edgeq_mesh_drops_total',
    help: 'Messages (or parts) not applied, by reason.',
    labelNames: ['reason'],
    registers,
    collect() {
      this.reset();
      const drops = agent.stats().drops;
      for (const r of ALL_DROP_REASONS) this.inc({ reason: r }, drops[r]);
    },
  });
  const rtt = new Histogram({ name: 'edgeq_mesh_probe_rtt_seconds', help: 'Time from a probe to its ack (direct or through ping-req).', buckets: PROBE_RTT_BUCKETS_S, registers });
  return agent.observe({ probeRtt: (ms) => rtt.observe(ms / 1000) });
}
