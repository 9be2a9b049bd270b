// Browser test of the Artel web UI with playwright-core and Debian's
// chromium (headless). The UI is loaded first, then the two-teams story is
// driven through the API while the page is open, so that the live charts
// record it:
//   1. team-a fills the idle pool (a-1..a-4, 1 GPU each; guarantee 2);
//   2. team-b arrives (b-1, b-2) and reclaims its guarantee: two of team-a's
//      workloads are preempted and requeued;
//   3. b-3 has to wait.
// tests/observability/web_ui_browser.sh starts arteld and runs this.
//
// Environment: UI_BASE (e.g. http://127.0.0.1:7433/ui/), ARTELD_URL,
// ADMIN_TOKEN, TEAM_A_TOKEN, TEAM_B_TOKEN, SCREENSHOT_DIR (optional),
// CHROMIUM (default /usr/bin/chromium).
// Prints one line per check and `N passed, N failed`; exit 1 on failure.
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

const env = process.env;
const base = env.UI_BASE;
const arteld = env.ARTELD_URL;
const adminToken = env.ADMIN_TOKEN;
const teamAToken = env.TEAM_A_TOKEN;
const teamBToken = env.TEAM_B_TOKEN;
const shotDir = env.SCREENSHOT_DIR;
if (!base || !arteld || !adminToken || !teamAToken || !teamBToken) {
  console.error('set UI_BASE, ARTELD_URL, ADMIN_TOKEN, TEAM_A_TOKEN and TEAM_B_TOKEN');
  process.exit(2);
}
const browser = await chromium.launch({
  executablePath: env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
         '--disable-sync', '--no-first-run'],
});

let passed = 0;
let failed = 0;
async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`PASS ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}\n  ${String(e && e.stack ? e.stack : e).split('\n').slice(0, 6).join('\n  ')}`);
  }
}

// The story's API calls (not through the browser).
async function submit(token, ns, name, gpus) {
  const res = await fetch(`${arteld}/api/v1/workloads`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({
      apiVersion: 'artel.dev/v1alpha1', kind: 'Workload', metadata: { name, namespace: ns },
      spec: { queueName: 'default', podSets: [{ name: 'main', count: 1, requests: { 'nvidia.com/gpu': String(gpus) }, command: ['sleep', '300'] }] },
    }),
  });
  assert.equal(res.status, 201, `submit ${ns}/${name}: ${res.status} ${await res.text()}`);
}

// A page that records console errors, page errors and failed API calls.
async function openPage(context) {
  const page = await context.newPage();
  page.problems = [];
  page.on('console', (m) => { if (m.type() === 'error') page.problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => page.problems.push(`pageerror: ${e.message}`));
  page.on('requestfailed', (r) => {
    // The watch stream is cut when the page closes; that is not an error.
    if (!r.url().includes('/api/v1/watch')) page.problems.push(`requestfailed: ${r.url()} ${r.failure() && r.failure().errorText}`);
  });
  page.on('response', (r) => { if (r.status() >= 400) page.problems.push(`http ${r.status()}: ${r.url()}`); });
  return page;
}
const url = (token, hash) => `${base}${token ? `?token=${encodeURIComponent(token)}` : ''}#${hash}`;
const T = 15000;
const chartSel = (team) => `figure.chart[data-team="${team}"]`;
// Waits until the team's chart shows `used` GPUs and has recorded `more`
// further points after that (so that each step of the story is visible).
async function chartReaches(page, team, used, more = 2) {
  await page.waitForFunction(([sel, u]) => Number(document.querySelector(sel)?.dataset.used) === u, [chartSel(team), used], { timeout: 30000 });
  const n = Number(await page.$eval(chartSel(team), (el) => el.dataset.points));
  await page.waitForFunction(([sel, k]) => Number(document.querySelector(sel)?.dataset.points) >= k, [chartSel(team), n + more], { timeout: 30000 });
}

// ---- admin -------------------------------------------------------------------------
const adminCtx = await browser.newContext({ viewport: { width: 1400, height: 1000 }, deviceScaleFactor: 1 });
const admin = await openPage(adminCtx);

await check('the token moves from the address to sessionStorage', async () => {
  await admin.goto(url(adminToken, 'overview'));
  await admin.waitForSelector('#overview-cards .card', { timeout: T });
  assert.ok(!admin.url().includes('token='), `token still in the URL: ${admin.url()}`);
  assert.equal(await admin.evaluate(() => sessionStorage.getItem('artel.token')), adminToken);
});

await check('the story, live: team-a fills the pool, team-b reclaims its guarantee, b-3 waits', async () => {
  await admin.goto(url(null, 'teams'));
  await chartReaches(admin, 'team-a', 0);
  await chartReaches(admin, 'team-b', 0, 0);
  for (const i of [1, 2, 3, 4]) await submit(teamAToken, 'team-a', `a-${i}`, 1);
  await chartReaches(admin, 'team-a', 4, 3);
  const d = await admin.$eval(chartSel('team-a'), (el) => ({ ...el.dataset }));
  assert.equal(Number(d.borrowed), 2, `team-a borrows 2: ${JSON.stringify(d)}`);
  await submit(teamBToken, 'team-b', 'b-1', 1);
  await submit(teamBToken, 'team-b', 'b-2', 1);
  await chartReaches(admin, 'team-b', 2, 0);
  await chartReaches(admin, 'team-a', 2, 3);
  await submit(teamBToken, 'team-b', 'b-3', 1);
  // Evictions done: no workload is still Evicting.
  await admin.goto(url(null, 'workloads'));
  await admin.waitForFunction(() => document.querySelectorAll('tr[data-workload]').length === 7 &&
    !document.querySelector('tr.phase-evicting'), null, { timeout: 30000 });
});

await check('overview: cards show GPUs in use and pending work', async () => {
  await admin.goto(url(null, 'overview'));
  await admin.waitForFunction(() => /\d+ \/ 8/.test(document.querySelector('#overview-cards')?.textContent || ''), null, { timeout: T });
  const text = await admin.textContent('#overview-cards');
  assert.match(text, /GPUs\s*4 \/ 8/, text);
  assert.match(text, /Pending\s*[1-9]/, text);
});

await check('team charts render with data (uPlot canvases, several points, guarantee drawn)', async () => {
  await admin.goto(url(null, 'teams'));
  // The history lives in the page: the charts still hold the whole story.
  for (const team of ['team-a', 'team-b']) {
    const fig = `figure.chart[data-team="${team}"]`;
    await admin.waitForSelector(`${fig} canvas`, { timeout: T });
    await admin.waitForFunction((sel) => Number(document.querySelector(sel)?.dataset.points) >= 10, fig, { timeout: T });
    const d = await admin.$eval(fig, (el) => ({ ...el.dataset }));
    assert.equal(Number(d.guarantee), 2, `${team} guarantee ${JSON.stringify(d)}`);
    assert.equal(Number(d.used), 2, `${team} used ${JSON.stringify(d)}`);
    // The canvas has drawn pixels (series lines), not just a blank plot.
    const inked = await admin.$eval(`${fig} canvas`, (c) => {
      const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 3; i < px.length; i += 4) if (px[i] > 0) n++;
      return n;
    });
    assert.ok(inked > 500, `${team} chart canvas nearly empty (${inked} px)`);
  }
  const rows = await admin.$$eval('#teams-table tbody tr', (trs) => trs.map((tr) => tr.dataset.team));
  assert.deepEqual(rows.sort(), ['team-a', 'team-b']);
});

await check('screenshot of the teams view for the docs', async () => {
  if (!shotDir) return;
  fs.mkdirSync(shotDir, { recursive: true });
  await admin.screenshot({ path: path.join(shotDir, 'ui.png'), fullPage: true });
});

await check('queues and cohorts tree: cohort shared with both teams and their LocalQueues', async () => {
  await admin.goto(url(null, 'queues'));
  await admin.waitForSelector('#queue-tree li.cohort[data-cohort="shared"]', { timeout: T });
  const cqs = await admin.$$eval('li.cohort[data-cohort="shared"] li.cq', (els) => els.map((e) => e.dataset.cq).sort());
  assert.deepEqual(cqs, ['team-a', 'team-b']);
  const text = await admin.textContent('#queue-tree');
  assert.match(text, /team-a\/default/);
  assert.match(text, /team-b\/default/);
});

await check('workloads: b-3 is pending with its reason; a-* and b-* are listed', async () => {
  await admin.goto(url(null, 'workloads'));
  const row = 'tr[data-workload="team-b/b-3"]';
  await admin.waitForSelector(row, { timeout: T });
  assert.equal((await admin.textContent(`${row} .phase`)).trim(), 'Pending');
  const reason = (await admin.textContent(`${row} td.reason`)).trim();
  assert.ok(reason.length > 10 && reason !== '…', `pending reason: "${reason}"`);
  const keys = await admin.$$eval('tr[data-workload]', (trs) => trs.map((t) => t.dataset.workload));
  for (const k of ['team-a/a-1', 'team-a/a-4', 'team-b/b-1', 'team-b/b-2']) assert.ok(keys.includes(k), `${k} missing from ${keys}`);
});

await check('workload detail: why pending and a timeline', async () => {
  await admin.click('tr[data-workload="team-b/b-3"]');
  await admin.waitForSelector('#workload-detail #why', { timeout: T });
  await admin.waitForFunction(() => !/…$/.test(document.querySelector('#why').textContent), null, { timeout: T });
  assert.match(await admin.textContent('#why'), /Why pending: \S+/);
  const steps = await admin.$$eval('#workload-detail .timeline li', (lis) => lis.map((l) => l.textContent));
  assert.ok(steps.some((s) => /Submitted/.test(s)), `timeline: ${steps}`);
  if (shotDir) await admin.screenshot({ path: path.join(shotDir, 'ui-workloads.png'), fullPage: true });
  // Two of team-a's workloads were preempted and requeued: their timelines
  // show the eviction by team-b.
  const requeued = await admin.$$eval('tr[data-workload^="team-a/"].phase-pending', (trs) => trs.map((t) => t.dataset.workload));
  assert.equal(requeued.length, 2, `requeued team-a workloads: ${requeued}`);
  await admin.click(`tr[data-workload="${requeued[0]}"]`);
  await admin.waitForFunction(() => /Evicted[^]*InCohortReclamation/.test(document.querySelector('#workload-detail')?.textContent || ''), null, { timeout: T });
  const evSteps = await admin.$$eval('#workload-detail .timeline li', (lis) => lis.map((l) => l.textContent));
  assert.ok(evSteps.some((x) => /Admitted/.test(x)) && evSteps.some((x) => /Requeued/.test(x)), `timeline: ${evSteps}`);
});

await check('nodes and GPUs: 8 GPUs, 4 assigned', async () => {
  await admin.goto(url(null, 'nodes'));
  await admin.waitForSelector('.node .gpu', { timeout: T });
  assert.equal(await admin.$$eval('.node .gpu', (g) => g.length), 8);
  assert.equal(await admin.$$eval('.node .gpu.busy', (g) => g.length), 4);
});

await check('a flavor that matches no node pool is flagged in overview, teams and queues', async () => {
  const ghost = [
    'apiVersion: kueue.x-k8s.io/v1beta2', 'kind: ResourceFlavor', 'metadata: {name: ghost}', 'spec:', '  nodeLabels: {artel.dev/node-pool: ghost}', '---',
    'apiVersion: kueue.x-k8s.io/v1beta2', 'kind: ClusterQueue', 'metadata: {name: ghost-queue}', 'spec:', '  namespaceSelector: {}', '  resourceGroups:',
    '    - coveredResources: [nvidia.com/gpu]', '      flavors:', '        - name: ghost', '          resources: [{name: nvidia.com/gpu, nominalQuota: 1}]', ''].join('\n');
  const res = await fetch(`${arteld}/api/v1/apply`, { method: 'POST', headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/yaml' }, body: ghost });
  assert.equal(res.status, 200, `apply: ${res.status} ${await res.text()}`);
  await admin.goto(url(null, 'teams'));
  await admin.waitForSelector('tr[data-team="ghost-queue"] .flavor-warning[data-flavors-without-nodes="ghost"]', { timeout: T });
  assert.equal(await admin.$$eval('.flavor-warning', (w) => w.length), 1);
  await admin.goto(url(null, 'queues'));
  await admin.waitForSelector('li[data-cq="ghost-queue"] .flavor-warning', { timeout: T });
  await admin.goto(url(null, 'overview'));
  await admin.waitForSelector('.card.warn[data-flavors-without-nodes="ghost"]', { timeout: T });
});

await check('charts open with arteld\'s history (GET /api/v1/history), per cohort and per ClusterQueue', async () => {
  // A fresh page: its first drawing already holds points from before it was opened.
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const p = await openPage(ctx);
  const opened = Date.now() / 1000;
  await p.goto(url(adminToken, 'teams'));
  await p.waitForSelector('figure.chart[data-cohort="shared"] canvas', { timeout: T });
  await p.waitForSelector(`${chartSel('team-a')} canvas`, { timeout: T });
  const d = await p.$eval(chartSel('team-a'), (el) => ({ ...el.dataset }));
  assert.ok(Number(d.points) >= 10, `history points at first paint: ${JSON.stringify(d)}`);
  assert.ok(Number(d.since) < opened - 10, `the chart starts at ${d.since}, the page opened at ${opened}`);
  const c = await p.$eval('#cohort-charts-box figure.chart[data-cohort="shared"]', (el) => ({ ...el.dataset }));
  assert.equal(Number(c.guarantee), 4, `cohort shared guarantees 4 a100 GPUs: ${JSON.stringify(c)}`);
  assert.equal(Number(c.used), 4, JSON.stringify(c));
  assert.ok(await p.$('#cohorts-table tr[data-cohort="shared"][data-flavor="a100"]'), 'cohort row');
  assert.match(await p.getAttribute('#cohort-charts-box figure.chart[data-cohort="shared"]', 'aria-label'), /shared · a100: 4 used, 4 guaranteed/);
  // Per GPU product: arteld names a100's product (its fake A100-80GB pool); no range selector without Prometheus.
  const prod = await p.$eval('#products-table tr[data-cohort="shared"][data-product="NVIDIA-A100-SXM4-80GB"]',
    (tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent));
  assert.deepEqual(prod.slice(0, 3), ['NVIDIA-A100-SXM4-80GB', 'a100', '4'], `product row: ${prod}`);
  // ... and over time: a chart of the product's flavors summed, opened with history.
  const pc = await p.$eval('#product-charts-box figure.chart[data-cohort="shared"][data-product="NVIDIA-A100-SXM4-80GB"]',
    (el) => ({ ...el.dataset }));
  assert.equal(Number(pc.guarantee), 4, `product chart: ${JSON.stringify(pc)}`);
  assert.ok(Number(pc.points) >= 10, `product chart history points: ${JSON.stringify(pc)}`);
  assert.equal(await p.$('#history-range'), null, 'no range selector without --prometheus-url');
  assert.deepEqual(p.problems, []);
  await ctx.close();
});

await check('history API: bounded series of GPU flavors, bad since refused', async () => {
  const get = (q, tok = adminToken) => fetch(`${arteld}/api/v1/history${q}`, { headers: { Authorization: `Bearer ${tok}` } });
  const r = await get('');
  assert.equal(r.status, 200);
  const h = await r.json();
  assert.equal(h.intervalSeconds, 1);
  const names = h.series.map((x) => `${x.kind}/${x.name}/${x.flavor}/${x.resource}`).sort();
  assert.ok(names.includes('ClusterQueue/team-a/a100/nvidia.com/gpu') && names.includes('Cohort/shared/a100/nvidia.com/gpu'), names.join(' '));
  assert.ok(h.series.every((x) => x.resource.startsWith('nvidia.com/')), 'only GPU resources');
  const a = h.series.find((x) => x.kind === 'ClusterQueue' && x.name === 'team-a');
  assert.ok(Math.max(...a.borrowed) >= 2, `team-a borrowed during the story: ${a.borrowed}`);
  const b = h.series.find((x) => x.kind === 'ClusterQueue' && x.name === 'team-b');
  assert.ok(Math.max(...b.lent) >= 1, `team-b lent while team-a borrowed: ${b.lent}`);
  const bad = await get('?since=yesterday');
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).field, 'since');
  const since = a.t[a.t.length - 1];
  const later = await (await get(`?since=${since}`)).json();
  const la = later.series.find((x) => x.kind === 'ClusterQueue' && x.name === 'team-a');
  assert.ok(la.t.length >= 1 && la.t.length < a.t.length && la.t.every((t) => t >= since), `since= keeps the later points only: ${la.t}`);
});

await check('workload page: timeline with the preemptor, placements, why pending across flavors, logs', async () => {
  const requeued = await (await fetch(`${arteld}/api/v1/namespaces/team-a/workloads`, { headers: { Authorization: `Bearer ${adminToken}` } })).json();
  const evicted = requeued.items.find((w) => w.status && w.status.lastEviction);
  assert.ok(evicted, 'a team-a workload was evicted');
  await admin.goto(url(null, `workload/team-a/${evicted.metadata.name}`));
  await admin.waitForFunction(() => /Evicted[^]*by team-b\/b-\d/.test(document.querySelector('#workload .timeline')?.textContent || ''), null, { timeout: T });
  const running = requeued.items.find((w) => w.status && w.status.phase === 'Running');
  await admin.goto(url(null, `workload/team-a/${running.metadata.name}`));
  await admin.waitForSelector('#pods-table tbody tr[data-pod]', { timeout: T });
  assert.match(await admin.textContent("#pods-table"), /GPU \d+ \(/);
  await admin.waitForFunction(() => document.querySelector('#logs') && document.querySelector('#logs').textContent !== '…', null, { timeout: T });
  assert.doesNotMatch(await admin.textContent('#logs'), /no logs: HTTP/);
  await admin.goto(url(null, 'workload/team-b/b-3'));
  await admin.waitForSelector('#wl-why #why', { timeout: T });
  await admin.waitForFunction(() => !/…$/.test(document.querySelector('#why').textContent), null, { timeout: T });
  assert.ok(await admin.$$eval('#why-flavors tbody tr', (r) => r.length) >= 1, 'every flavor tried is listed');
  if (shotDir) await admin.screenshot({ path: path.join(shotDir, 'ui-workload.png'), fullPage: true });
});

await check('nodes map: GPUs coloured by team, a legend of teams', async () => {
  await admin.goto(url(null, 'nodes'));
  await admin.waitForSelector('.gpu.busy[data-team]', { timeout: T });
  const teamsOn = await admin.$$eval('.gpu.busy', (g) => g.map((x) => x.dataset.team).sort());
  assert.deepEqual([...new Set(teamsOn)], ['team-a', 'team-b'], teamsOn.join(','));
  assert.match(await admin.textContent('#team-legend'), /team-a[^]*team-b/);
});

await check('cohort tree: quotas and limits per flavor', async () => {
  await admin.goto(url(null, 'queues'));
  await admin.waitForSelector('li.cohort[data-cohort="shared"] table.limits tr[data-flavor="a100"]', { timeout: T });
  const row = await admin.$$eval('li.cq[data-cq="team-a"] table.limits tr[data-flavor="a100"] td', (tds) => tds.map((t) => t.textContent));
  assert.equal(row[1], '2', `team-a nominal: ${row}`);
});

await check('keyboard: nav links, a workload row and its link work without a mouse; controls are labelled', async () => {
  await admin.goto(url(null, 'teams'));
  await admin.waitForSelector('#teams-table tbody tr', { timeout: T });
  // Tab from the top of the page to the Workloads link, then Enter.
  await admin.evaluate(() => document.activeElement && document.activeElement.blur());
  for (let i = 0; i < 12; i++) {
    await admin.keyboard.press('Tab');
    if (await admin.evaluate(() => document.activeElement && document.activeElement.getAttribute('href') === '#workloads')) break;
  }
  assert.equal(await admin.evaluate(() => document.activeElement.getAttribute('href')), '#workloads');
  await admin.keyboard.press('Enter');
  await admin.waitForSelector('tr[data-workload="team-b/b-3"]', { timeout: T });
  assert.equal(await admin.getAttribute('#nav a[href="#workloads"]', 'aria-current'), 'page');
  await admin.focus('tr[data-workload="team-b/b-3"]');
  await admin.keyboard.press('Enter');
  await admin.waitForSelector('#workload-detail', { timeout: T });
  await admin.focus('tr[data-workload="team-b/b-3"] a');
  await admin.keyboard.press('Enter');
  await admin.waitForSelector('#wl-why', { timeout: T });
  // Labels: the filter, the nav, every chart.
  await admin.goto(url(null, 'workloads'));
  await admin.waitForSelector('#wl-filter', { timeout: T });
  assert.equal(await admin.$eval('#wl-filter', (i) => i.labels.length), 1);
  await admin.fill('#wl-filter', 'b-3');
  await admin.waitForFunction(() => document.querySelectorAll('tr[data-workload]').length === 1, null, { timeout: T });
  assert.equal(await admin.getAttribute('#nav', 'aria-label'), 'Views');
  await admin.goto(url(null, 'teams'));
  await admin.waitForSelector('figure.chart', { timeout: T });
  assert.ok(await admin.$$eval('figure.chart', (f) => f.every((x) => /used/.test(x.getAttribute('aria-label') || ''))), 'every chart has a label');
});

await check('admin page: no console errors, page errors or failed requests', async () => {
  assert.deepEqual(admin.problems, []);
});
await adminCtx.close();

// ---- tenant team-a -------------------------------------------------------------------
const tenantCtx = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
const tenant = await openPage(tenantCtx);
await check('tenant team-a sees only team-a workloads', async () => {
  await tenant.goto(url(teamAToken, 'workloads'));
  await tenant.waitForSelector('tr[data-workload]', { timeout: T });
  const keys = await tenant.$$eval('tr[data-workload]', (trs) => trs.map((t) => t.dataset.workload));
  assert.ok(keys.length >= 4, `keys: ${keys}`);
  assert.ok(keys.every((k) => k.startsWith('team-a/')), `tenant sees ${keys}`);
  for (const view of ['overview', 'teams', 'queues', 'nodes', 'workloads']) {
    await tenant.goto(url(null, view));
    await tenant.waitForSelector('#app section', { timeout: T });
    const text = await tenant.textContent('#app');
    assert.ok(!/team-b\/b-\d/.test(text), `${view} view shows a team-b workload`);
  }
  const who = await tenant.evaluate(() => sessionStorage.getItem('artel.token'));
  assert.equal(who, teamAToken);
});
await check('tenant team-a: its workload page names no team-b workload; team-b pages are refused', async () => {
  const mine = await (await fetch(`${arteld}/api/v1/namespaces/team-a/workloads`, { headers: { Authorization: `Bearer ${teamAToken}` } })).json();
  const evicted = mine.items.find((w) => w.status && w.status.lastEviction);
  await tenant.goto(url(null, `workload/team-a/${evicted.metadata.name}`));
  await tenant.waitForFunction(() => /Evicted/.test(document.querySelector('#workload .timeline')?.textContent || ''), null, { timeout: T });
  const text = await tenant.textContent('#app');
  assert.ok(!/team-b\/b-\d/.test(text), `tenant sees a team-b name: ${text}`);
  assert.match(text, /by a workload in ClusterQueue team-b/);
  await tenant.goto(url(null, 'workload/team-b/b-1'));
  await tenant.waitForSelector('#wl-missing', { timeout: T });
  // The history is the same for everyone: queue and cohort names, no workloads.
  const h = await (await fetch(`${arteld}/api/v1/history`, { headers: { Authorization: `Bearer ${teamAToken}` } })).json();
  assert.ok(!/b-\d|a-\d/.test(JSON.stringify(h)), 'no workload names in the history');
  // The page knows the caller: it asks nothing about team-b (no 403s; checked below).
});
await check('tenant page: no console errors, page errors or failed requests', async () => {
  assert.deepEqual(tenant.problems, []);
});
await tenantCtx.close();

// ---- a wrong token -------------------------------------------------------------------
const badCtx = await browser.newContext();
const bad = await openPage(badCtx);
await check('a wrong token gets the sign-in form, not data', async () => {
  await bad.goto(url('not-a-valid-token', 'workloads'));
  await bad.waitForSelector('#login:not([hidden])', { timeout: T });
  assert.match(await bad.textContent('#login-error'), /not accepted/);
  assert.equal(await bad.$$eval('tr[data-workload]', (t) => t.length), 0);
  // The only problems are the expected 401 answers.
  const other = bad.problems.filter((p) => !/401/.test(p));
  assert.deepEqual(other, []);
});
await badCtx.close();
await browser.close();

console.log(`\n${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
