// Helpers of the console: the API client (the token lives in sessionStorage only, never in a
// URL, never logged), DOM building, time conversion, diffs and sparklines.

const TOKEN_KEY = 'popup-admin-token';

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY) || '',
  set: (t) => sessionStorage.setItem(TOKEN_KEY, t),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

// api calls the admin API with the bearer token and returns {status, ok, body, etag}. It never
// throws for an HTTP status; a network failure becomes status 0. onUnauthorized runs on a 401.
let onUnauthorized = () => {};
export function setUnauthorizedHandler(f) { onUnauthorized = f; }

export async function api(method, path, body, opts = {}) {
  const headers = { Authorization: 'Bearer ' + (opts.token ?? token.get()) };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (opts.ifMatch) headers['If-Match'] = opts.ifMatch;
  let res;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : (typeof body === 'string' ? body : JSON.stringify(body)), cache: 'no-store', credentials: 'omit' });
  } catch (e) {
    return { status: 0, ok: false, body: { error: { code: 'network', message: 'the admin API cannot be reached' } }, etag: null };
  }
  let parsed = null;
  const text = await res.text();
  if (text) {
    try { parsed = JSON.parse(text); } catch { parsed = { error: { code: 'bad_response', message: text.slice(0, 200) } }; }
  }
  const out = { status: res.status, ok: res.ok, body: parsed, etag: res.headers.get('ETag') };
  if (res.status === 401 && !opts.token) onUnauthorized();
  return out;
}

// notAvailable: the server has no such route (an older server, or a feature not deployed).
export const notAvailable = (r) => r.status === 404 && r.body?.error?.code === 'not_found';

export function errorText(r) {
  if (r.status === 412) return 'This popup was changed by someone else since you opened it. Reload it and apply your change again.';
  if (notAvailable(r)) return 'Not available on this server.';
  const e = r.body?.error;
  if (!e) return 'The request failed (HTTP ' + r.status + ').';
  return e.message || e.code;
}

// h builds an element: h('p', {class: 'x', onclick: f}, 'text', child, [children]).
export function h(tag, attrs, ...children) {
  const el = tag.startsWith('svg:') ? document.createElementNS('http://www.w3.org/2000/svg', tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value' && !tag.startsWith('svg:')) el.value = v;
    else if (k === 'checked') el.checked = !!v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

let ids = 0;
export const uid = (p) => p + '-' + (++ids);

// Time: the API speaks UTC RFC 3339; datetime-local inputs speak the operator's local time.
export function utcToLocalInput(s) {
  if (!s) return '';
  const d = new Date(s);
  if (isNaN(d)) return '';
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

export function localInputToUTC(v) {
  if (!v) return null;
  const d = new Date(v);
  if (isNaN(d)) return v; // let the API name the field
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function fmtTime(s) {
  if (!s) return '—';
  const d = new Date(s);
  if (isNaN(d)) return s;
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

export const isoDay = (d) => d.toISOString().slice(0, 10);

export function fmtPct(x) {
  if (x === undefined || x === null || isNaN(x)) return '—';
  return (x * 100).toFixed(1) + '%';
}

// flatten turns a popup into path → printable value, for diffs.
export function flatten(v, prefix = '', out = {}) {
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    const keys = Object.keys(v);
    if (keys.length === 0 && prefix) out[prefix] = '{}';
    for (const k of keys) flatten(v[k], prefix ? prefix + '.' + k : k, out);
  } else if (Array.isArray(v) && v.some((x) => x && typeof x === 'object')) {
    if (v.length === 0) out[prefix] = '[]';
    v.forEach((x, i) => flatten(x, `${prefix}[${i}]`, out));
  } else {
    out[prefix] = Array.isArray(v) ? (v.length ? v.join(', ') : '(none)') : (v === null ? '(none)' : String(v));
  }
  return out;
}

const IGNORED = new Set(['updated_at', 'created_at', 'revision']);

// diff lists the fields that differ between two popups: [{field, before, after}].
export function diff(before, after) {
  const a = before ? flatten(before) : {};
  const b = after ? flatten(after) : {};
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => !IGNORED.has(k));
  return keys.filter((k) => a[k] !== b[k]).map((k) => ({ field: k, before: a[k] ?? '(none)', after: b[k] ?? '(none)' }));
}

export function diffTable(rows, caption) {
  if (!rows.length) return h('p', { class: 'muted' }, 'No field changed.');
  return h('table', { class: 'diff' },
    h('caption', { class: 'sr-only' }, caption),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Field'), h('th', { scope: 'col' }, 'Before'), h('th', { scope: 'col' }, 'After'))),
    h('tbody', {}, rows.map((r) => h('tr', {}, h('th', { scope: 'row' }, r.field), h('td', { class: 'del' }, r.before), h('td', { class: 'ins' }, r.after)))));
}

// sparkline draws the daily impressions as an inline SVG polyline.
export function sparkline(values, label) {
  const w = 84, hgt = 22;
  const max = Math.max(1, ...values);
  const step = values.length > 1 ? w / (values.length - 1) : 0;
  const pts = values.map((v, i) => `${(i * step).toFixed(1)},${(hgt - 2 - (v / max) * (hgt - 4)).toFixed(1)}`).join(' ');
  return h('svg:svg', { width: w, height: hgt, viewBox: `0 0 ${w} ${hgt}`, role: 'img', 'aria-label': label, class: 'spark' },
    h('svg:polyline', { points: pts || `0,${hgt - 2} ${w},${hgt - 2}`, fill: 'none', stroke: 'currentColor', 'stroke-width': '1.5' }));
}

export const splitList = (s) => s.split(/[\s,]+/).map((x) => x.trim()).filter(Boolean);
