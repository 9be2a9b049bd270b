// Artel web UI: a single page over the arteld API, refreshed every 2 seconds.
// Views (docs/ui.md): Teams first (per cohort and GPU flavor: guaranteed,
// used, borrowed and lent over time, the ClusterQueues below), Overview,
// the cohort tree with quotas and limits, Workloads (with a page per
// workload: timeline, placements, why pending, logs) and the Nodes & GPUs
// map. Charts open with arteld's usage history (GET /api/v1/history) and
// go on with the live refreshes. Every value from the server is written
// with textContent, never as HTML.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import './style.css';
import * as api from './api.js';
import { normalize, flavorLabel, isGpu, byGpuProduct, sumSeries } from './model.js';

const REFRESH_MS = 2000;
const LIVE_POINTS = 1800; // live points kept per series on top of the server's history
const MAX_ROWS = 500;     // workload rows drawn at once (the filter narrows the rest)
// One colour per meaning, the same in every chart and legend.
const COL = { guarantee: '#111827', used: '#2563eb', borrowed: '#d97706', lent: '#16a34a' };
const TEAM_COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#ca8a04', '#db2777', '#4f46e5', '#65a30d'];

const state = {
  view: 'teams',
  arg: '',            // the workload key of #workload/<ns>/<name>
  data: null,         // the last normalized snapshot
  series: new Map(),  // `${kind}|${name}|${label}` -> {t, nominal, used, borrowed, lent}
  historyLoaded: false,
  range: '',          // '' = arteld's in-memory ring; else a history?range= (from Prometheus)
  prometheus: false,  // arteld says it can read longer ranges from Prometheus
  rangeNote: '',      // what the last range load gave (or its error)
  charts: new Map(),  // series key -> uPlot
  selected: null,     // workload key for the detail pane of the Workloads view
  why: new Map(),     // workload key -> `why` answer (raw)
  events: new Map(),  // workload key -> watch events, oldest first
  logs: new Map(),    // workload key -> log text
  filter: '',
  user: null,         // whoami of the signed-in caller
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
const fmt = (n, d = 0) => (Number.isFinite(n) ? n.toFixed(d).replace(/\.0+$/, '').replace(/(\.\d*?)0+$/, '$1') : '–');
const bytes = (b) => (b >= 1024 ** 3 ? `${fmt(b / 1024 ** 3, 1)} GiB` : b >= 1024 ** 2 ? `${fmt(b / 1024 ** 2)} MiB` : `${fmt(b)} B`);
// One time format everywhere: 24-hour clock in charts, RFC 3339 (UTC) in timelines.
const clock = (ms) => new Date(ms).toLocaleTimeString('en-GB', { hour12: false });
const rfc3339 = (ms) => (Number.isFinite(ms) ? new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z') : '–');
function age(ms) {
  if (!Number.isFinite(ms) || ms <= 0) return '–';
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86400)}d`;
}
function bar(value, max, guarantee, label) {
  const pct = max > 0 ? Math.min(100, (100 * value) / max) : 0;
  const b = h('div', { class: 'bar', role: 'img', 'aria-label': label || `${fmt(value, 2)} of ${fmt(max, 2)}`, title: `${fmt(value, 2)} of ${fmt(max, 2)}` },
    h('div', { class: 'fill', style: `width:${pct}%` }));
  if (guarantee !== undefined && max > 0) b.append(h('div', { class: 'mark', style: `left:${Math.min(100, (100 * guarantee) / max)}%` }));
  return b;
}
function setConn(text, s) {
  const c = document.getElementById('conn');
  c.textContent = text;
  c.dataset.state = s;
}
const wlHref = (key) => `#workload/${key}`;
// A colour per team (namespace): the teams the viewer may see (those of the
// LocalQueues), in name order, take the palette in turn.
let teamIndex = new Map();
function setTeams(d) {
  const names = [...new Set([...d.lqs.map((l) => l.namespace), ...d.workloads.map((w) => w.namespace)])].sort();
  teamIndex = new Map(names.map((n, i) => [n, i]));
}
function teamColor(team) {
  if (!teamIndex.has(team)) teamIndex.set(team, teamIndex.size);
  return TEAM_COLORS[teamIndex.get(team) % TEAM_COLORS.length];
}
const teamOf = (workload) => (workload && workload.includes('/') ? workload.split('/')[0] : '');

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
  return { cqs, lqs, cohorts, workloads, nodes, gpus, whoami };
}

// arteld's usage history: the charts open with it. A 404 (history off) or
// an older arteld leaves the charts to the live points.
async function loadHistory() {
  const range = state.range;
  let hist = null;
  try {
    hist = await api.getOr(range ? `history?range=${encodeURIComponent(range)}` : 'history', null);
  } catch (e) {
    if (e instanceof api.AuthError || !range) throw e;
    state.rangeNote = `could not read ${range}: ${e.message}`;
    return;
  }
  state.historyLoaded = true;
  if (!hist || !Array.isArray(hist.series)) return;
  if (!range) state.prometheus = hist.prometheus === true;
  state.rangeNote = range ? `${range} from ${hist.source === 'prometheus' ? 'Prometheus' : 'arteld'}, ${hist.intervalSeconds} s steps` : '';
  for (const s of hist.series) {
    if (!isGpu(s.resource)) continue;
    const key = `${s.kind === 'Cohort' ? 'cohort' : 'cq'}|${s.name}|${flavorLabel(s.flavor, s.resource)}`;
    const live = state.series.get(key);
    const hs = { t: [...s.t], nominal: [...s.nominal], used: [...s.used], borrowed: [...s.borrowed], lent: [...s.lent] };
    if (live) {
      // Live points already taken go after the history.
      const last = hs.t.length ? hs.t[hs.t.length - 1] : -Infinity;
      live.t.forEach((t, i) => {
        if (t <= last) return;
        for (const k of Object.keys(hs)) hs[k].push(live[k][i]);
      });
    }
    state.series.set(key, hs);
  }
}

// The chart range (team view): shown only when arteld has --prometheus-url;
// the ring's own span is the default.
function rangeSelect() {
  if (!state.prometheus) return null;
  const sel = h('select', { id: 'history-range', 'aria-label': 'Chart range' },
    ...[['', 'recent (arteld)'], ['1h', '1 hour'], ['24h', '24 hours'], ['7d', '7 days']].map(([v, t]) => {
      const o = h('option', { value: v, text: t });
      if (v === state.range) o.selected = true;
      return o;
    }));
  sel.addEventListener('change', async () => {
    state.range = sel.value;
    state.rangeNote = 'loading…';
    render();
    await loadHistory();
    render();
  });
  return h('div', { class: 'range', id: 'history-range-box' }, h('label', { for: 'history-range', text: 'Charts: ' }), sel,
    h('span', { class: 'range-note', id: 'history-range-note', role: 'status', text: state.rangeNote }));
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
  if (list.some((x) => x.seq && x.seq === e.seq)) return;
  list.push(e);
  if (list.length > 100) list.shift();
}

// Whether the signed-in caller may read workload `key`'s namespace (unknown
// caller: try, the server decides).
function mayRead(key) {
  const u = state.user;
  if (!u || u.role === 'admin') return true;
  return (u.namespaces || []).includes(key.split('/')[0]);
}
const wlPath = (key) => {
  const [ns, name] = key.split('/');
  return `namespaces/${encodeURIComponent(ns)}/workloads/${encodeURIComponent(name)}`;
};
async function fetchWhy(key) {
  try {
    state.why.set(key, await api.get(`${wlPath(key)}/why`));
  } catch (e) {
    if (e instanceof api.AuthError) throw e;
  }
}
function whyText(r) {
  if (!r) return '';
  const extra = [];
  if (r.resource) extra.push(`${r.resource}: requested ${r.requested}, available ${r.available}`);
  if (r.wouldPreempt && r.wouldPreempt.length) extra.push(`would preempt ${[].concat(r.wouldPreempt).join(', ')}`);
  if (Array.isArray(r.flavors) && r.flavors.length > 1 && !String(r.message || '').includes('flavors tried')) {
    extra.push(`flavors tried: ${r.flavors.map((f) => f.message).join('; ')}`);
  }
  return [`${r.reason}: ${r.message}`, ...extra].join(' — ');
}
// The workload page's extras: its past events (the watch log, without
// following) and its logs.
async function fetchWorkloadExtras(key) {
  const ns = key.split('/')[0];
  try {
    const ev = await api.getOr(`watch?follow=false&since=0&namespace=${encodeURIComponent(ns)}`, null);
    for (const e of api.items(ev)) onEvent(e);
  } catch (e) {
    if (e instanceof api.AuthError) throw e;
  }
  await fetchLogs(key);
}
async function fetchLogs(key) {
  try {
    const headers = api.token() ? { Authorization: `Bearer ${api.token()}` } : {};
    const res = await fetch(`/api/v1/${wlPath(key)}/logs?tailBytes=65536`, { headers, cache: 'no-store' });
    state.logs.set(key, res.ok ? await res.text() : `(no logs: HTTP ${res.status})`);
  } catch (e) {
    state.logs.set(key, `(no logs: ${e.message})`);
  }
}

function push(key, t, f) {
  let hs = state.series.get(key);
  if (!hs) state.series.set(key, (hs = { t: [], nominal: [], used: [], borrowed: [], lent: [] }));
  if (hs.t.length && hs.t[hs.t.length - 1] >= t) return;
  hs.t.push(t);
  hs.nominal.push(f.nominal);
  hs.used.push(f.usage);
  hs.borrowed.push(f.borrowed);
  hs.lent.push(f.lent || 0);
  if (hs.t.length > LIVE_POINTS + 9000) for (const k of Object.keys(hs)) hs[k].shift();
}
function record(data) {
  const t = Date.now() / 1000;
  // One series per queue (or cohort) and GPU flavor: unlike flavors are never added up.
  for (const cq of data.cqs) for (const f of cq.flavors) push(`cq|${cq.name}|${f.label}`, t, f);
  for (const c of data.cohorts) for (const f of c.flavors) push(`cohort|${c.name}|${f.label}`, t, f);
}

async function refresh() {
  try {
    // All at once: the history (first time), the views, a workload page's
    // extras (once the caller is known: none for a namespace it may not read).
    const extras = () => (state.view === 'workload' && state.arg && !state.logs.has(state.arg) && mayRead(state.arg) ? fetchWorkloadExtras(state.arg) : null);
    const known = !!state.user;
    const [, raw] = await Promise.all([state.historyLoaded ? null : loadHistory(), fetchAll(), known ? extras() : null]);
    state.user = raw.whoami;
    if (!known) await extras();
    performance.mark('artel:fetched');
    const data = normalize({ ...raw, events: state.events });
    performance.mark('artel:normalized');
    const sel = data.workloads.find((w) => w.key === state.selected);
    if (sel && sel.phase === 'Pending') await fetchWhy(sel.key);
    if (state.view === 'workload' && state.arg) {
      const w = data.workloads.find((x) => x.key === state.arg);
      if (w && w.phase === 'Pending') await fetchWhy(w.key);
    }
    state.data = data;
    setTeams(data);
    record(data);
    setConn(`live · ${clock(Date.now())}`, 'ok');
    render();
    performance.mark('artel:drawn');
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
const VIEWS = { overview, teams, queues, workloads, workload: workloadPage, nodes };
function render() {
  for (const a of document.querySelectorAll('#nav a')) {
    const on = a.getAttribute('href') === `#${state.view}` || (state.view === 'workload' && a.getAttribute('href') === '#workloads');
    a.classList.toggle('active', on);
    if (on) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  const app = document.getElementById('app');
  const d = state.data;
  if (!d) return;
  const view = VIEWS[state.view] || teams;
  // Charts are kept across refreshes; everything else is rebuilt.
  if (state.view !== 'teams' && state.view !== 'overview') destroyCharts();
  view(app, d);
}

function section(id, title, ...body) {
  return h('section', { id, class: 'panel', 'aria-labelledby': `${id}-h` }, h('h2', { id: `${id}-h`, text: title }), ...body);
}

function overview(app, d) {
  const gpuTotal = d.gpus.length;
  const gpuUsed = d.gpus.filter((g) => g.owner || g.slices.some((s) => s.owner)).length;
  const count = (p) => d.workloads.filter((w) => w.phase === p).length;
  const cards = h('div', { class: 'cards', id: 'overview-cards' },
    card('GPUs', `${gpuUsed} / ${gpuTotal}`, 'in use / total'),
    card('Teams', d.cohorts.length, `${d.cqs.length} ClusterQueue(s)`),
    card('Pending', count('Pending'), 'workloads waiting'),
    card('Admitted', d.workloads.filter((w) => w.admitted).length, `${count('Running')} running`),
    card('Finished', d.workloads.filter((w) => ['Succeeded', 'Failed', 'Finished', 'Cancelled'].includes(w.phase)).length, 'done or cancelled'),
    missingFlavorsCard(d),
    d.user ? card('Signed in', d.user.user || '–', d.user.role ? `${d.user.role} · ${d.user.role === 'admin' ? 'all namespaces' : (d.user.namespaces || []).join(', ')}` : '') : null,
  );
  ensureSkeleton(app, 'overview', () => [section('overview', 'Cluster overview', cards),
    section('cohort-charts', 'GPUs per team (cohort): guaranteed, used, borrowed, lent', legend(), h('div', { class: 'charts', id: 'cohort-charts-box' }))]);
  app.querySelector('#overview-cards').replaceWith(cards);
  drawCharts(app.querySelector('#cohort-charts-box'), cohortPairs(d));
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
function legend() {
  return h('p', { class: 'legend', 'aria-hidden': 'true' }, ...Object.entries(COL).map(([k, c]) => h('span', { class: `key key-${k}` }, h('i', { style: `background:${c}` }), k === 'guarantee' ? 'guaranteed' : k)));
}
const cohortPairs = (d) => d.cohorts.flatMap((c) => c.flavors.map((f) => ({ key: `cohort|${c.name}|${f.label}`, attr: { 'data-cohort': c.name }, title: `${c.name} · ${f.label}`, f })));
// Per GPU product over time: the series of the product's flavors in that
// cohort, summed (byGpuProduct says which; unlike flavors never are).
function productPairs(prod) {
  const pairs = [];
  for (const g of prod) {
    const parts = g.flavors.map((fl) => state.series.get(`cohort|${g.owner}|${flavorLabel(fl, g.resource)}`)).filter(Boolean);
    if (!parts.length) continue;
    const key = `product|${g.owner}|${g.label}`;
    state.series.set(key, sumSeries(parts));
    pairs.push({ key, attr: { 'data-cohort': g.owner, 'data-product': g.label }, title: `${g.owner} · ${g.label}`, f: g });
  }
  return pairs;
}
const cqPairs = (d) => d.cqs.flatMap((q) => q.flavors.map((f) => ({ key: `cq|${q.name}|${f.label}`, attr: { 'data-team': q.name }, title: `${q.name} · ${f.label}`, f })));

// The team view: cohorts (teams) first, per GPU flavor, then the ClusterQueues.
function teams(app, d) {
  const num = (v) => h('td', { class: 'num', text: fmt(v, 2) });
  const cohortTable = h('table', { id: 'cohorts-table' },
    h('caption', { class: 'sr', text: 'GPUs per team (cohort) and flavor' }),
    h('thead', {}, h('tr', {}, ...['Team (cohort)', 'Parent', 'GPU flavor', 'Guaranteed', 'Used', 'Borrowed', 'Lent', 'Usage'].map((t) => h('th', { scope: 'col', text: t })))),
    h('tbody', {}, ...d.cohorts.flatMap((c) => c.flavors.map((f) => h('tr', { 'data-cohort': c.name, 'data-flavor': f.label },
      h('th', { scope: 'row', text: c.name }), h('td', { text: c.parent || '–' }), h('td', { text: f.label }),
      num(f.nominal), num(f.usage), num(f.borrowed), num(f.lent),
      h('td', {}, bar(f.usage, Math.max(f.usage, f.nominal, 1), f.nominal, `${c.name} ${f.label}: ${fmt(f.usage, 2)} used of ${fmt(f.nominal, 2)} guaranteed`)))))));
  // Per GPU product: only flavors of the same product and resource are summed.
  const prod = byGpuProduct(d.cohorts, d.flavorProducts);
  const productTable = prod.length ? h('table', { id: 'products-table' },
    h('caption', { class: 'sr', text: 'GPUs per team (cohort) and GPU product' }),
    h('thead', {}, h('tr', {}, ...['Team (cohort)', 'GPU product', 'Flavors', 'Guaranteed', 'Used', 'Borrowed', 'Lent'].map((t) => h('th', { scope: 'col', text: t })))),
    h('tbody', {}, ...prod.map((g) => h('tr', { 'data-cohort': g.owner, 'data-product': g.label },
      h('th', { scope: 'row', text: g.owner }), h('td', { text: g.label }), h('td', { text: g.flavors.join(', ') }),
      num(g.nominal), num(g.usage), num(g.borrowed), num(g.lent))))) : h('table', { id: 'products-table', hidden: true });
  const table = h('table', { id: 'teams-table' },
    h('caption', { class: 'sr', text: 'GPUs per ClusterQueue and flavor' }),
    h('thead', {}, h('tr', {}, ...['ClusterQueue', 'Cohort', 'GPU flavor', 'Used', 'Guaranteed', 'Borrowed', 'Lent', 'Usage', 'Pending', 'Admitted'].map((t) => h('th', { scope: 'col', text: t })))),
    // One line per GPU flavor inside the queue's row (never a sum over flavors).
    h('tbody', {}, ...d.cqs.map((cq) => {
      const lines = (f) => cq.flavors.length ? cq.flavors.map((x) => h('div', { class: 'flavor-line' }, f(x))) : ['–'];
      return h('tr', { 'data-team': cq.name },
        h('th', { scope: 'row' }, cq.name, flavorWarning(cq)), h('td', { text: cq.cohort || '–' }),
        h('td', {}, ...lines((x) => x.label)),
        h('td', { class: 'num' }, ...lines((x) => fmt(x.usage, 2))), h('td', { class: 'num' }, ...lines((x) => fmt(x.nominal, 2))),
        h('td', { class: 'num' }, ...lines((x) => fmt(x.borrowed, 2))), h('td', { class: 'num' }, ...lines((x) => fmt(x.lent, 2))),
        h('td', {}, ...(cq.flavors.length ? cq.flavors.map((x) => bar(x.usage, Math.max(x.usage, x.nominal, 1), x.nominal, `${cq.name} ${x.label}: ${fmt(x.usage, 2)} used of ${fmt(x.nominal, 2)} guaranteed`)) : [])),
        h('td', { class: 'num', text: cq.pending }), h('td', { class: 'num', text: cq.admitted }));
    })));
  ensureSkeleton(app, 'teams', () => [
    section('team-cohorts', 'Teams (cohorts): GPUs guaranteed, used, borrowed beyond the guarantee, lent', legend(), h('div', { class: 'charts', id: 'cohort-charts-box' }), h('table', { id: 'cohorts-table' }), h('table', { id: 'products-table' }),
      h('h3', { id: 'product-charts-h', text: 'Per GPU product over time (only flavors of the same product summed)' }),
      h('div', { class: 'charts', id: 'product-charts-box', 'aria-label': 'GPUs per team and GPU product over time' })),
    section('team-charts', 'ClusterQueues: GPUs per flavor over time', h('div', { class: 'charts', id: 'charts' })),
    section('teams', 'ClusterQueues', h('table', { id: 'teams-table' }))]);
  const rangeBox = app.querySelector('#history-range-box');
  const sel = rangeSelect();
  if (!rangeBox && sel) app.querySelector('#team-cohorts-h').after(sel);
  else if (rangeBox && sel) rangeBox.querySelector('#history-range-note').textContent = state.rangeNote;
  app.querySelector('#cohorts-table').replaceWith(cohortTable);
  app.querySelector('#products-table').replaceWith(productTable);
  app.querySelector('#teams-table').replaceWith(table);
  drawCharts(app.querySelector('#cohort-charts-box'), cohortPairs(d));
  app.querySelector('#product-charts-h').hidden = !prod.length;
  drawCharts(app.querySelector('#product-charts-box'), productPairs(prod));
  drawCharts(app.querySelector('#charts'), cqPairs(d));
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

function drawCharts(container, pairs) {
  const per = 3;
  const width = Math.max(300, Math.floor((container.clientWidth - 16 * (per - 1)) / per));
  for (const { key, attr, title, f } of pairs) {
    const hs = state.series.get(key);
    if (!hs) continue;
    const series = [hs.t, hs.nominal, hs.used, hs.borrowed, hs.lent];
    let chart = state.charts.get(key);
    if (!chart) {
      const label = `${title}: ${fmt(f.usage, 2)} used, ${fmt(f.nominal, 2)} guaranteed, ${fmt(f.borrowed, 2)} borrowed, ${fmt(f.lent, 2)} lent`;
      const box = h('figure', { class: 'chart', ...attr, 'data-flavor': f.label, role: 'img', 'aria-label': label }, h('figcaption', { text: title }));
      container.append(box);
      chart = new uPlot({
        width, height: 190,
        cursor: { show: false },
        scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max) * 1.15] } },
        axes: [
          // 24-hour clock; seconds when the chart spans under 10 minutes.
          { values: (u, ticks) => ticks.map((t) => new Date(t * 1000).toLocaleTimeString('en-GB', { hour12: false, hour: '2-digit', minute: '2-digit', ...(u.scales.x.max - u.scales.x.min < 600 ? { second: '2-digit' } : {}) })), size: 30 },
          { label: f.resource === api.GPU ? 'GPUs' : 'MIG instances', size: 50 },
        ],
        series: [
          {},
          { label: 'guaranteed', points: { show: false }, stroke: COL.guarantee, width: 1.5, dash: [6, 4] },
          { label: 'used', points: { show: false }, stroke: COL.used, width: 2, fill: `${COL.used}22` },
          { label: 'borrowed', points: { show: false }, stroke: COL.borrowed, width: 1.5 },
          { label: 'lent', points: { show: false }, stroke: COL.lent, width: 1.5 },
        ],
        legend: { show: false },
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
    fig.dataset.lent = String(fmt(f.lent, 3));
    fig.dataset.since = String(hs.t.length ? Math.round(hs.t[0]) : 0);
  }
}

// The cohort tree: cohorts (with parents) -> ClusterQueues -> LocalQueues,
// each with its quotas and lending/borrowing limits per GPU flavor.
function limitsTable(rows, kind) {
  if (!rows.length) return h('span', { class: 'figs', text: ' no GPU quota' });
  const cell = (v) => h('td', { class: 'num', text: v === undefined ? '–' : fmt(v, 2) });
  return h('table', { class: 'limits' },
    h('thead', {}, h('tr', {}, ...['Flavor', kind === 'cohort' ? 'Subtree quota' : 'Nominal', 'Borrowing limit', 'Lending limit', 'Used', 'Borrowed', 'Lent'].map((t) => h('th', { scope: 'col', text: t })))),
    h('tbody', {}, ...rows.map((f) => h('tr', { 'data-flavor': f.label }, h('td', { text: f.label }), cell(f.nominal), cell(f.borrowingLimit), cell(f.lendingLimit), cell(f.usage), cell(f.borrowed), cell(f.lent)))));
}
function queues(app, d) {
  const children = new Map();
  for (const c of d.cohorts) {
    const p = c.parent || '';
    if (!children.has(p)) children.set(p, []);
    children.get(p).push(c.name);
  }
  const byName = new Map(d.cohorts.map((c) => [c.name, c]));
  const cqsOf = (cohort) => d.cqs.filter((q) => (q.cohort || '') === cohort);
  const lqsOf = (cq) => d.lqs.filter((l) => l.clusterQueue === cq);
  const cqNode = (cq) => h('li', { class: 'cq', 'data-cq': cq.name },
    h('span', { class: 'kind', text: 'ClusterQueue' }), h('strong', { text: cq.name }),
    h('span', { class: 'figs', text: ` ${cq.flavors.map((f) => `${f.label}: ${fmt(f.usage, 2)} / ${fmt(f.nominal, 2)}${f.borrowed > 0 ? ` (borrowing ${fmt(f.borrowed, 2)})` : ''}`).join(' · ') || 'no GPU quota'} · ${cq.pending} pending · ${cq.admitted} admitted` }),
    ...cq.flavors.map((f) => bar(f.usage, Math.max(f.usage, f.nominal, 1), f.nominal, `${cq.name} ${f.label}: ${fmt(f.usage, 2)} of ${fmt(f.nominal, 2)}`)),
    flavorWarning(cq),
    cq.flavors.length ? limitsTable(cq.flavors, 'cq') : null,
    h('ul', {}, ...lqsOf(cq.name).map((l) => h('li', { class: 'lq' }, h('span', { class: 'kind', text: 'LocalQueue' }), `${l.namespace}/${l.name}`,
      h('span', { class: 'figs', text: Number.isFinite(l.pending) ? ` · ${l.pending} pending · ${l.admitted} admitted` : '' })))));
  const cohortNode = (name) => h('li', { class: 'cohort', 'data-cohort': name },
    h('details', { open: true }, h('summary', {}, h('span', { class: 'kind', text: 'Cohort' }), h('strong', { text: name })),
      byName.get(name) ? limitsTable(byName.get(name).flavors, 'cohort') : null,
      h('ul', {}, ...(children.get(name) || []).map(cohortNode), ...cqsOf(name).map(cqNode))));
  const knownCohorts = new Set(d.cohorts.map((c) => c.name));
  const roots = [...(children.get('') || [])];
  for (const q of d.cqs) if (q.cohort && !knownCohorts.has(q.cohort) && !roots.includes(q.cohort)) roots.push(q.cohort);
  // Keep which cohorts the user folded.
  const closed = new Set([...app.querySelectorAll('li.cohort > details:not([open])')].map((e) => e.parentElement.dataset.cohort));
  const tree = h('ul', { class: 'tree', id: 'queue-tree' }, ...roots.map(cohortNode), ...cqsOf('').map(cqNode));
  for (const e of tree.querySelectorAll('li.cohort')) if (closed.has(e.dataset.cohort)) e.firstChild.open = false;
  app.replaceChildren(section('queues', 'Cohort tree: quotas, borrowing and lending limits', tree));
  app.dataset.view = 'queues';
}

function workloads(app, d) {
  const order = { Pending: 0, Evicting: 1, Admitted: 2, Running: 3 };
  const q = state.filter.trim().toLowerCase();
  const list = [...d.workloads]
    .filter((w) => !q || `${w.key} ${w.queue} ${w.clusterQueue} ${w.phase}`.toLowerCase().includes(q))
    .sort((a, b) => (order[a.phase] ?? 9) - (order[b.phase] ?? 9) || a.created - b.created || a.key.localeCompare(b.key));
  const select = (w) => { state.selected = w.key; if (w.phase === 'Pending') fetchWhy(w.key).then(render); render(); };
  const rows = list.slice(0, MAX_ROWS).map((w) => h('tr', {
    'data-workload': w.key, class: `phase-${w.phase.toLowerCase()}${state.selected === w.key ? ' selected' : ''}`, tabindex: '0',
    onclick: (ev) => { if (!(ev.target instanceof HTMLAnchorElement)) select(w); },
    onkeydown: (ev) => { if (ev.key === 'Enter' && !(ev.target instanceof HTMLAnchorElement)) { ev.preventDefault(); select(w); } },
  },
  h('td', {}, h('a', { href: wlHref(w.key), text: w.key })), h('td', { text: w.queue }), h('td', { text: w.clusterQueue || '–' }),
  h('td', {}, h('span', { class: `phase ${w.phase.toLowerCase()}`, text: w.phase })),
  h('td', { class: 'num', text: fmt(w.gpus, 2) }), h('td', { class: 'num', text: w.priority }),
  h('td', { text: age(w.created) }),
  h('td', { class: 'reason', text: w.phase === 'Pending' ? w.reason || '…' : w.message || '' })));
  const table = h('table', { id: 'workloads-table' },
    h('caption', { class: 'sr', text: 'Workloads' }),
    h('thead', {}, h('tr', {}, ...['Workload', 'Queue', 'ClusterQueue', 'Phase', 'GPUs', 'Priority', 'Age', 'Pending reason / message'].map((t) => h('th', { scope: 'col', text: t })))),
    h('tbody', {}, ...rows));
  const more = list.length > MAX_ROWS ? h('p', { class: 'figs', id: 'more-rows', text: `Showing ${MAX_ROWS} of ${list.length}: type in the filter to narrow.` }) : null;
  const sel = d.workloads.find((w) => w.key === state.selected);
  const detail = sel ? h('div', { id: 'workload-detail', class: 'detail' },
    h('h3', {}, h('a', { href: wlHref(sel.key), text: sel.key })),
    sel.phase === 'Pending' ? h('p', { class: 'reason', id: 'why', text: `Why pending: ${whyText(state.why.get(sel.key)) || sel.reason || '…'}` }) : null,
    h('p', { class: 'figs', text: `queue ${sel.namespace}/${sel.queue} → ${sel.clusterQueue || '–'} · ${fmt(sel.gpus, 2)} GPU(s) · priority ${sel.priority}` }),
    timeline(sel)) : null;
  // The filter keeps its focus and caret across refreshes.
  let input = app.querySelector('#wl-filter');
  if (!input || app.dataset.view !== 'workloads') {
    input = h('input', { id: 'wl-filter', type: 'search', placeholder: 'namespace/name, queue, phase', value: state.filter,
      oninput: (ev) => { state.filter = ev.target.value; render(); } });
    app.replaceChildren(section('workloads', `Workloads (${d.workloads.length})`, h('label', { class: 'filter' }, 'Filter ', input), h('div', { id: 'wl-body' })));
    app.dataset.view = 'workloads';
  }
  app.querySelector('#workloads-h').textContent = `Workloads (${d.workloads.length})`;
  app.querySelector('#wl-body').replaceChildren(table, more || '', detail || '');
}

function timeline(w) {
  return h('ol', { class: 'timeline' }, ...w.timeline.map((e) => h('li', { 'data-what': e.what },
    h('time', { datetime: rfc3339(e.at), text: rfc3339(e.at) }), ` ${e.what}`, e.detail ? h('span', { class: 'figs', text: ` — ${e.detail}` }) : null)));
}

// The page of one workload: #workload/<namespace>/<name>.
function workloadPage(app, d) {
  const key = state.arg;
  const w = d.workloads.find((x) => x.key === key);
  app.dataset.view = 'workload';
  if (!w) {
    app.replaceChildren(section('workload', key, h('p', { class: 'error', id: 'wl-missing', text: `No workload ${key} that this token may see.` }), h('p', {}, h('a', { href: '#workloads', text: '← all workloads' }))));
    return;
  }
  const gpuByUuid = new Map(d.gpus.map((g) => [g.uuid, g]));
  const gname = (uuid) => {
    const g = gpuByUuid.get(uuid);
    return g ? `${g.node} GPU ${g.index} (${g.model})` : uuid;
  };
  const podRows = w.pods.map((p) => h('tr', { 'data-pod': p.name },
    h('td', { text: p.name }), h('td', { text: p.node || (p.gpus[0] && gpuByUuid.get(p.gpus[0]) ? gpuByUuid.get(p.gpus[0]).node : '–') }),
    h('td', {}, ...(p.gpus.length ? p.gpus.map((u) => h('div', { text: gname(u) })) : ['–'])),
    h('td', {}, ...(p.mig.length ? p.mig.map((m) => h('div', { class: 'mig', text: `${m.profile}${m.start !== undefined ? ` @ slot ${m.start}` : ''} on ${gname(m.gpu)}` })) : ['–'])),
    h('td', {}, ...(p.shares.length ? p.shares.map((s) => {
      const g = gpuByUuid.get(s.gpu);
      const total = g && g.memory ? g.memory / 1024 ** 2 : 0;
      return h('div', { class: 'share' }, `${fmt(s.mib)} MiB${total ? ` of ${fmt(total)} MiB` : ''}${s.cores ? `, ${s.cores}% cores` : ''} on ${gname(s.gpu)}`,
        total ? bar(s.mib, total, undefined, `memory share ${fmt(s.mib)} MiB of ${fmt(total)} MiB`) : null);
    }) : ['–'])),
    h('td', { text: p.running ? 'running' : p.exitCode !== undefined ? `exited ${p.exitCode}` : 'stopped' })));
  const why = state.why.get(key);
  const flavors = why && Array.isArray(why.flavors) ? why.flavors : [];
  const pending = w.phase === 'Pending' ? h('section', { class: 'panel', id: 'wl-why', 'aria-labelledby': 'wl-why-h' },
    h('h2', { id: 'wl-why-h', text: 'Why pending' }),
    h('p', { class: 'reason', id: 'why', text: whyText(why) || w.reason || '…' }),
    flavors.length ? h('table', { id: 'why-flavors' },
      h('caption', { class: 'sr', text: 'Every flavor tried' }),
      h('thead', {}, h('tr', {}, ...['Flavor', 'Pod set', 'Outcome', 'Resource', 'Requested', 'Available', 'Missing', 'Detail'].map((t) => h('th', { scope: 'col', text: t })))),
      h('tbody', {}, ...flavors.map((f) => h('tr', { 'data-flavor': f.flavor || '' }, ...[f.flavor, f.podSet, f.outcome, f.resource, f.requested, f.available, f.missing, f.message].map((v) => h('td', { text: v === undefined ? '–' : v })))))) : null) : null;
  const logs = state.logs.get(key);
  app.replaceChildren(
    section('workload', `Workload ${key}`,
      h('p', {}, h('a', { href: '#workloads', text: '← all workloads' })),
      h('dl', { class: 'facts' },
        ...[['Phase', w.phase], ['LocalQueue', `${w.namespace}/${w.queue}`], ['ClusterQueue', w.clusterQueue || '–'], ['GPUs', fmt(w.gpus, 2)],
          ['Priority', w.priority], ['Submitted', rfc3339(w.created)], ['Admitted', rfc3339(w.admittedAt)], ['Started', rfc3339(w.startedAt)], ['Finished', rfc3339(w.finishedAt)]]
          .flatMap(([k, v]) => [h('dt', { text: k }), h('dd', { text: v })])),
      h('h3', { text: 'Timeline' }), timeline(w)),
    pending || '',
    h('section', { class: 'panel', id: 'wl-pods', 'aria-labelledby': 'wl-pods-h' }, h('h2', { id: 'wl-pods-h', text: 'Pods and placements' }),
      w.pods.length ? h('table', { id: 'pods-table' },
        h('thead', {}, h('tr', {}, ...['Pod', 'Node', 'GPUs', 'MIG instances', 'Memory shares', 'State'].map((t) => h('th', { scope: 'col', text: t })))),
        h('tbody', {}, ...podRows)) : h('p', { class: 'figs', text: 'No pods (not admitted, or finished).' })),
    h('section', { class: 'panel', id: 'wl-logs', 'aria-labelledby': 'wl-logs-h' }, h('h2', { id: 'wl-logs-h', text: 'Logs (last 64 KiB)' }),
      h('button', { type: 'button', id: 'logs-refresh', onclick: () => fetchLogs(key).then(render) }, 'Reload logs'),
      h('pre', { id: 'logs', tabindex: '0', 'aria-label': 'pod logs', text: logs === undefined ? '…' : logs || '(empty)' })));
}

// The Nodes & GPUs map: hosts as rows of GPU tiles coloured by the team
// (namespace) using them; MIG GPUs drawn by slot (7 compute slices, 8
// memory slices); GPUs shared by memory shares as stacked bars.
function migLayout(g) {
  const memGb = g.memory / 1024 ** 3 || 80;
  const compute = h('div', { class: 'mig-row compute', role: 'img', 'aria-label': `${g.sliceUsed || 0} of 7 compute slices in use` });
  const memory = h('div', { class: 'mig-row memory', role: 'img', 'aria-label': 'memory slices (8)' });
  for (let i = 0; i < 7; i++) compute.append(h('span', { class: 'slot', style: `grid-column:${i + 1}` }));
  for (let i = 0; i < 8; i++) memory.append(h('span', { class: 'slot', style: `grid-column:${i + 1}` }));
  let next = 0;
  for (const s of [...g.slices].sort((a, b) => (a.start ?? 99) - (b.start ?? 99))) {
    const m = /^(\d+)g\.(\d+)gb/.exec(s.profile) || [];
    const gs = Number(m[1] || 1);
    const ms = Math.max(1, Math.min(8, Math.round(Number(m[2] || 10) / (memGb / 8))));
    const start = Number.isFinite(s.start) ? s.start : next;
    next = start + ms;
    const team = teamOf(s.workload) || 'other';
    const color = s.workload && s.workload !== '(other tenant)' ? teamColor(team) : '#9ca3af';
    const label = `${s.profile}${s.owner ? ` → ${s.owner}` : ' (free)'}`;
    const cstart = Math.min(start, 7 - Math.min(gs, 7));
    compute.append(h('span', { class: 'inst', title: label, style: `grid-column:${cstart + 1} / span ${Math.min(gs, 7)};background:${color}`, text: s.profile.split('.')[0] }));
    memory.append(h('span', { class: 'inst', title: label, style: `grid-column:${Math.min(start, 7) + 1} / span ${Math.min(ms, 8 - Math.min(start, 7))};background:${color}` }));
  }
  return h('div', { class: 'mig-layout' }, h('div', { class: 'mig-label', text: 'compute' }), compute, h('div', { class: 'mig-label', text: 'memory' }), memory);
}
function shareBars(g, sharesByGpu) {
  const shares = sharesByGpu.get(g.uuid) || [];
  const total = g.memory / 1024 ** 2;
  if (!shares.length || !total) return null;
  const b = h('div', { class: 'bar stacked', role: 'img', 'aria-label': `memory shares: ${shares.map((s) => `${s.who} ${fmt(s.mib)} MiB`).join(', ')} of ${fmt(total)} MiB` });
  for (const s of shares) b.append(h('div', { class: 'seg', title: `${s.who}: ${fmt(s.mib)} MiB`, style: `width:${Math.min(100, (100 * s.mib) / total)}%;background:${teamColor(teamOf(s.who))}` }));
  return h('div', { class: 'shares' }, h('div', { class: 'figs', text: `memory shares: ${shares.map((s) => `${s.who} ${fmt(s.mib)} MiB`).join(', ')}` }), b);
}
function nodes(app, d) {
  const byNode = new Map();
  for (const g of d.gpus) {
    if (!byNode.has(g.node)) byNode.set(g.node, []);
    byNode.get(g.node).push(g);
  }
  for (const n of d.nodes) if (!byNode.has(n.name)) byNode.set(n.name, []);
  const sharesByGpu = new Map();
  for (const w of d.workloads) for (const p of w.pods) for (const s of p.shares) {
    if (!sharesByGpu.has(s.gpu)) sharesByGpu.set(s.gpu, []);
    sharesByGpu.get(s.gpu).push({ who: `${w.key} (${p.name})`, mib: s.mib });
  }
  const ready = new Map(d.nodes.map((n) => [n.name, n.ready]));
  const info = new Map(d.nodes.map((n) => [n.name, n]));
  const teamsSeen = new Set();
  const tile = (g) => {
    const users = g.users.filter((u) => u.workload);
    const owners = [...new Set(users.map((u) => teamOf(u.workload) || 'other tenant'))];
    for (const s of g.slices) if (s.workload) owners.push(teamOf(s.workload) || 'other tenant');
    const busy = !!(g.owner || g.slices.some((s) => s.owner));
    const team = owners[0];
    if (busy) for (const o of owners) teamsSeen.add(o);
    const style = busy && team && !g.mig ? `border-color:${team === 'other tenant' ? '#9ca3af' : teamColor(team)};box-shadow:inset 4px 0 0 ${team === 'other tenant' ? '#9ca3af' : teamColor(team)}` : '';
    return h('div', { class: `gpu${busy ? ' busy' : ''}${g.healthy ? '' : ' unhealthy'}`, 'data-gpu': g.index, 'data-team': busy ? [...new Set(owners)].join(',') : '', title: g.uuid, style,
      role: 'group', 'aria-label': `GPU ${g.index} ${g.model}${busy ? `, used by ${[...new Set(owners)].join(', ')}` : ', free'}` },
    h('div', { class: 'gpu-head' }, h('strong', { text: `GPU ${g.index}` }), ` ${g.model}${g.mig ? ' · MIG' : ''}${g.healthy ? '' : ' · UNHEALTHY'}`),
    h('div', { class: 'figs', text: `util ${fmt(g.util)}% · mem ${bytes(g.memoryUsed)} / ${bytes(g.memory)}` }),
    bar(g.memoryUsed, g.memory, undefined, `GPU ${g.index} memory ${bytes(g.memoryUsed)} of ${bytes(g.memory)}`),
    h('div', { class: 'owner', text: g.owner ? `→ ${g.owner}` : g.slices.length ? '' : g.mig ? '' : 'free' }),
    shareBars(g, sharesByGpu),
    g.mig ? migLayout(g) : null,
    g.mig && g.sliceTotal ? h('div', { class: 'figs mig-slices', text: `${g.sliceUsed}/${g.sliceTotal} compute slices used` }) : null,
    g.slices.length ? h('ul', { class: 'slices' }, ...g.slices.map((s) => h('li', { text: `${s.profile}${s.start !== undefined ? ` @${s.start}` : ''}${s.owner ? ` → ${s.owner}` : ' (free)'}` }))) : null);
  };
  const blocks = [...byNode.entries()].map(([node, gpus]) => h('div', { class: 'node', 'data-node': node },
    h('h3', {}, node, ' ', h('span', { class: `badge ${ready.get(node) === false ? 'bad' : 'good'}`, text: ready.get(node) === false ? 'NotReady' : 'Ready' }),
      info.get(node) ? h('span', { class: 'figs', text: ` ${info.get(node).gpuMode} GPUs · ${info.get(node).gpusInUse}/${info.get(node).gpus} in use` }) : null),
    info.get(node) && info.get(node).cgroups && /not|off|unavailable|warn/i.test(info.get(node).cgroups) ? h('p', { class: 'figs note', text: info.get(node).cgroups }) : null,
    h('div', { class: 'gpus' }, ...gpus.map(tile))));
  const key = h('p', { class: 'legend', id: 'team-legend' }, ...[...teamsSeen].sort().map((t) => h('span', { class: 'key' }, h('i', { style: `background:${t === 'other tenant' ? '#9ca3af' : teamColor(t)}` }), t)));
  app.replaceChildren(section('nodes', 'Nodes and GPUs', key, ...blocks));
  app.dataset.view = 'nodes';
}

// ---- login and routing ------------------------------------------------------------
// Forget everything seen with the previous token.
function resetSession() {
  state.series.clear();
  state.historyLoaded = false;
  state.events.clear();
  state.why.clear();
  state.logs.clear();
  state.lastSeq = 0;
  state.selected = null;
  state.data = null;
  state.user = null;
}

function showLogin(message) {
  clearTimeout(state.timer);
  setConn('signed out', 'idle');
  document.getElementById('login').hidden = false;
  document.getElementById('login-error').textContent = message || '';
  document.getElementById('app').replaceChildren();
  document.getElementById('app').dataset.view = '';
  destroyCharts();
  document.getElementById('token').focus();
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
    const hash = decodeURIComponent((window.location.hash || '#teams').slice(1));
    const [view, ...rest] = hash.split('/');
    state.view = VIEWS[view] ? view : 'teams';
    state.arg = rest.join('/');
    if (state.view === 'workload' && state.data && mayRead(state.arg)) {
      fetchWorkloadExtras(state.arg).then(() => {
        const w = state.data.workloads.find((x) => x.key === state.arg);
        return w && w.phase === 'Pending' ? fetchWhy(w.key) : null;
      }).then(render).catch(() => {});
    }
    if (state.data) render();
    // Move focus to the page's heading, for keyboard and screen-reader users.
    const h2 = document.querySelector('#app h2');
    if (h2) { h2.tabIndex = -1; h2.focus({ preventScroll: true }); }
  };
  window.addEventListener('hashchange', route);
  route();
  refresh();
}

start();
