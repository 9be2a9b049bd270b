// Artel web UI: a single page over the arteld API, refreshed every 2 seconds.
// Views: overview, per-team GPU usage against guarantee (live uPlot charts
// whose history is kept in this page), queues and cohorts as a tree,
// workloads with their pending reason and timeline, nodes and GPUs with
// their slices. Every value from the server is written with textContent,
// never as HTML.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import './style.css';
import * as api from './api.js';
import { normalize } from './model.js';

const REFRESH_MS = 2000;
const HISTORY_POINTS = 900; // 30 minutes at 2s
const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#ca8a04', '#db2777'];

const state = {
  view: 'overview',
  data: null,        // the last normalized snapshot
  history: new Map(), // team -> {t:[], used:[], guaranteed:[], borrowed:[]}
  charts: new Map(),  // team -> uPlot
  selected: null,     // workload key for the detail pane
  why: new Map(),     // workload key -> `why` explanation (selected workload)
  events: new Map(),  // workload key -> watch events, oldest first
  lastSeq: 0,
  watching: false,
  timer: null,
};

// ---- tiny DOM helpers ----------------------------------------------------------
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'style') el.style.cssText = v; // CSSOM: allowed under a strict CSP
    else if (k === 'text') el.textContent = String(v);
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}
const fmt = (n, d = 0) => (Number.isFinite(n) ? n.toFixed(d).replace(/\.0+$/, '') : '–');
const bytes = (b) => (b >= 1024 ** 3 ? `${fmt(b / 1024 ** 3, 1)} GiB` : b >= 1024 ** 2 ? `${fmt(b / 1024 ** 2)} MiB` : `${fmt(b)} B`);
function age(ms) {
  if (!Number.isFinite(ms) || ms <= 0) return '–';
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  return `${Math.round(s / 3600)}h`;
}
function bar(value, max, guarantee) {
  const pct = max > 0 ? Math.min(100, (100 * value) / max) : 0;
  const b = h('div', { class: 'bar', title: `${fmt(value, 2)} of ${fmt(max, 2)}` }, h('div', { class: 'fill', style: `width:${pct}%` }));
  if (guarantee !== undefined && max > 0) b.append(h('div', { class: 'mark', style: `left:${Math.min(100, (100 * guarantee) / max)}%` }));
  return b;
}
function setConn(text, s) {
  const c = document.getElementById('conn');
  c.textContent = text;
  c.dataset.state = s;
}

// ---- data ------------------------------------------------------------------------
async function fetchAll() {
  const [cqs, lqs, cohorts, workloads, nodes, gpus, whoami] = await Promise.all([
    api.getOr('clusterqueues', []),
    api.getOr('localqueues', []),
    api.getOr('cohorts', []),
    api.getOr('workloads', []),
    api.getOr('nodes', []),
    api.getOr('gpus', []),
    api.getOr('whoami', null),
  ]);
  return normalize({ cqs, lqs, cohorts, workloads, nodes, gpus, whoami, events: state.events });
}

// The watch stream (server-sent events over fetch, so that the bearer token
// goes in a header) feeds each workload's timeline. It reconnects from the
// last seen sequence number.
async function watch() {
  if (state.watching) return;
  state.watching = true;
  try {
    const res = await api.stream(`watch?since=${state.lastSeq}`);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const data = block.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
        if (data) onEvent(JSON.parse(data));
      }
    }
  } catch (e) {
    if (e instanceof api.AuthError) return;
  } finally {
    state.watching = false;
  }
  if (document.getElementById('login').hidden) setTimeout(watch, 2000);
}
function onEvent(e) {
  if (e.seq) state.lastSeq = Math.max(state.lastSeq, e.seq);
  if (!e.workload) return;
  let list = state.events.get(e.workload);
  if (!list) state.events.set(e.workload, (list = []));
  list.push(e);
  if (list.length > 100) list.shift();
}

async function fetchWhy(key) {
  const [ns, name] = key.split('/');
  try {
    const r = await api.get(`namespaces/${encodeURIComponent(ns)}/workloads/${encodeURIComponent(name)}/why`);
    const extra = [];
    if (r.resource) extra.push(`${r.resource}: requested ${r.requested}, available ${r.available}`);
    if (r.wouldPreempt && r.wouldPreempt.length) extra.push(`would preempt ${[].concat(r.wouldPreempt).join(', ')}`);
    // Every flavor tried (arteld puts them in the message too; listed here when it does not).
    if (Array.isArray(r.flavors) && r.flavors.length > 1 && !String(r.message || '').includes('flavors tried')) {
      extra.push(`flavors tried: ${r.flavors.map((f) => f.message).join('; ')}`);
    }
    state.why.set(key, [`${r.reason}: ${r.message}`, ...extra].join(' — '));
  } catch (e) {
    if (e instanceof api.AuthError) throw e;
  }
}

function record(data) {
  const t = Date.now() / 1000;
  // One series per queue and GPU flavor: GPUs of unlike flavors are never added up.
  for (const cq of data.cqs) {
    for (const f of cq.flavors) {
      const key = `${cq.name}|${f.label}`;
      let hs = state.history.get(key);
      if (!hs) state.history.set(key, (hs = { t: [], used: [], guaranteed: [], borrowed: [] }));
      hs.t.push(t);
      hs.used.push(f.usage);
      hs.guaranteed.push(f.nominal);
      hs.borrowed.push(f.borrowed);
      if (hs.t.length > HISTORY_POINTS) for (const k of Object.keys(hs)) hs[k].shift();
    }
  }
}

async function refresh() {
  try {
    const data = await fetchAll();
    const sel = data.workloads.find((w) => w.key === state.selected);
    if (sel && sel.phase === 'Pending') await fetchWhy(sel.key);
    state.data = data;
    record(data);
    setConn(`live · ${new Date().toLocaleTimeString()}`, 'ok');
    render();
    watch();
  } catch (e) {
    if (e instanceof api.AuthError) {
      showLogin(api.token() ? 'The token was not accepted.' : '');
      return;
    }
    setConn(`error: ${e.message}`, 'error');
  }
  state.timer = setTimeout(refresh, REFRESH_MS);
}

// ---- views -----------------------------------------------------------------------
function render() {
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.getAttribute('href') === `#${state.view}`);
  const app = document.getElementById('app');
  const d = state.data;
  if (!d) return;
  const view = { overview, teams, queues, workloads, nodes }[state.view] || overview;
  // Charts are kept across refreshes; everything else is rebuilt.
  const keep = state.view === 'teams' || state.view === 'overview';
  if (!keep) destroyCharts();
  view(app, d);
}

function section(id, title, ...body) {
  return h('section', { id, class: 'panel' }, h('h2', { text: title }), ...body);
}

function overview(app, d) {
  const gpuTotal = d.gpus.length;
  const gpuUsed = d.gpus.filter((g) => g.owner || g.slices.some((s) => s.owner)).length;
  const count = (p) => d.workloads.filter((w) => w.phase === p).length;
  const cards = h('div', { class: 'cards', id: 'overview-cards' },
    card('GPUs', `${gpuUsed} / ${gpuTotal}`, 'in use / total'),
    card('Teams', d.cqs.length, `${d.cohorts.length} cohort(s)`),
    card('Pending', count('Pending'), 'workloads waiting'),
    card('Admitted', d.workloads.filter((w) => w.admitted).length, `${count('Running')} running`),
    card('Finished', d.workloads.filter((w) => ['Succeeded', 'Failed', 'Finished', 'Cancelled'].includes(w.phase)).length, 'done or cancelled'),
    missingFlavorsCard(d),
    d.user ? card('Signed in', d.user.user || '–', d.user.role ? `${d.user.role}${d.user.namespaces ? ` · ${d.user.namespaces.join(', ')}` : ''}` : '') : null,
  );
  ensureSkeleton(app, 'overview', () => [section('overview', 'Cluster overview', cards), section('team-charts', 'GPUs per team: used vs guarantee', h('div', { class: 'charts', id: 'charts' }))]);
  app.querySelector('#overview-cards').replaceWith(cards);
  drawCharts(app.querySelector('#charts'), d);
}
function missingFlavorsCard(d) {
  const missing = [...new Set(d.cqs.flatMap((q) => q.flavorsWithoutNodes))].sort();
  if (!missing.length) return null;
  const c = card('Flavors without GPUs', missing.length, `match no node pool: ${missing.join(', ')}`);
  c.classList.add('warn');
  c.dataset.flavorsWithoutNodes = missing.join(',');
  return c;
}
function card(title, value, sub) {
  return h('div', { class: 'card' }, h('div', { class: 'card-title', text: title }), h('div', { class: 'card-value', text: value }), h('div', { class: 'card-sub', text: sub }));
}

function teams(app, d) {
  const table = h('table', { id: 'teams-table' },
    h('thead', {}, h('tr', {}, ...['Team (ClusterQueue)', 'Cohort', 'GPU flavor', 'GPUs used', 'Guarantee', 'Borrowed', 'Usage', 'Pending', 'Admitted'].map((t) => h('th', { text: t })))),
    // One line per GPU flavor inside the queue's row (never a sum over flavors).
    h('tbody', {}, ...d.cqs.map((cq) => {
      const lines = (f) => cq.flavors.length ? cq.flavors.map((x) => h('div', { class: 'flavor-line' }, f(x))) : ['–'];
      return h('tr', { 'data-team': cq.name },
        h('td', {}, cq.name, flavorWarning(cq)), h('td', { text: cq.cohort || '–' }),
        h('td', {}, ...lines((x) => x.label)),
        h('td', { class: 'num' }, ...lines((x) => fmt(x.usage, 2))), h('td', { class: 'num' }, ...lines((x) => fmt(x.nominal, 2))),
        h('td', { class: 'num' }, ...lines((x) => fmt(x.borrowed, 2))),
        h('td', {}, ...(cq.flavors.length ? cq.flavors.map((x) => bar(x.usage, Math.max(x.usage, x.nominal, 1), x.nominal)) : [])),
        h('td', { class: 'num', text: cq.pending }), h('td', { class: 'num', text: cq.admitted }));
    })));
  ensureSkeleton(app, 'teams', () => [section('team-charts', 'GPUs per team: used vs guarantee vs borrowed (live)', h('div', { class: 'charts', id: 'charts' })), section('teams', 'Teams', h('table', { id: 'teams-table' }))]);
  app.querySelector('#teams-table').replaceWith(table);
  drawCharts(app.querySelector('#charts'), d);
}

// A queue's flavors that match no node pool of the host: their quota
// cannot be used here (arteld warns; docs/daemon.md "Node pools").
function flavorWarning(cq) {
  if (!cq.flavorsWithoutNodes.length) return null;
  return h('div', { class: 'flavor-warning', 'data-flavors-without-nodes': cq.flavorsWithoutNodes.join(','), title: cq.warnings.join('\n'),
    text: `⚠ no GPUs on this host for flavor${cq.flavorsWithoutNodes.length > 1 ? 's' : ''} ${cq.flavorsWithoutNodes.join(', ')}` });
}

function ensureSkeleton(app, name, build) {
  if (app.dataset.view === name) return;
  destroyCharts();
  app.replaceChildren(...build());
  app.dataset.view = name;
}

function destroyCharts() {
  for (const c of state.charts.values()) c.destroy();
  state.charts.clear();
}

function drawCharts(container, d) {
  const pairs = [];
  for (const cq of d.cqs) for (const f of cq.flavors) pairs.push([cq, f]);
  for (const [i, [cq, f]] of pairs.entries()) {
    const key = `${cq.name}|${f.label}`;
    const hs = state.history.get(key);
    if (!hs) continue;
    const series = [hs.t, hs.used, hs.guaranteed, hs.borrowed];
    let chart = state.charts.get(key);
    if (!chart) {
      const box = h('figure', { class: 'chart', 'data-team': cq.name, 'data-flavor': f.label }, h('figcaption', { text: `${cq.name} · ${f.label}` }));
      container.append(box);
      const color = COLORS[i % COLORS.length];
      const per = Math.min(pairs.length, 3);
      const width = Math.max(360, Math.min(640, Math.floor((container.clientWidth - 16 * (per - 1)) / per)));
      chart = new uPlot({
        width, height: 200,
        scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max) * 1.15] } },
        axes: [
          { values: (u, ticks) => ticks.map((t) => new Date(t * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' })) },
          { label: f.resource === 'nvidia.com/gpu' ? 'GPUs' : 'MIG instances', size: 50 },
        ],
        series: [
          {},
          { label: 'used', stroke: color, width: 2, fill: `${color}22` },
          { label: 'guarantee', stroke: '#111827', width: 1.5, dash: [6, 4] },
          { label: 'borrowed', stroke: '#f59e0b', width: 1.5 },
        ],
        legend: { live: false },
      }, series, box);
      state.charts.set(key, chart);
    } else {
      chart.setData(series);
    }
    // For people and tests: how much history the chart holds, and its last values.
    const fig = chart.root.parentElement;
    fig.dataset.points = String(hs.t.length);
    fig.dataset.used = String(f.usage);
    fig.dataset.guarantee = String(f.nominal);
    fig.dataset.borrowed = String(f.borrowed);
  }
}

function queues(app, d) {
  // cohort tree: cohorts (with parents) -> cluster queues -> local queues.
  const children = new Map();
  for (const c of d.cohorts) {
    const p = c.parent || '';
    if (!children.has(p)) children.set(p, []);
    children.get(p).push(c.name);
  }
  const cqsOf = (cohort) => d.cqs.filter((q) => (q.cohort || '') === cohort);
  const lqsOf = (cq) => d.lqs.filter((l) => l.clusterQueue === cq);
  const cqNode = (cq) => h('li', { class: 'cq', 'data-cq': cq.name },
    h('span', { class: 'kind', text: 'ClusterQueue' }), h('strong', { text: cq.name }),
    h('span', { class: 'figs', text: ` ${cq.flavors.map((f) => `${f.label}: ${fmt(f.usage, 2)} / ${fmt(f.nominal, 2)}${f.borrowed > 0 ? ` (borrowing ${fmt(f.borrowed, 2)})` : ''}`).join(' · ') || 'no GPU quota'} · ${cq.pending} pending · ${cq.admitted} admitted` }),
    ...cq.flavors.map((f) => bar(f.usage, Math.max(f.usage, f.nominal, 1), f.nominal)),
    flavorWarning(cq),
    h('ul', {}, ...lqsOf(cq.name).map((l) => h('li', { class: 'lq' }, h('span', { class: 'kind', text: 'LocalQueue' }), `${l.namespace}/${l.name}`,
      h('span', { class: 'figs', text: Number.isFinite(l.pending) ? ` · ${l.pending} pending · ${l.admitted} admitted` : '' })))));
  const cohortNode = (name) => h('li', { class: 'cohort', 'data-cohort': name },
    h('span', { class: 'kind', text: 'Cohort' }), h('strong', { text: name }),
    h('ul', {}, ...(children.get(name) || []).map(cohortNode), ...cqsOf(name).map(cqNode)));
  const knownCohorts = new Set(d.cohorts.map((c) => c.name));
  const roots = [...(children.get('') || [])];
  for (const q of d.cqs) if (q.cohort && !knownCohorts.has(q.cohort) && !roots.includes(q.cohort)) roots.push(q.cohort);
  const tree = h('ul', { class: 'tree', id: 'queue-tree' }, ...roots.map(cohortNode), ...cqsOf('').map(cqNode));
  app.replaceChildren(section('queues', 'Queues and cohorts', tree));
  app.dataset.view = 'queues';
}

function workloads(app, d) {
  const order = { Pending: 0, Evicting: 1, Admitted: 2, Running: 3 };
  const list = [...d.workloads].sort((a, b) => (order[a.phase] ?? 9) - (order[b.phase] ?? 9) || a.created - b.created || a.key.localeCompare(b.key));
  const rows = list.map((w) => h('tr', { 'data-workload': w.key, class: `phase-${w.phase.toLowerCase()}${state.selected === w.key ? ' selected' : ''}`, onclick: () => { state.selected = w.key; if (w.phase === 'Pending') fetchWhy(w.key).then(render); render(); } },
    h('td', { text: w.key }), h('td', { text: w.queue }), h('td', { text: w.clusterQueue || '–' }),
    h('td', {}, h('span', { class: `phase ${w.phase.toLowerCase()}`, text: w.phase })),
    h('td', { class: 'num', text: fmt(w.gpus, 2) }), h('td', { class: 'num', text: w.priority }),
    h('td', { text: age(w.created) }),
    h('td', { class: 'reason', text: w.phase === 'Pending' ? w.reason || '…' : w.message || '' })));
  const table = h('table', { id: 'workloads-table' },
    h('thead', {}, h('tr', {}, ...['Workload', 'Queue', 'ClusterQueue', 'Phase', 'GPUs', 'Priority', 'Age', 'Pending reason / message'].map((t) => h('th', { text: t })))),
    h('tbody', {}, ...rows));
  const sel = d.workloads.find((w) => w.key === state.selected);
  const detail = sel ? h('div', { id: 'workload-detail', class: 'detail' },
    h('h3', { text: sel.key }),
    sel.phase === 'Pending' ? h('p', { class: 'reason', id: 'why', text: `Why pending: ${state.why.get(sel.key) || sel.reason || '…'}` }) : null,
    h('p', { class: 'figs', text: `queue ${sel.namespace}/${sel.queue} → ${sel.clusterQueue || '–'} · ${fmt(sel.gpus, 2)} GPU(s) · priority ${sel.priority}` }),
    h('ol', { class: 'timeline' }, ...sel.timeline.map((e) => h('li', {}, h('time', { text: new Date(e.at).toLocaleTimeString() }), ` ${e.what}`, e.detail ? h('span', { class: 'figs', text: ` — ${e.detail}` }) : null)))) : null;
  app.replaceChildren(section('workloads', `Workloads (${d.workloads.length})`, table, detail));
  app.dataset.view = 'workloads';
}

function nodes(app, d) {
  const byNode = new Map();
  for (const g of d.gpus) {
    if (!byNode.has(g.node)) byNode.set(g.node, []);
    byNode.get(g.node).push(g);
  }
  for (const n of d.nodes) if (!byNode.has(n.name)) byNode.set(n.name, []);
  const ready = new Map(d.nodes.map((n) => [n.name, n.ready]));
  const info = new Map(d.nodes.map((n) => [n.name, n]));
  const blocks = [...byNode.entries()].map(([node, gpus]) => h('div', { class: 'node', 'data-node': node },
    h('h3', {}, node, ' ', h('span', { class: `badge ${ready.get(node) === false ? 'bad' : 'good'}`, text: ready.get(node) === false ? 'NotReady' : 'Ready' }),
      info.get(node) ? h('span', { class: 'figs', text: ` ${info.get(node).gpuMode} GPUs · ${info.get(node).gpusInUse}/${info.get(node).gpus} in use · ${info.get(node).cgroups}` }) : null),
    h('div', { class: 'gpus' }, ...gpus.map((g) => h('div', { class: `gpu${g.owner || g.slices.some((s) => s.owner) ? ' busy' : ''}${g.healthy ? '' : ' unhealthy'}`, 'data-gpu': g.index, title: g.uuid },
      h('div', { class: 'gpu-head' }, h('strong', { text: `GPU ${g.index}` }), ` ${g.model}${g.mig ? ' · MIG' : ''}${g.healthy ? '' : ' · UNHEALTHY'}`),
      h('div', { class: 'figs', text: `util ${fmt(g.util)}% · mem ${bytes(g.memoryUsed)} / ${bytes(g.memory)}` }),
      bar(g.memoryUsed, g.memory),
      h('div', { class: 'owner', text: g.owner ? `→ ${g.owner}` : g.slices.length ? '' : 'free' }),
      g.mig && g.sliceTotal ? h('div', { class: 'figs mig-slices', text: `${g.sliceUsed}/${g.sliceTotal} slices used` }) : null,
      g.slices.length ? h('ul', { class: 'slices' }, ...g.slices.map((s) => h('li', { text: `${s.profile}${s.owner ? ` → ${s.owner}` : ' (free)'}` }))) : null)))));
  app.replaceChildren(section('nodes', 'Nodes and GPUs', ...blocks));
  app.dataset.view = 'nodes';
}

// ---- login and routing ------------------------------------------------------------
// Forget everything seen with the previous token.
function resetSession() {
  state.history.clear();
  state.events.clear();
  state.why.clear();
  state.lastSeq = 0;
  state.selected = null;
  state.data = null;
}

function showLogin(message) {
  clearTimeout(state.timer);
  setConn('signed out', 'idle');
  document.getElementById('login').hidden = false;
  document.getElementById('login-error').textContent = message || '';
  document.getElementById('app').replaceChildren();
  document.getElementById('app').dataset.view = '';
  destroyCharts();
}

function start() {
  api.adoptTokenFromUrl();
  const form = document.getElementById('login');
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    api.setToken(document.getElementById('token').value.trim());
    document.getElementById('token').value = '';
    form.hidden = true;
    resetSession();
    refresh();
  });
  const out = document.getElementById('signout');
  out.hidden = false;
  out.addEventListener('click', () => { api.clearToken(); resetSession(); showLogin(''); });
  const route = () => {
    state.view = (window.location.hash || '#overview').slice(1);
    if (state.data) render();
  };
  window.addEventListener('hashchange', route);
  route();
  refresh();
}

start();
