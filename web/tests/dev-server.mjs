// A development server for the UI: serves web/dist at /ui/ the way arteld
// should (see docs/observability.md, "Serving the UI") and proxies every
// other path to a running arteld. Used by the browser test while arteld
// does not serve the bundle itself, and by people editing the UI.
//
//   node tests/dev-server.mjs http://127.0.0.1:7433 [PORT]
// Prints "listening on http://127.0.0.1:PORT" when ready.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const [upstream, portArg] = process.argv.slice(2);
if (!upstream) {
  console.error('usage: dev-server.mjs ARTELD_URL [PORT]');
  process.exit(2);
}
const dist = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist');
const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.txt': 'text/plain; charset=utf-8' };
export const UI_HEADERS = {
  'Content-Security-Policy': "default-src 'self'; img-src 'self' data:; style-src 'self'; base-uri 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

function serveUi(req, res) {
  const u = new URL(req.url, 'http://x');
  if (u.pathname === '/ui') {
    res.writeHead(301, { Location: '/ui/' + u.search + u.hash });
    return res.end();
  }
  let name = u.pathname.slice('/ui/'.length) || 'index.html';
  // Only plain file names from dist/: no sub-paths, no dot files.
  if (!/^[A-Za-z0-9_.-]+$/.test(name) || name.startsWith('.')) name = 'index.html';
  let file = path.join(dist, name);
  if (!fs.existsSync(file)) file = path.join(dist, 'index.html');
  const body = fs.readFileSync(file);
  res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream', 'Cache-Control': 'no-cache', ...UI_HEADERS });
  res.end(body);
}

const up = new URL(upstream);
const server = http.createServer((req, res) => {
  if (req.url === '/ui' || req.url.startsWith('/ui/') || req.url.startsWith('/ui?')) return serveUi(req, res);
  const p = http.request({ host: up.hostname, port: up.port, method: req.method, path: req.url, headers: req.headers }, (r) => {
    res.writeHead(r.statusCode, r.headers);
    r.pipe(res);
  });
  p.on('error', (e) => { res.writeHead(502); res.end(String(e)); });
  req.pipe(p);
});
server.listen(Number(portArg || 0), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
