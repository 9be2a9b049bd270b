// Builds the web UI into dist/: one JS bundle (app code + uPlot from npm),
// one CSS file and index.html. No network, no CDN: everything the page loads
// comes from dist/, which arteld serves at /ui/.
//
//   node build.mjs            build into dist/
//   node build.mjs --check    build into a temporary folder and fail if dist/
//                             differs (the committed build is stale)
import * as esbuild from 'esbuild';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const check = process.argv.includes('--check');
const out = check ? fs.mkdtempSync(path.join(os.tmpdir(), 'artel-ui-')) : path.join(here, 'dist');

fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(out, { recursive: true });
await esbuild.build({
  entryPoints: { app: path.join(here, 'src/main.js') },
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['chrome110', 'firefox110', 'safari16'],
  outdir: out,
  legalComments: 'linked',
  logLevel: 'warning',
});
fs.copyFileSync(path.join(here, 'src/index.html'), path.join(out, 'index.html'));
// The bundle includes uPlot (MIT); ship its licence next to it.
fs.copyFileSync(path.join(here, 'node_modules/uplot/LICENSE'), path.join(out, 'LICENSE.uplot.txt'));

if (check) {
  const dist = path.join(here, 'dist');
  const names = (d) => (fs.existsSync(d) ? fs.readdirSync(d).sort() : []);
  const a = names(out), b = names(dist);
  let stale = JSON.stringify(a) !== JSON.stringify(b);
  for (const f of a) {
    if (stale) break;
    stale = !fs.readFileSync(path.join(out, f)).equals(fs.readFileSync(path.join(dist, f)));
  }
  fs.rmSync(out, { recursive: true, force: true });
  if (stale) {
    console.error('web/dist is stale: run `npm run build` in web/ and commit web/dist');
    process.exit(1);
  }
  console.log('web/dist is up to date');
}
