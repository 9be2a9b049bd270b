// Turns arteld API objects into the shapes the views draw. Field names follow
// docs/api.md; where the server has grown a field under another name, the
// alternatives are read too, so that the UI keeps working across versions.
import { GPU, items, qty } from './api.js';

const first = (...vals) => vals.find((v) => v !== undefined && v !== null);
const nameOf = (o) => first(o.name, o.metadata && o.metadata.name, '');
const nsOf = (o) => first(o.namespace, o.metadata && o.metadata.namespace, '');

// Per-resource rows of a ClusterQueue: [{flavor, resource, nominal, usage, borrowed}].
function cqResources(o) {
  const rows = [];
  const src = first(o.resources, o.flavors, o.usage && Array.isArray(o.usage) ? o.usage : undefined);
  if (Array.isArray(src)) {
    for (const r of src) {
      if (Array.isArray(r.resources)) {
        for (const x of r.resources) rows.push(row(first(r.flavor, r.name), first(x.resource, x.name), x));
      } else {
        rows.push(row(first(r.flavor, ''), first(r.resource, r.name), r));
      }
    }
    return rows;
  }
  // Kueue-shaped: spec.resourceGroups + status.flavorsUsage.
  const spec = o.spec || {};
  const used = new Map();
  for (const f of (o.status && (o.status.flavorsUsage || o.status.flavorsReservation)) || []) {
    for (const r of f.resources || []) used.set(`${f.name}|${r.name}`, r);
  }
  for (const g of spec.resourceGroups || []) {
    for (const f of g.flavors || []) {
      for (const r of f.resources || []) {
        const u = used.get(`${f.name}|${r.name}`) || {};
        rows.push({ flavor: f.name, resource: r.name, nominal: qty(r.nominalQuota), usage: qty(first(u.total, u.usage)), borrowed: qty(u.borrowed) });
      }
    }
  }
  return rows;
}
function row(flavor, resource, x) {
  const nominal = qty(first(x.nominal, x.nominalQuota, x.quota, x.guaranteed));
  const usage = qty(first(x.usage, x.used, x.total));
  const borrowed = x.borrowed !== undefined ? qty(x.borrowed) : Math.max(0, usage - nominal);
  const lim = (v) => (v === undefined || v === null ? undefined : qty(v));
  return { flavor, resource, nominal, usage, borrowed, borrowingLimit: lim(x.borrowingLimit), lendingLimit: lim(x.lendingLimit) };
}

// GPU quota per flavor: whole GPUs and MIG instances (nvidia.com/mig-*) of
// unlike flavors are never added up. One entry per flavor and GPU resource
// with quota or use; `label` is the flavor, with the MIG profile after a
// slash ("a100/mig-1g.10gb").
export const isGpu = (r) => r === GPU || String(r).startsWith('nvidia.com/mig-');
export const flavorLabel = (flavor, resource) => (resource === GPU ? flavor : `${flavor}/${String(resource).slice('nvidia.com/'.length)}`);
function gpuFlavors(resources) {
  return resources
    .filter((r) => isGpu(r.resource) && (r.nominal > 0 || r.usage > 0))
    .map((r) => ({ ...r, label: r.resource === GPU ? r.flavor : `${r.flavor}/${String(r.resource).slice('nvidia.com/'.length)}` }));
}

function normCQ(o) {
  const resources = cqResources(o);
  const flavors = gpuFlavors(resources);
  const st = o.status || {};
  return {
    name: nameOf(o),
    cohort: first(o.cohort, o.cohortName, o.spec && (o.spec.cohortName || o.spec.cohort), ''),
    flavors,
    pending: Number(first(o.pending, o.pendingWorkloads, st.pendingWorkloads, 0)),
    admitted: Number(first(o.admitted, o.admittedWorkloads, st.admittedWorkloads, st.reservingWorkloads, 0)),
    resources,
    // Flavors of this queue that match no node pool of the host (arteld), with why.
    flavorsWithoutNodes: Array.isArray(o.flavorsWithoutNodes) ? o.flavorsWithoutNodes : [],
    warnings: Array.isArray(o.warnings) ? o.warnings : [],
  };
}

function normLQ(o) {
  const st = o.status || {};
  return {
    name: nameOf(o),
    namespace: nsOf(o),
    clusterQueue: first(o.clusterQueue, o.spec && o.spec.clusterQueue, ''),
    pending: Number(first(o.pending, o.pendingWorkloads, st.pendingWorkloads, NaN)),
    admitted: Number(first(o.admitted, o.admittedWorkloads, st.admittedWorkloads, NaN)),
  };
}

// A cohort's guarantee is its subtree quota (its own quota plus its
// members'); `borrowed` is what it takes beyond that from its parent.
function normCohort(o) {
  const resources = (Array.isArray(o.resources) ? o.resources : []).map((x) => ({
    flavor: first(x.flavor, ''), resource: first(x.resource, x.name, ''),
    nominal: qty(first(x.subtreeQuota, x.nominal, 0)), usage: qty(first(x.usage, 0)), borrowed: qty(first(x.borrowed, 0)),
    borrowingLimit: x.borrowingLimit !== undefined ? qty(x.borrowingLimit) : undefined,
    lendingLimit: x.lendingLimit !== undefined ? qty(x.lendingLimit) : undefined,
  }));
  return { name: nameOf(o), parent: first(o.parent, o.parentName, o.spec && o.spec.parentName, ''), resources, flavors: gpuFlavors(resources) };
}

// "Lent", as arteld's history computes it (src/server/history.cc): in each
// cohort, per flavor and resource, what the members borrow beyond what the
// cohort itself borrows from above is lent by the members that leave
// guarantee unused, in proportion to the unused part. Sets `lent` on the
// flavor rows of queues and cohorts.
export function deriveLent(cqs, cohorts) {
  const members = [];
  for (const q of cqs) for (const f of q.flavors) members.push([q.cohort || '', f]);
  for (const c of cohorts) for (const f of c.flavors) members.push([c.parent || '', f]);
  const unused = (f) => {
    const u = Math.max(0, f.nominal - f.usage);
    return f.lendingLimit !== undefined ? Math.min(u, f.lendingLimit) : u;
  };
  const groups = new Map();
  for (const [parent, f] of members) {
    f.lent = 0;
    if (!parent) continue;
    const k = `${parent}|${f.flavor}|${f.resource}`;
    const g = groups.get(k) || { borrowed: 0, unused: 0 };
    g.borrowed += f.borrowed;
    g.unused += unused(f);
    groups.set(k, g);
  }
  const cohortBorrowed = new Map();
  for (const c of cohorts) for (const f of c.flavors) cohortBorrowed.set(`${c.name}|${f.flavor}|${f.resource}`, f.borrowed);
  for (const [parent, f] of members) {
    if (!parent) continue;
    const k = `${parent}|${f.flavor}|${f.resource}`;
    const g = groups.get(k);
    const pool = Math.max(0, g.borrowed - (cohortBorrowed.get(k) || 0));
    const mine = unused(f);
    if (pool > 0 && g.unused > 0) f.lent = Math.min(mine, (pool * mine) / g.unused);
  }
}

// Milliseconds since the epoch from a number (seconds or ms) or an RFC 3339
// string; the common "YYYY-MM-DDTHH:MM:SS[.fff]Z" form is read without
// Date.parse, which is slow with 10,000 workloads.
function ts(v) {
  if (v === undefined || v === null || v === '') return NaN;
  if (typeof v === 'number') return v < 1e11 ? v * 1000 : v;
  const s = String(v);
  if (s.length >= 20 && s[4] === '-' && s[10] === 'T' && s[s.length - 1] === 'Z') {
    const n = (a, b) => +s.slice(a, b);
    const ms = s[19] === '.' ? Math.round(+`0${s.slice(19, -1)}` * 1000) : 0;
    const t = Date.UTC(n(0, 4), n(5, 7) - 1, n(8, 10), n(11, 13), n(14, 16), n(17, 19)) + ms;
    if (Number.isFinite(t)) return t;
  }
  return Date.parse(s);
}

// A workload as the views draw it. The timeline and the pods are built when
// first read (the workload page, the detail pane, the GPU map), not for every
// one of 10,000 workloads on each refresh.
class Workload {
  constructor(o, events) {
    const st = o.status || {};
    const spec = o.spec || {};
    this.raw = o;
    this.events = events;
    this.namespace = nsOf(o);
    this.name = nameOf(o);
    this.key = `${this.namespace}/${this.name}`;
    let gpus = 0;
    for (const ps of spec.podSets || []) {
      const r = ps.requests && ps.requests[GPU];
      if (r !== undefined) gpus += qty(r) * Number(first(ps.count, 1));
    }
    this.gpus = gpus;
    const adm = first(st.admission, o.admission);
    this.phase = first(st.phase, o.phase, 'Pending');
    this.queue = first(spec.queueName, o.queue, '');
    this.clusterQueue = first(st.clusterQueue, adm && adm.clusterQueue, '');
    this.admitted = this.phase === 'Admitted' || this.phase === 'Running' || this.phase === 'Evicting';
    this.priority = first(st.priority, spec.priority, 0);
    this.created = ts(first(o.metadata && o.metadata.creationTimestamp, st.submittedAt));
    const pending = st.pending;
    this.reason = pending && pending.reason ? `${pending.reason}: ${pending.message || ''}`.replace(/: $/, '') : '';
    this.message = first(st.message, st.lastEviction && `last evicted: ${st.lastEviction.reason}${byPreemptor(st.lastEviction)}`, '');
    this.lastEviction = st.lastEviction || null;
    this.admittedAt = ts(first(st.admittedAt, adm && adm.admittedAt));
    this.startedAt = ts(st.startedAt);
    this.finishedAt = ts(st.finishedAt);
    this.exitCode = st.exitCode;
    this._timeline = null;
    this._pods = null;
  }

  // [{at, what, detail}], oldest first: from the watch events when there
  // are some, else from the status's times.
  get timeline() {
    if (this._timeline) return this._timeline;
    const st = this.raw.status || {};
    const timeline = [];
    const push = (at, what, detail) => {
      const t = ts(at);
      if (Number.isFinite(t)) timeline.push({ at: t, what, detail });
    };
    if (this.events && this.events.length) {
      for (const e of this.events) push(e.time, e.type, eventDetail(e));
    } else {
      push(this.created, 'Submitted');
      if (st.lastEviction) push(st.lastEviction.time, 'Evicted', `${st.lastEviction.reason}${byPreemptor(st.lastEviction)}`);
      push(this.admittedAt, 'Admitted', st.clusterQueue);
      push(st.startedAt, 'Started');
      push(st.finishedAt, this.phase, st.exitCode !== undefined ? `exit ${st.exitCode}` : undefined);
    }
    timeline.sort((a, b) => a.at - b.at);
    return (this._timeline = timeline);
  }

  get pods() {
    if (this._pods) return this._pods;
    const st = this.raw.status || {};
    return (this._pods = (st.pods || []).map((p) => ({
      name: first(p.name, ''), node: first(p.node, ''), gpus: p.gpus || [], running: !!p.running, exitCode: p.exitCode,
      mig: (p.migSlices || []).map((m) => ({ profile: first(m.profile, ''), gpu: first(m.gpu, ''), start: m.start, uuid: first(m.uuid, '') })),
      shares: (p.memoryShares || []).map((m) => ({ gpu: first(m.gpu, ''), gpuIndex: m.gpuIndex, mib: Number(first(m.memoryMiB, 0)), cores: Number(first(m.corePercent, 0)) })),
    })));
  }
}

// " by <preemptor>" for an eviction or an Evicted event. For a tenant the API
// hides another tenant's preemptor and gives only its ClusterQueue
// (preemptorClusterQueue): "a workload in ClusterQueue X".
export function byPreemptor(x) {
  if (!x) return '';
  if (x.preemptor) return ` by ${x.preemptor}`;
  if (x.preemptorClusterQueue) return ` by a workload in ClusterQueue ${x.preemptorClusterQueue}`;
  return '';
}

function eventDetail(e) {
  const parts = [];
  if (e.clusterQueue) parts.push(e.clusterQueue);
  if (e.reason) parts.push(e.reason);
  const by = byPreemptor(e);
  if (by) parts.push(by.trim());
  if (e.exitCode !== undefined) parts.push(`exit ${e.exitCode}`);
  if (e.message) parts.push(e.message);
  return parts.join(' · ');
}

function normGpu(o) {
  // MIG instances in use: {profile, uuid, owner}; arteld's migSlices.instances.
  const mig = o.migSlices || {};
  const slices = (first(mig.instances, o.slices, o.migInstances, []) || []).map((s) => ({
    profile: first(s.profile, s.name, ''), uuid: first(s.uuid, ''), start: s.start, workload: first(s.workload, ''),
    owner: s.workload ? (s.pod ? `${s.workload} (${s.pod})` : s.workload) : first(s.owner, s.pod, ''),
  }));
  // Every pod on a shared GPU (memory shares), else the one owner.
  const users = (o.users || []).map((u) => (u.pod ? `${u.workload} (${u.pod})` : u.workload));
  const owner = users.length > 1 ? users.join(', ') : o.workload ? (o.pod ? `${o.workload} (${o.pod})` : o.workload) : '';
  return {
    node: first(o.node, 'local'),
    index: first(o.index, 0),
    uuid: first(o.uuid, ''),
    model: first(o.model, o.name, ''),
    memory: qty(first(o.memoryBytes, 0)),
    memoryUsed: qty(first(o.memoryUsedBytes, 0)),
    util: Number(first(o.utilizationPercent, 0)),
    healthy: first(o.healthy, true) !== false,
    mig: !!o.migEnabled,
    owner: slices.length ? '' : owner,
    // The workloads on this GPU, for colouring by team: [{workload, pod}].
    users: o.users ? o.users.map((u) => ({ workload: first(u.workload, ''), pod: first(u.pod, '') })) : o.workload ? [{ workload: o.workload, pod: first(o.pod, '') }] : [],
    slices,
    sliceTotal: Number(first(mig.total, 0)),
    sliceUsed: Number(first(mig.used, 0)),
  };
}

function normNode(o) {
  return {
    name: nameOf(o), ready: first(o.ready, true) !== false, gpuMode: first(o.gpuMode, ''),
    gpus: Number(first(o.gpus, 0)), gpusInUse: Number(first(o.gpusInUse, 0)), cgroups: first(o.cgroups, ''),
  };
}

export function normalize(raw) {
  const cqs = items(raw.cqs).map(normCQ).sort((a, b) => a.name.localeCompare(b.name));
  const cohorts = items(raw.cohorts).map(normCohort).sort((a, b) => a.name.localeCompare(b.name));
  deriveLent(cqs, cohorts);
  return {
    cqs,
    lqs: items(raw.lqs).map(normLQ),
    cohorts,
    workloads: items(raw.workloads).map((w) => new Workload(w, raw.events && raw.events.size ? raw.events.get(`${nsOf(w)}/${nameOf(w)}`) : undefined)),
    nodes: items(raw.nodes).map(normNode),
    gpus: items(raw.gpus).map(normGpu),
    user: raw.whoami,
    // flavor -> GPU product (label nvidia.com/gpu.product) where arteld knows it.
    flavorProducts: (raw.nodes && !Array.isArray(raw.nodes) && raw.nodes.flavorProducts) || {},
  };
}

// Per GPU product: each owner's (cohort's or queue's) flavor rows summed over
// the flavors of the SAME product and resource only; flavors of no known
// product are left out. [{owner, product, resource, label, flavors: [],
// nominal, usage, borrowed, lent}], sorted.
export function byGpuProduct(owners, flavorProducts) {
  const out = new Map();
  for (const o of owners) {
    for (const f of o.flavors) {
      const product = flavorProducts[f.flavor];
      if (!product) continue;
      const k = `${o.name}|${product}|${f.resource}`;
      let g = out.get(k);
      if (!g) out.set(k, (g = { owner: o.name, product, resource: f.resource, label: flavorLabel(product, f.resource), flavors: [], nominal: 0, usage: 0, borrowed: 0, lent: 0 }));
      g.flavors.push(f.flavor);
      for (const x of ['nominal', 'usage', 'borrowed', 'lent']) g[x] += f[x] || 0;
    }
  }
  return [...out.values()].sort((a, b) => a.owner.localeCompare(b.owner) || a.label.localeCompare(b.label));
}

// Sums usage series {t, nominal, used, borrowed, lent} (one per flavor of a
// GPU product) into one over the union of their sample times; between two
// samples a series holds its last value, and before its first it counts 0.
export function sumSeries(list) {
  const keys = ['nominal', 'used', 'borrowed', 'lent'];
  const times = [...new Set(list.flatMap((s) => s.t))].sort((a, b) => a - b);
  const out = { t: times };
  for (const k of keys) out[k] = new Array(times.length).fill(0);
  for (const s of list) {
    let j = -1;
    times.forEach((t, i) => {
      while (j + 1 < s.t.length && s.t[j + 1] <= t) ++j;
      if (j < 0) return;
      for (const k of keys) out[k][i] += s[k][j] || 0;
    });
  }
  return out;
}
