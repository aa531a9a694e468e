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

// upload sends a file as the body of an admin API request with XMLHttpRequest, whose upload
// events (unlike fetch's) tell how many bytes have gone: onProgress(sent, total) runs as they go
// and once more when the whole body is sent. It answers as api does: {status, ok, body, etag},
// never throwing; a network failure is status 0.
export function upload(method, path, file, { contentType, ifMatch, onProgress } = {}) {
  return new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, path);
    xhr.setRequestHeader('Authorization', 'Bearer ' + token.get());
    if (contentType) xhr.setRequestHeader('Content-Type', contentType);
    if (ifMatch) xhr.setRequestHeader('If-Match', ifMatch);
    xhr.upload.addEventListener('progress', (ev) => onProgress?.(ev.loaded, ev.lengthComputable ? ev.total : file.size));
    xhr.upload.addEventListener('load', () => onProgress?.(file.size, file.size));
    xhr.addEventListener('load', () => {
      let body = null;
      if (xhr.responseText) {
        try { body = JSON.parse(xhr.responseText); } catch { body = { error: { code: 'bad_response', message: xhr.responseText.slice(0, 200) } }; }
      }
      if (xhr.status === 401) onUnauthorized();
      resolve({ status: xhr.status, ok: xhr.status >= 200 && xhr.status < 300, body, etag: xhr.getResponseHeader('ETag') });
    });
    const fail = () => resolve({ status: 0, ok: false, body: { error: { code: 'network', message: 'the admin API cannot be reached' } }, etag: null });
    xhr.addEventListener('error', fail);
    xhr.addEventListener('abort', fail);
    xhr.send(file);
  });
}

// fmtBytes shows a size in bytes as people read it: 980 B, 12.4 KB, 3.1 MB.
export function fmtBytes(n) {
  if (!(n >= 0)) return '—';
  if (n < 1000) return n + ' B';
  const units = ['KB', 'MB', 'GB'];
  let v = n / 1000, i = 0;
  while (v >= 1000 && i < units.length - 1) { v /= 1000; i++; }
  return v.toFixed(v < 10 ? 1 : 0) + ' ' + units[i];
}

// notAvailable: the server has no such route (an older server, or a feature not deployed).
export const notAvailable = (r) => r.status === 404 && r.body?.error?.code === 'not_found';

export function errorText(r) {
  if (r.status === 412) return 'This popup was changed by someone else since you opened it. Reload it and apply your change again.';
  if (notAvailable(r)) return 'Not available on this server.';
  const e = r.body?.error;
  if (!e) return 'The request failed (HTTP ' + r.status + ').';
  if (r.status === 403 && e.role_needed) return `Not allowed: this needs the ${e.role_needed} role (${e.message}). Ask an operator with that role to make the change.`;
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

// zoneName is the browser's IANA time zone: every time the console shows or takes is in it.
export const zoneName = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

// nonexistentLocal: for a datetime-local value that names no instant in the browser's zone (a
// time skipped when the clocks jump forward), the time the browser would silently take instead;
// '' for a time that exists.
export function nonexistentLocal(v) {
  if (!v) return '';
  const d = new Date(v);
  if (isNaN(d)) return '';
  const back = utcToLocalInput(d.toISOString());
  return back === v.slice(0, 16) ? '' : back;
}

// fmtTime shows an instant in the browser's zone, labelled with the zone's short name.
export function fmtTime(s) {
  if (!s) return '—';
  const d = new Date(s);
  if (isNaN(d)) return s;
  const zone = new Intl.DateTimeFormat(undefined, { timeZoneName: 'short' }).formatToParts(d).find((x) => x.type === 'timeZoneName')?.value;
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }) + (zone ? ' ' + zone : '');
}

// Durations: the API speaks seconds; the form speaks a number and a unit. Seconds appear only for
// a stored value that is no whole number of minutes.
export const UNITS = [['seconds', 1], ['minutes', 60], ['hours', 3600], ['days', 86400]];
export const NEVER = 'never';

// splitDuration gives the form's {n, unit} for a number of seconds (-1 is never again; null or
// undefined is an empty field).
export function splitDuration(sec) {
  if (sec === null || sec === undefined) return { n: '', unit: 'days' };
  if (sec === -1) return { n: '', unit: NEVER };
  if (sec === 0) return { n: '0', unit: 'minutes' };
  for (const [unit, mult] of UNITS.slice().reverse()) if (sec % mult === 0) return { n: String(sec / mult), unit };
  return { n: String(sec), unit: 'seconds' };
}

// parseDuration reads the form's number and unit: {seconds} (undefined for an empty field: the
// API's default) or {error}. Only plain numbers are taken: "2h" is an error, never 2 seconds.
export function parseDuration(text, unit) {
  if (unit === NEVER) return { seconds: -1 };
  const t = text.trim();
  if (t === '') return { seconds: undefined };
  const mult = UNITS.find(([u]) => u === unit)?.[1] ?? 1;
  const n = Number(t);
  if (!/^\d+(\.\d+)?$/.test(t) || !Number.isInteger(Math.round(n * mult * 1000) / 1000)) {
    return { error: `“${t}” is not a number of ${unit}: type a number such as 2 and choose the unit in the list beside it.` };
  }
  return { seconds: Math.round(n * mult) };
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

// splitLines reads a list field: one entry per line, never split on spaces ("qa 1" is one uid).
export const splitLines = (s) => s.split('\n').map((x) => x.trim()).filter(Boolean);

// lineOf names entry i of a list field as splitLines read it: its text and its line number.
export function lineOf(s, i) {
  let n = -1;
  const lines = s.split('\n');
  for (let l = 0; l < lines.length; l++) {
    if (lines[l].trim() && ++n === i) return { text: lines[l].trim(), line: l + 1 };
  }
  return null;
}

// merge3 re-applies the operator's edits onto a newer stored version: every field (a targeting
// condition counts as a field) the operator changed from base takes mine, the rest theirs. All
// three are in the form's shape.
export function merge3(base, mine, theirs) {
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  const out = structuredClone(theirs);
  out.targeting = { ...(theirs.targeting || {}) };
  for (const k of Object.keys(mine)) {
    if (k === 'targeting') {
      for (const tk of Object.keys(mine.targeting || {})) if (!same(mine.targeting[tk], base.targeting?.[tk])) out.targeting[tk] = mine.targeting[tk];
    } else if (!same(mine[k], base[k])) out[k] = mine[k];
  }
  return out;
}

// download fetches a file of the admin API with the bearer token (a plain link could not carry
// it): {ok, status, blob, filename} or, for an error, {ok: false, status, body} as api answers.
export async function download(path) {
  let res;
  try {
    res = await fetch(path, { headers: { Authorization: 'Bearer ' + token.get() }, cache: 'no-store', credentials: 'omit' });
  } catch {
    return { status: 0, ok: false, body: { error: { code: 'network', message: 'the admin API cannot be reached' } } };
  }
  if (!res.ok) {
    let body = null;
    try { body = await res.json(); } catch { body = null; }
    if (res.status === 401) onUnauthorized();
    return { status: res.status, ok: false, body };
  }
  const m = (res.headers.get('Content-Disposition') || '').match(/filename="([^"]+)"/);
  return { status: res.status, ok: true, blob: await res.blob(), filename: m ? m[1] : '' };
}

// newBucketSeed draws a popup's bucketing seed: 16 random lowercase hex characters, as the API
// draws one (docs/CONTRACT.md §2).
export function newBucketSeed() {
  const b = new Uint8Array(8);
  crypto.getRandomValues(b);
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
}

// zoneToday is today's date (YYYY-MM-DD) in an IANA time zone; addDays moves a date by n days.
export const zoneToday = (zone) => new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date());
export const addDays = (day, n) => isoDay(new Date(Date.parse(day + 'T00:00:00Z') + n * 86400000));

// Experiments (docs/CONTRACT.md §10).

// isLive: an active or paused popup is live: saving it publishes, after a review.
export const isLive = (status) => status === 'active' || status === 'paused';

// armWeights: the weights of an experiment's arms in the form's reading (variants, then the
// control), and their sum; a weight not given counts 0.
export function armWeights(e) {
  const ws = [...(e?.variants || []).map((v) => Number(v.weight) || 0), ...(e?.control ? [Number(e.control.weight) || 0] : [])];
  return { arms: ws.length, sum: ws.reduce((a, b) => a + b, 0) };
}

// armsChanged tells whether an edit of an experiment starts a new phase (Reassigns in
// internal/popup/experiment.go): another number, order, key or weight of arms, another variant
// content, another control weight or mode. Coverage and the planned end never do.
export function armsChanged(before, after) {
  if (!before || !after) return false;
  const arms = (e) => JSON.stringify([(e.variants || []).map((v) => ({ ...v, ext: canon(v.ext) })), e.control || null]);
  return arms(before) !== arms(after);
}

// canon is a JSON value with its object keys sorted, so that two readings of one ext compare equal.
function canon(v) {
  if (Array.isArray(v)) return v.map(canon);
  if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canon(v[k])]));
  return v;
}

const isNum = (x) => typeof x === 'number' && !isNaN(x);

// pct shows a rate in percent with two decimals; signed, a difference ("+0.61%").
export function pct(x, signed = false) {
  if (!isNum(x)) return '—';
  const s = (x * 100).toFixed(2) + '%';
  return signed && x > 0 ? '+' + s : s;
}

// interval shows a 95% interval as "[4.87%, 5.30%]"; — when there is none.
export function interval(ci, signed = false) {
  if (!Array.isArray(ci) || !isNum(ci[0]) || !isNum(ci[1])) return '—';
  return `[${pct(ci[0], signed)}, ${pct(ci[1], signed)}]`;
}

// pValue shows a p-value; below 0.001 as "< 0.001".
export function pValue(p) {
  if (!isNum(p)) return '—';
  return p < 0.001 ? '< 0.001' : p.toFixed(3);
}
