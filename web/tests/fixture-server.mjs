// A fixed-data stand-in for arteld's API, for the UI's screenshot test
// (visual-test.mjs) and first-paint benchmark (bench/ui_first_paint.mjs):
// deterministic data at a fixed instant (FIXTURE_NOW), so that two runs draw
// the same pixels. It serves web/dist at /ui/ and the /api/v1 endpoints the
// UI reads, shaped as docs/api.md documents them. The functional browser
// test (ui-test.mjs) runs against a real arteld instead.
//
//   node tests/fixture-server.mjs [WORKLOADS] [PORT]
// Prints "listening on http://127.0.0.1:PORT" when ready.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const FIXTURE_NOW = Date.UTC(2026, 11, 2, 12, 0, 0);
const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.join(here, '..', 'dist');
const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.txt': 'text/plain; charset=utf-8' };
const CSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; base-uri 'none'; frame-ancestors 'none'";
const GPU = 'nvidia.com/gpu';
const MIG = 'nvidia.com/mig-1g.10gb';
const GiB = 1024 ** 3;

const res = (flavor, resource, nominal, usage, extra = {}) => ({ flavor, resource, nominal: String(nominal), usage: String(usage), borrowed: String(Math.max(0, usage - nominal)), ...extra });

export function makeFixture(nWorkloads = 40) {
  const t0 = FIXTURE_NOW;
  const cqs = [
    { name: 'nlp-prod', cohort: 'nlp', resources: [res('h100', GPU, 4, 6, { borrowingLimit: '4' })] },
    { name: 'nlp-dev', cohort: 'nlp', resources: [res('h100', GPU, 2, 0, { lendingLimit: '2' })] },
    { name: 'vision', cohort: 'vision', resources: [res('h100', GPU, 2, 2), res('a100-mig', MIG, 14, 5)] },
  ].map((q) => ({ ...q, pendingWorkloads: 0, admittedWorkloads: 0, flavorsWithoutNodes: [], warnings: [], stopPolicy: 'None' }));
  const cohorts = [
    { name: 'org', parent: '', members: ['nlp', 'vision'], resources: [{ flavor: 'h100', resource: GPU, nominal: '0', subtreeQuota: '8', usage: '8', borrowed: '0' }, { flavor: 'a100-mig', resource: MIG, nominal: '0', subtreeQuota: '14', usage: '5', borrowed: '0' }] },
    { name: 'nlp', parent: 'org', members: ['nlp-prod', 'nlp-dev'], resources: [{ flavor: 'h100', resource: GPU, nominal: '0', subtreeQuota: '6', usage: '6', borrowed: '0' }] },
    { name: 'vision', parent: 'org', members: ['vision'], resources: [{ flavor: 'h100', resource: GPU, nominal: '0', subtreeQuota: '2', usage: '2', borrowed: '0' }, { flavor: 'a100-mig', resource: MIG, nominal: '0', subtreeQuota: '14', usage: '5', borrowed: '0' }] },
  ];
  const lqs = [
    { namespace: 'team-nlp', name: 'prod', clusterQueue: 'nlp-prod' }, { namespace: 'team-nlp', name: 'dev', clusterQueue: 'nlp-dev' },
    { namespace: 'team-vision', name: 'default', clusterQueue: 'vision' },
  ];
  // History: 120 points a minute apart, ending 30 s before now; smooth and deterministic.
  const hist = [];
  const T = Array.from({ length: 120 }, (_, i) => (t0 - 30000) / 1000 - (119 - i) * 60);
  const wave = (i, a, b, p) => Math.max(0, Math.round(a + b * Math.sin(i / p)));
  const mk = (kind, name, parent, flavor, resource, nominal, used) => {
    const u = T.map((_, i) => used(i));
    hist.push({ kind, name, [kind === 'Cohort' ? 'parent' : 'cohort']: parent, flavor, resource, t: T, nominal: T.map(() => nominal), used: u,
      borrowed: u.map((x) => Math.max(0, x - nominal)), lent: u.map(() => 0) });
  };
  mk('ClusterQueue', 'nlp-prod', 'nlp', 'h100', GPU, 4, (i) => wave(i, 4, 2, 9));
  mk('ClusterQueue', 'nlp-dev', 'nlp', 'h100', GPU, 2, (i) => wave(i, 1, 1, 5));
  mk('ClusterQueue', 'vision', 'vision', 'h100', GPU, 2, (i) => wave(i, 2, 1, 7));
  mk('ClusterQueue', 'vision', 'vision', 'a100-mig', MIG, 14, (i) => wave(i, 5, 3, 11));
  mk('Cohort', 'nlp', 'org', 'h100', GPU, 6, (i) => wave(i, 5, 2, 9));
  mk('Cohort', 'vision', 'org', 'h100', GPU, 2, (i) => wave(i, 2, 1, 7));
  mk('Cohort', 'vision', 'org', 'a100-mig', MIG, 14, (i) => wave(i, 5, 3, 11));
  mk('Cohort', 'org', '', 'h100', GPU, 8, (i) => wave(i, 7, 1, 6));
  mk('Cohort', 'org', '', 'a100-mig', MIG, 14, (i) => wave(i, 5, 3, 11));

  const gpus = [];
  for (let i = 0; i < 8; i++) {
    const owner = i < 6 ? (i < 4 ? 'team-nlp/train-llm' : i < 6 ? 'team-nlp/finetune' : '') : i === 6 ? 'team-vision/detector' : '';
    const g = { index: i, uuid: `GPU-h100-${i}`, model: 'H100-80GB', name: 'NVIDIA H100 80GB HBM3', memoryBytes: 80 * GiB, migEnabled: false, healthy: true, node: 'gpu-host-1',
      utilizationPercent: owner ? 60 + i * 4 : 0, memoryUsedBytes: owner ? (40 + i * 3) * GiB : 0 };
    if (owner) Object.assign(g, { workload: owner, pod: 'main-0' });
    gpus.push(g);
  }
  gpus[7].users = [{ workload: 'team-vision/notebook-a', pod: 'main-0' }, { workload: 'team-nlp/eval', pod: 'main-0' }];
  Object.assign(gpus[7], { workload: 'team-vision/notebook-a', pod: 'main-0', utilizationPercent: 35, memoryUsedBytes: 36 * GiB });
  for (let i = 0; i < 2; i++) {
    const inst = i === 0
      ? [0, 1, 2, 3, 4].map((s) => ({ profile: '1g.10gb', start: s, uuid: `MIG-${i}-${s}`, workload: 'team-vision/mig-sweep', pod: `main-${s}` }))
      : [];
    gpus.push({ index: i, uuid: `GPU-a100-${i}`, model: 'A100-80GB', name: 'NVIDIA A100 80GB', memoryBytes: 80 * GiB, migEnabled: true, healthy: true, node: 'gpu-host-2',
      utilizationPercent: 0, memoryUsedBytes: 0, migSlices: { total: 7, used: inst.length, instances: inst } });
  }
  const nodes = [
    { name: 'gpu-host-1', ready: true, gpuMode: 'fake', gpus: 8, gpusInUse: 8, cgroups: 'cgroup v2' },
    { name: 'gpu-host-2', ready: true, gpuMode: 'fake', gpus: 2, gpusInUse: 1, cgroups: 'cgroup v2' },
  ];

  const wl = (ns, name, queue, cq, phase, gpusN, minutesAgo, extra = {}) => ({
    metadata: { namespace: ns, name, creationTimestamp: new Date(t0 - minutesAgo * 60000).toISOString() },
    spec: { queueName: queue, podSets: [{ name: 'main', count: 1, requests: { [GPU]: String(gpusN) } }] },
    status: { phase, clusterQueue: cq, priority: 0, ...extra },
  });
  const admitted = (min) => ({ admittedAt: t0 - min * 60000, startedAt: t0 - min * 60000 + 2000 });
  const workloads = [
    wl('team-nlp', 'train-llm', 'prod', 'nlp-prod', 'Running', 4, 90, { ...admitted(88), pods: [{ name: 'main-0', running: true, node: 'gpu-host-1', gpus: ['GPU-h100-0', 'GPU-h100-1', 'GPU-h100-2', 'GPU-h100-3'] }] }),
    wl('team-nlp', 'finetune', 'prod', 'nlp-prod', 'Running', 2, 40, { ...admitted(39), pods: [{ name: 'main-0', running: true, node: 'gpu-host-1', gpus: ['GPU-h100-4', 'GPU-h100-5'] }] }),
    wl('team-vision', 'detector', 'default', 'vision', 'Running', 1, 35, { ...admitted(29), lastEviction: { reason: 'InCohortReclamation', time: t0 - 31 * 60000, preemptorClusterQueue: 'nlp-prod' },
      pods: [{ name: 'main-0', running: true, node: 'gpu-host-1', gpus: ['GPU-h100-6'] }] }),
    wl('team-vision', 'notebook-a', 'default', 'vision', 'Running', 0, 20, { ...admitted(20), pods: [{ name: 'main-0', running: true, node: 'gpu-host-1', memoryShares: [{ gpuIndex: 7, memoryMiB: 20480, corePercent: 50, gpu: 'GPU-h100-7' }] }] }),
    wl('team-nlp', 'eval', 'dev', 'nlp-dev', 'Running', 0, 15, { ...admitted(15), pods: [{ name: 'main-0', running: true, node: 'gpu-host-1', memoryShares: [{ gpuIndex: 7, memoryMiB: 16384, corePercent: 30, gpu: 'GPU-h100-7' }] }] }),
    wl('team-vision', 'mig-sweep', 'default', 'vision', 'Running', 0, 10, { ...admitted(10),
      pods: [0, 1, 2, 3, 4].map((s) => ({ name: `main-${s}`, running: true, node: 'gpu-host-2', migSlices: [{ profile: '1g.10gb', gpu: 'GPU-a100-0', start: s, uuid: `MIG-0-${s}` }] })) }),
    wl('team-nlp', 'big-sweep', 'prod', 'nlp-prod', 'Pending', 4, 5, { pending: { reason: 'InsufficientQuota', message: 'h100: nvidia.com/gpu requested 4, available 0 (borrowing limit reached)' } }),
  ];
  const phases = ['Succeeded', 'Pending', 'Failed', 'Succeeded'];
  for (let i = workloads.length; i < nWorkloads; i++) {
    const ns = i % 2 ? 'team-nlp' : 'team-vision';
    const phase = phases[i % phases.length];
    workloads.push(wl(ns, `job-${String(i).padStart(5, '0')}`, ns === 'team-nlp' ? 'dev' : 'default', ns === 'team-nlp' ? 'nlp-dev' : 'vision', phase, 1 + (i % 3), 200 + i,
      phase === 'Pending' ? { pending: { reason: 'InsufficientQuota', message: `h100: nvidia.com/gpu requested ${1 + (i % 3)}, available 0` } } : { finishedAt: t0 - i * 1000, exitCode: phase === 'Failed' ? 1 : 0 }));
  }
  for (const q of cqs) {
    q.pendingWorkloads = workloads.filter((w) => w.status.clusterQueue === q.name && w.status.phase === 'Pending').length;
    q.admittedWorkloads = workloads.filter((w) => w.status.clusterQueue === q.name && w.status.phase === 'Running').length;
  }
  const events = [
    { seq: 1, type: 'Submitted', workload: 'team-vision/detector', time: t0 - 35 * 60000 },
    { seq: 2, type: 'Admitted', workload: 'team-vision/detector', clusterQueue: 'vision', time: t0 - 34 * 60000 },
    { seq: 3, type: 'Evicted', workload: 'team-vision/detector', reason: 'InCohortReclamation', preemptorClusterQueue: 'nlp-prod', time: t0 - 31 * 60000 },
    { seq: 4, type: 'Requeued', workload: 'team-vision/detector', time: t0 - 31 * 60000 + 3000 },
    { seq: 5, type: 'Admitted', workload: 'team-vision/detector', clusterQueue: 'vision', time: t0 - 29 * 60000 },
    { seq: 6, type: 'Started', workload: 'team-vision/detector', time: t0 - 29 * 60000 + 2000 },
  ];
  const why = {
    reason: 'InsufficientQuota', message: 'no flavor fits: flavors tried: h100 (borrowing limit reached)',
    flavors: [{ flavor: 'h100', podSet: 'main', outcome: 'NoFit', resource: GPU, requested: '4', available: '0', maxAvailable: '4', missing: '4', message: 'borrowing limit 4 of nlp-prod reached' }],
  };
  return {
    clusterqueues: { kind: 'ClusterQueueList', items: cqs }, cohorts: { kind: 'CohortList', items: cohorts },
    localqueues: { kind: 'LocalQueueList', items: lqs }, workloads: { kind: 'WorkloadList', items: workloads },
    nodes: { kind: 'NodeList', items: nodes, flavorProducts: { h100: 'NVIDIA-H100-80GB-HBM3', 'a100-mig': 'NVIDIA-A100-SXM4-80GB' } }, gpus: { kind: 'GpuList', mode: 'fake', items: gpus },
    whoami: { user: 'admin', role: 'admin', namespaces: [] },
    history: { kind: 'UsageHistory', source: 'ring', prometheus: true, ringSeconds: 7200, intervalSeconds: 60, capacity: 120, series: hist },
    // history?range=7d as arteld answers it from Prometheus: the same series over 7 days, hourly.
    history7d: { kind: 'UsageHistory', source: 'prometheus', prometheus: true, ringSeconds: 7200, intervalSeconds: 3600,
      series: hist.map((s) => ({ ...s, t: s.t.map((_, i) => (t0 - 30000) / 1000 - (119 - i) * 3600 * 1.4) })) },
    events: { kind: 'EventList', items: events, next: 7 }, why,
  };
}

export function startFixtureServer(nWorkloads = 40, port = 0) {
  const fx = makeFixture(nWorkloads);
  const bodies = Object.fromEntries(Object.entries(fx).map(([k, v]) => [k, JSON.stringify(v)]));
  const server = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://x');
    if (u.pathname === '/ui' || u.pathname === '/') { res.writeHead(301, { Location: '/ui/' + u.search }); return res.end(); }
    if (u.pathname.startsWith('/ui/')) {
      let name = u.pathname.slice(4) || 'index.html';
      if (!/^[A-Za-z0-9_.-]+$/.test(name) || !fs.existsSync(path.join(dist, name))) name = 'index.html';
      res.writeHead(200, { 'Content-Type': TYPES[path.extname(name)] || 'application/octet-stream', 'Content-Security-Policy': CSP, 'Cache-Control': 'no-cache' });
      return res.end(fs.readFileSync(path.join(dist, name)));
    }
    const p = u.pathname.replace(/^\/api\/v1\//, '');
    const json = (body) => { res.writeHead(200, { 'Content-Type': 'application/json' }); res.end(body); };
    if (p === 'watch') {
      if (u.searchParams.get('follow') === 'false') return json(bodies.events);
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      return res.write(': keep-alive\n\n'); // held open, like arteld's stream
    }
    if (p === 'history' && u.searchParams.get('range') === '7d') return json(bodies.history7d);
    if (p === 'history7d') return json('{}');
    if (bodies[p]) return json(bodies[p]);
    if (/\/why$/.test(p)) return json(bodies.why);
    if (/\/logs$/.test(p)) { res.writeHead(200, { 'Content-Type': 'text/plain' }); return res.end('step 1/100 loss=2.31\nstep 2/100 loss=2.12\n'); }
    const m = /^namespaces\/([^/]+)\/workloads\/([^/]+)$/.exec(p);
    if (m) {
      const w = fx.workloads.items.find((x) => x.metadata.namespace === m[1] && x.metadata.name === m[2]);
      if (w) return json(JSON.stringify(w));
    }
    res.writeHead(404, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ code: 'NotFound', message: 'no such endpoint' }));
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${server.address().port}` })));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { url } = await startFixtureServer(Number(process.argv[2] || 40), Number(process.argv[3] || 0));
  console.log(`listening on ${url}`);
}
