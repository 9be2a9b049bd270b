// Benchmark: first paint of the web UI with many workloads (issue 16: under
// 1 s with 10,000). The UI (web/dist) is served with the fixed data of
// web/tests/fixture-server.mjs, N workloads, to Debian's headless chromium
// (playwright-core from web/node_modules). For each run, a fresh browser
// context loads a page and the time from navigation start until the page
// shows its data is read from the page's own clock (performance.now(), set
// by a MutationObserver when the marker element appears):
//   teams       the Teams view (charts with history + tables)
//   workloads   the Workloads view (table, first 500 rows of N)
//   workload    one workload's page
// Prints the median and the worst of RUNS runs, in ms, and the part after
// DOMContentLoaded (the UI's own fetch, parse and draw).
//
//   cd web && node ../bench/ui_first_paint.mjs [WORKLOADS=10000] [RUNS=5]
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const web = path.join(here, '..', 'web');
const require = createRequire(path.join(web, 'package.json'));
const { chromium } = require('playwright-core');
const { startFixtureServer } = await import(pathToFileURL(path.join(web, 'tests', 'fixture-server.mjs')).href);

const n = Number(process.argv[2] || 10000);
const runs = Number(process.argv[3] || 5);
const { server, url } = await startFixtureServer(n);
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true, args: ['--headless', '--no-sandbox', '--disable-gpu'] });

const PAGES = { teams: ['teams', '#teams-table tbody tr'], workloads: ['workloads', '#workloads-table tbody tr'], workload: ['workload/team-nlp/big-sweep', '#why-flavors tbody tr'] };
console.log(`web UI first paint, ${n} workloads, ${runs} runs each (ms from navigation start to data on screen)`);
for (const [name, [hash, marker]] of Object.entries(PAGES)) {
  const times = [];
  for (let i = 0; i < runs; i++) {
    const ctx = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    const page = await ctx.newPage();
    await page.addInitScript((sel) => {
      new MutationObserver((_, obs) => {
        if (document.querySelector(sel)) {
          // The next frame: the rows are laid out and painted.
          requestAnimationFrame(() => { window.__painted = performance.now(); });
          obs.disconnect();
        }
      }).observe(document, { childList: true, subtree: true });
    }, marker);
    await page.goto(`${url}/ui/#${hash}`);
    await page.waitForFunction(() => window.__painted !== undefined, null, { timeout: 30000 });
    times.push(await page.evaluate(() => [window.__painted, performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd,
      ...['artel:fetched', 'artel:normalized', 'artel:drawn'].map((m) => (performance.getEntriesByName(m)[0] || {}).startTime)]));
    if (process.env.VERBOSE) console.log(name, times[times.length - 1].map((x) => Math.round(x)).join(' '));
    await ctx.close();
  }
  const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const total = times.map((t) => t[0]), app = times.map((t) => t[0] - t[1]);
  console.log(`${name.padEnd(10)} median ${med(total).toFixed(0).padStart(5)}  worst ${Math.max(...total).toFixed(0).padStart(5)}` +
    `   (of which after DOMContentLoaded, fetch + parse + draw: median ${med(app).toFixed(0).padStart(5)}  worst ${Math.max(...app).toFixed(0).padStart(5)})`);
}
await browser.close();
server.closeAllConnections();
server.close();
