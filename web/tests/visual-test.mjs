// Screenshot test of every page of the web UI: each page is drawn from the
// fixed data of fixture-server.mjs at a fixed instant (the page's clock is
// pinned with Playwright's clock API, UTC, a 1400x1000 viewport, no
// animations), screenshotted, and compared pixel by pixel with the committed
// reference in web/tests/ref/. A page fails when more than MAX_DIFF of its
// pixels differ (by more than a small tolerance per channel), so a broken
// layout fails while font anti-aliasing noise does not.
//
//   node tests/visual-test.mjs                 compare
//   UPDATE_REFS=1 node tests/visual-test.mjs   rewrite the references (review the PNGs, then commit)
// The actual screenshots of failed pages go to VISUAL_OUT (default: a temp dir).
// References depend on the fonts installed: they were made with Debian 12's
// chromium and fonts-dejavu (scripts/install-deps.sh).
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFixtureServer, FIXTURE_NOW } from './fixture-server.mjs';
import { decodePng, diffRatio } from './png.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const refDir = path.join(here, 'ref');
const update = !!process.env.UPDATE_REFS;
const MAX_DIFF = Number(process.env.MAX_DIFF || 0.01);
const outDir = process.env.VISUAL_OUT || fs.mkdtempSync(path.join(os.tmpdir(), 'artel-visual-'));

// page name -> [hash, selector that says the page is drawn]
const PAGES = {
  teams: ['teams', 'figure.chart[data-cohort="nlp"] canvas'],
  overview: ['overview', '#overview-cards .card'],
  cohorts: ['queues', '#queue-tree li.cohort[data-cohort="org"]'],
  workloads: ['workloads', 'tr[data-workload="team-nlp/big-sweep"]'],
  'workload-pending': ['workload/team-nlp/big-sweep', '#why-flavors tbody tr'],
  'workload-running': ['workload/team-vision/detector', '#pods-table tbody tr'],
  nodes: ['nodes', '.gpu .mig-layout'],
};

const { server, url } = await startFixtureServer(40);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--font-render-hinting=none', '--disable-lcd-text', '--force-color-profile=srgb'],
});
let failed = 0;
for (const [name, [hash, ready]] of Object.entries(PAGES)) {
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 1000 }, deviceScaleFactor: 1, timezoneId: 'UTC', locale: 'en-GB', reducedMotion: 'reduce' });
  const page = await ctx.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  await page.clock.setFixedTime(FIXTURE_NOW);
  await page.goto(`${url}/ui/#${hash}`);
  await page.waitForSelector(ready, { timeout: 15000 });
  // Two refreshes drawn: the page is in its steady state.
  await page.waitForFunction(() => /live/.test(document.getElementById('conn').textContent), null, { timeout: 15000 });
  await page.evaluate(() => document.fonts.ready);
  await page.evaluate(() => { document.activeElement && document.activeElement.blur(); });
  const shot = await page.screenshot({ fullPage: true, animations: 'disabled', caret: 'hide' });
  const ref = path.join(refDir, `${name}.png`);
  if (update) {
    fs.mkdirSync(refDir, { recursive: true });
    fs.writeFileSync(ref, shot);
    console.log(`UPDATED ${name} -> ${path.relative(process.cwd(), ref)}`);
  } else if (!fs.existsSync(ref)) {
    failed++;
    console.log(`FAIL ${name}: no reference ${ref} (UPDATE_REFS=1 makes it)`);
  } else {
    const ratio = diffRatio(decodePng(fs.readFileSync(ref)), decodePng(shot));
    const ok = ratio <= MAX_DIFF && problems.length === 0;
    if (!ok) {
      failed++;
      fs.writeFileSync(path.join(outDir, `${name}.png`), shot);
    }
    console.log(`${ok ? 'PASS' : 'FAIL'} ${name}: ${(ratio * 100).toFixed(3)}% of pixels differ (max ${MAX_DIFF * 100}%)${problems.length ? `; page errors: ${problems.join('; ')}` : ''}${ok ? '' : `; actual: ${path.join(outDir, `${name}.png`)}`}`);
  }
  await ctx.close();
}
// The chart range selector (arteld says it has Prometheus): 7 days replace the ring's 2 hours.
{
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 1000 }, timezoneId: 'UTC', locale: 'en-GB' });
  const page = await ctx.newPage();
  await page.clock.setFixedTime(FIXTURE_NOW);
  await page.goto(`${url}/ui/#teams`);
  const since = () => page.$eval('figure.chart[data-cohort="nlp"]', (f) => Number(f.dataset.since));
  await page.waitForSelector('figure.chart[data-cohort="nlp"] canvas', { timeout: 15000 });
  const before = await since();
  await page.selectOption('#history-range', '7d');
  await page.waitForFunction(() => /7d from Prometheus/.test(document.getElementById('history-range-note').textContent), null, { timeout: 15000 });
  const after = await since();
  const ok = before > FIXTURE_NOW / 1000 - 3 * 3600 && after < FIXTURE_NOW / 1000 - 6 * 86400;
  if (!ok) failed++;
  console.log(`${ok ? 'PASS' : 'FAIL'} range selector: chart since ${before} -> ${after} (7d from Prometheus)`);
  await ctx.close();
}
await browser.close();
server.closeAllConnections();
server.close();
console.log(`\n${Object.keys(PAGES).length + 1 - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
