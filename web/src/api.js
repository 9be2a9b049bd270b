// The arteld JSON API (/api/v1, docs/api.md) as the UI uses it, with the
// bearer token kept in sessionStorage. The normalizers at the bottom turn
// the server's objects into the small shapes the views draw, so that a field
// rename on the server is fixed here only.

const TOKEN_KEY = 'artel.token';
export const GPU = 'nvidia.com/gpu';

export class AuthError extends Error {}

// A `?token=` in the address is moved to sessionStorage and removed from the
// address bar (and so from history and screenshots).
export function adoptTokenFromUrl() {
  const url = new URL(window.location.href);
  const t = url.searchParams.get('token');
  if (t) {
    sessionStorage.setItem(TOKEN_KEY, t);
    url.searchParams.delete('token');
    window.history.replaceState(null, '', url.pathname + url.search + url.hash);
  }
}
export const token = () => sessionStorage.getItem(TOKEN_KEY) || '';
export const setToken = (t) => sessionStorage.setItem(TOKEN_KEY, t);
export const clearToken = () => sessionStorage.removeItem(TOKEN_KEY);

export async function get(path) {
  const headers = { Accept: 'application/json' };
  if (token()) headers.Authorization = `Bearer ${token()}`;
  const res = await fetch(`/api/v1/${path}`, { headers, cache: 'no-store' });
  if (res.status === 401) throw new AuthError('unauthenticated');
  const body = await res.json().catch(() => null);
  if (!res.ok) {
    const e = new Error((body && body.message) || `${res.status} ${res.statusText}`);
    e.status = res.status;
    throw e;
  }
  return body;
}
// A streaming GET (the watch endpoint); the caller reads res.body.
export async function stream(path) {
  const headers = { Accept: 'text/event-stream' };
  if (token()) headers.Authorization = `Bearer ${token()}`;
  const res = await fetch(`/api/v1/${path}`, { headers, cache: 'no-store' });
  if (res.status === 401) throw new AuthError('unauthenticated');
  if (!res.ok) throw new Error(`${res.status} ${res.statusText}`);
  return res;
}
// GET that yields `fallback` on 403/404 (a view the caller may not see).
export async function getOr(path, fallback) {
  try {
    return await get(path);
  } catch (e) {
    if (e instanceof AuthError) throw e;
    if (e.status === 403 || e.status === 404) return fallback;
    throw e;
  }
}

export const items = (x) => (Array.isArray(x) ? x : (x && (x.items || x.data)) || []);

// ---- quantities ---------------------------------------------------------------
const SUFFIX = { k: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4, m: 1e-3 };
export function qty(v) {
  if (v === undefined || v === null || v === '') return 0;
  if (typeof v === 'number') return v;
  const m = String(v).match(/^(-?[0-9.]+)([a-zA-Z]*)$/);
  if (!m) return Number(v) || 0;
  return Number(m[1]) * (SUFFIX[m[2]] || 1);
}
