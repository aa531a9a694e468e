// The operator console: a hash-routed page over the admin API (docs/CONTRACT.md).
import {
  api, token, setUnauthorizedHandler, notAvailable, errorText, h, uid, utcToLocalInput, localInputToUTC,
  fmtTime, isoDay, fmtPct, download, upload, fmtBytes, newBucketSeed, zoneToday, addDays, diff, diffTable, sparkline, splitLines, lineOf, merge3, flatten, zoneName,
  nonexistentLocal, UNITS, NEVER, splitDuration, parseDuration, armWeights, armsChanged, pct, interval, pValue,
} from './lib.js';

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const signoutBtn = document.getElementById('signout');
const whoEl = document.getElementById('whoami');
const toastEl = document.getElementById('toast');
const PAGE = 50;

// setKids replaces el's children, skipping the null and false of optional parts.
const setKids = (el, ...children) => el.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));

// me: who is signed in and what the role allows (GET /admin/v1/me: {operator, role, can}), read
// once per sign-in. The console offers only the controls the role may use; the API enforces the
// roles either way. /me ships in the same binary as the console, so a failed /me is an error
// (route shows it) that grants nothing.
let me = null;
const can = (what) => !!me?.can?.[what];

async function loadMe() {
  const r = await api('GET', '/admin/v1/me');
  if (r.ok) me = { operator: r.body.operator || '', role: r.body.role || '', can: { ...r.body.can } };
  return r;
}

// renderWho shows the operator and role in the header, and the Operators and Settings menu
// entries to admins only.
function renderWho() {
  whoEl.textContent = me?.operator ? `Signed in as ${me.operator} (${me.role})` : '';
  whoEl.hidden = !me?.operator;
  for (const [key, label] of [['operators', 'Operators'], ['settings', 'Settings']]) {
    const li = document.getElementById('nav-' + key);
    if (can('admin') && !li) nav.querySelector('ul').append(h('li', { id: 'nav-' + key }, h('a', { href: '#/' + key, 'data-nav': key }, label)));
    if (!can('admin') && li) li.remove();
  }
}

// roleNote is the notice that stands where a control the role may not use would be.
function roleNote(text) {
  return h('div', { class: 'alert info', role: 'status', id: 'readonly-note' }, text);
}

let signInNotice = '';
setUnauthorizedHandler(() => {
  token.clear();
  signInNotice = 'The admin API refused the token (401). Sign in again.';
  route();
});

// leaveGuard is set by the editor while it is open: it tells whether the form holds unsaved
// edits. Leaving them (another screen, sign-out, reload, closing the tab) asks first.
let leaveGuard = null;
const unsaved = () => !!leaveGuard?.();
const confirmLeave = () => confirmDialog('Leave with unsaved changes?', 'Your edits to this popup are not saved. Leave this screen and lose them?', 'Leave without saving');

window.addEventListener('beforeunload', (ev) => {
  if (!unsaved()) return;
  ev.preventDefault();
  ev.returnValue = ''; // older browsers ask only when this is set
});

signoutBtn.addEventListener('click', async () => {
  if (unsaved() && !await confirmLeave()) return;
  leaveGuard = null;
  token.clear();
  signInNotice = 'Signed out.';
  location.hash = '#/popups';
  route();
});

function toast(msg) {
  toastEl.textContent = msg;
  clearTimeout(toast.t);
  toast.t = setTimeout(() => { toastEl.textContent = ''; }, 6000);
}

// screen replaces the main content, sets the title and moves focus to the heading.
function screen(title, ...children) {
  document.title = title + ' — Popup console';
  const h1 = h('h1', { tabindex: '-1', id: 'page-title' }, title);
  setKids(main, h1, ...children);
  h1.focus();
  return h1;
}

function alertBox(msg, kind = 'error') {
  return h('div', { class: 'alert ' + kind, role: kind === 'error' ? 'alert' : 'status' }, msg);
}

// confirmDialog opens the shared <dialog>; resolves true when confirmed. Focus starts on Cancel
// and goes back to the opener when the dialog closes. The answer is taken from the form's submit
// (or Esc), not from the close event: that event is queued, and one from a dialog just
// cancelled could otherwise answer the next one, opened quickly after.
const dlg = document.getElementById('confirm');
let answerDialog = null;
dlg.querySelector('form').addEventListener('submit', (ev) => answerDialog?.(ev.submitter?.value === 'ok'));
dlg.addEventListener('cancel', () => answerDialog?.(false));
dlg.addEventListener('close', () => { if (!dlg.open) answerDialog?.(dlg.returnValue === 'ok'); });

// extra, when given, is shown below the text (the review of a publish: its diff table).
function confirmDialog(title, text, okLabel, extra) {
  const opener = document.activeElement;
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-text').textContent = text;
  document.getElementById('confirm-ok').textContent = okLabel;
  const body = document.getElementById('confirm-body');
  setKids(body, extra || null);
  // a long review scrolls inside the dialog: focusable and named, so the keyboard can scroll it
  if (extra) { body.tabIndex = 0; body.setAttribute('role', 'region'); body.setAttribute('aria-label', 'Details of the review'); } else { body.removeAttribute('tabindex'); body.removeAttribute('role'); body.removeAttribute('aria-label'); }
  dlg.classList.toggle('wide', !!extra);
  answerDialog?.(false);
  return new Promise((resolve) => {
    answerDialog = (ok) => {
      answerDialog = null;
      if (dlg.open) dlg.close();
      if (opener && opener.isConnected) opener.focus();
      resolve(ok);
    };
    dlg.returnValue = 'cancel';
    dlg.showModal();
    document.getElementById('confirm-cancel').focus();
  });
}

// ---------------------------------------------------------------- routing

const routes = [
  [/^#\/popups\/new$/, () => editScreen(null)],
  [/^#\/popups\/(\d+)$/, (m) => editScreen(Number(m[1]))],
  [/^#\/popups\/(\d+)\/experiment(?:\?(.*))?$/, (m) => experimentScreen(Number(m[1]), m[2])],
  [/^#\/popups(?:\?(.*))?$/, (m) => listScreen(m[1])],
  [/^#\/audiences$/, () => audiencesScreen()],
  [/^#\/goals$/, () => goalsScreen()],
  [/^#\/holdout(?:\?(.*))?$/, (m) => holdoutScreen(m[1])],
  [/^#\/audiences\/([^/?]+)$/, (m) => audienceScreen(decodeURIComponent(m[1]))],
  [/^#\/explain$/, () => explainScreen()],
  [/^#\/audit$/, () => auditScreen()],
  [/^#\/import$/, () => importScreen()],
  [/^#\/operators$/, () => operatorsScreen()],
  [/^#\/settings$/, () => settingsScreen()],
];

let navSeq = 0; // a screen that loads asynchronously renders only if no navigation came after

let shownHash = ''; // the hash of the screen on show

async function route() {
  const seq = ++navSeq;
  leaveGuard = null; // the editor sets it again once it is on show
  shownHash = location.hash;
  const signedIn = !!token.get();
  nav.hidden = !signedIn;
  signoutBtn.hidden = !signedIn;
  if (!signedIn) {
    me = null;
    renderWho();
    return signInScreen();
  }
  if (!me) {
    const r = await loadMe();
    if (seq !== navSeq) return;
    if (!me) return screen('Popup console', alertBox('Who is signed in cannot be read now: ' + errorText(r)));
  }
  renderWho();
  const hash = location.hash || '#/popups';
  for (const a of nav.querySelectorAll('a')) {
    if (hash.startsWith('#/' + a.dataset.nav)) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  for (const [re, f] of routes) {
    const m = hash.match(re);
    if (m) return f(m);
  }
  location.hash = '#/popups';
}
// In-app navigation (a menu link, Back) with unsaved edits: the address goes back to the editor
// until the operator has answered.
window.addEventListener('hashchange', async () => {
  if (!unsaved()) return route();
  const to = location.hash;
  history.replaceState(null, '', shownHash || '#/popups');
  if (!await confirmLeave()) return;
  leaveGuard = null;
  location.hash = to;
});

// ---------------------------------------------------------------- sign-in

function signInScreen() {
  const err = h('p', { id: 'token-error', class: 'field-error', hidden: true });
  const input = h('input', { id: 'token', name: 'token', type: 'password', autocomplete: 'off', required: true, 'aria-describedby': 'token-help' });
  const form = h('form', { class: 'card narrow', novalidate: true },
    h('div', { class: 'field' },
      h('label', { for: 'token' }, 'Admin token'),
      input,
      h('p', { id: 'token-help', class: 'help' }, 'The bearer token of the admin API (after make up: .local/admin-token). It is kept in this browser tab only and cleared by Sign out.'),
      err),
    h('button', { type: 'submit', id: 'signin' }, 'Sign in'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const t = input.value.trim();
    const fail = (msg) => {
      err.textContent = msg; err.hidden = false;
      input.setAttribute('aria-invalid', 'true');
      input.setAttribute('aria-describedby', 'token-help token-error');
      input.focus();
    };
    if (!t) return fail('Enter the admin token.');
    const r = await api('GET', '/admin/v1/popups?limit=1', undefined, { token: t });
    if (r.status === 401) return fail('Wrong token: the admin API answered 401.');
    if (!r.ok) return fail(errorText(r));
    token.set(t);
    me = null; // read for this token
    signInNotice = '';
    route();
  });
  screen('Sign in', signInNotice ? alertBox(signInNotice, signInNotice === 'Signed out.' ? 'info' : 'error') : null, form);
}

// ---------------------------------------------------------------- popup list

// listState: the list's filters, sort and search, kept in the address (#/popups?state=…&sort=…&q=…)
// so that a reload or a shared link shows the same list; the page cursors are not.
const SORTS = ['id', 'updated_at', 'name', 'priority'];
const STATES = ['draft', 'scheduled', 'running', 'paused', 'ended', 'archived'];
const DEFAULT_SORT = '-updated_at';
const listState = { state: '', experiment: '', q: '', sort: DEFAULT_SORT, cursors: [''], page: 0 };
// EXPERIMENT_FILTERS: the list's filter on experiments (GET /admin/v1/popups?experiment=)
const EXPERIMENT_FILTERS = [['', 'Any or none'], ['any', 'With an experiment'], ['running', 'Experiment running'], ['draft', 'Experiment draft'],
  ['stopped', 'Experiment stopped'], ['concluded', 'Experiment concluded'], ['none', 'Without an experiment']];

// experimentCell says a popup's experiment in a list row: its status and phase, or what shipped.
function experimentCell(e) {
  if (!e) return h('span', { class: 'muted' }, '—');
  return h('span', {}, h('span', { class: 'badge ' + e.status }, e.status),
    e.status === 'concluded' ? ` “${e.concluded_variant}” shipped` : (e.phase > 1 ? ` · phase ${e.phase}` : ''));
}

function readListQuery(qs) {
  const p = new URLSearchParams(qs || '');
  const state = p.get('state') || '';
  const sort = p.get('sort') || DEFAULT_SORT;
  const experiment = p.get('experiment') || '';
  Object.assign(listState, {
    state: STATES.includes(state) ? state : '',
    experiment: EXPERIMENT_FILTERS.some(([v]) => v === experiment) ? experiment : '',
    q: p.get('q') || '',
    sort: SORTS.includes(sort.replace(/^-/, '')) ? sort : DEFAULT_SORT,
  });
}

function listQuery() {
  const p = new URLSearchParams();
  if (listState.state) p.set('state', listState.state);
  if (listState.experiment) p.set('experiment', listState.experiment);
  if (listState.q) p.set('q', listState.q);
  if (listState.sort !== DEFAULT_SORT) p.set('sort', listState.sort);
  const s = p.toString();
  return s ? '?' + s : '';
}

let statsCache = { at: 0, byId: null, available: true };

// loadListStats reads the last 14 days of every popup, in the days of the reporting time zone:
// the API's default range ends today in that zone, and its answer says which days it took.
async function loadListStats() {
  if (Date.now() - statsCache.at < 30000) return statsCache;
  const r = await api('GET', '/admin/v1/stats?days=true');
  const byId = new Map();
  if (r.ok) for (const p of r.body?.popups || []) byId.set(p.popup_id, p);
  statsCache = { at: Date.now(), byId, available: r.ok, dates: r.ok ? dayRange(r.body.from, r.body.to) : [], zone: r.body?.time_zone || 'UTC' };
  return statsCache;
}

// dayRange lists the calendar dates from..to (YYYY-MM-DD, both included).
function dayRange(from, to) {
  const out = [];
  for (let d = new Date(from + 'T00:00:00Z'); isoDay(d) <= to && out.length < 400; d = new Date(d.getTime() + 86400000)) out.push(isoDay(d));
  return out;
}

function targetingSummary(t = {}) {
  const parts = [];
  parts.push(t.platforms?.length ? t.platforms.join('/') : 'all platforms');
  if (t.min_app_version || t.max_app_version) parts.push(`v${t.min_app_version || '*'}–${t.max_app_version || '*'}`);
  if (t.regions?.length) parts.push('regions ' + t.regions.join(','));
  if (t.langs?.length) parts.push('langs ' + t.langs.join(','));
  if (t.rollout_percent !== undefined && t.rollout_percent < 100) parts.push(t.rollout_percent + '% rollout');
  if (t.uids?.length) parts.push(t.uids.length + ' test uid' + (t.uids.length > 1 ? 's' : ''));
  const names = (ids) => ids.map((id) => `“${audienceName(id)}”`).join(', ');
  if (t.audiences?.include?.length) parts.push('in ' + names(t.audiences.include));
  if (t.audiences?.exclude?.length) parts.push('not in ' + names(t.audiences.exclude));
  return parts.join(' · ');
}

function windowText(p) {
  if (!p.start_at && !p.end_at) return 'always';
  return `${p.start_at ? fmtTime(p.start_at) : 'now'} → ${p.end_at ? fmtTime(p.end_at) : 'open'}`;
}

function dailySeries(stat, cache) {
  const byDate = new Map((stat?.days || []).map((d) => [d.date, d]));
  return cache.dates.map((d) => byDate.get(d) || { date: d, impressions: 0, clicks: 0, closes: 0 });
}

const STATE_LABELS = [['', 'Any state but archived'], ...STATES.map((s) => [s, s[0].toUpperCase() + s.slice(1)])];
const SORT_COLS = { Name: 'name', Priority: 'priority', Updated: 'updated_at' };

async function listScreen(qs) {
  readListQuery(qs);
  listState.cursors = ['']; listState.page = 0;
  statsCache.at = 0; // fresh numbers each time the list opens; paging reuses them
  const results = h('div', { id: 'popup-results', 'aria-live': 'polite', 'aria-busy': 'true' }, h('p', { class: 'muted' }, 'Loading…'));
  const stateSel = h('select', { id: 'filter-state', name: 'state' },
    STATE_LABELS.map(([v, l]) => h('option', { value: v, selected: listState.state === v }, l)));
  const expSel = h('select', { id: 'filter-experiment', name: 'experiment' },
    EXPERIMENT_FILTERS.map(([v, l]) => h('option', { value: v, selected: listState.experiment === v }, l)));
  const q = h('input', { id: 'filter-q', name: 'q', type: 'search', value: listState.q, 'aria-describedby': 'filter-q-help' });
  const filters = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter popups' },
    h('div', { class: 'field inline' }, h('label', { for: 'filter-state' }, 'State'), stateSel),
    h('div', { class: 'field inline' }, h('label', { for: 'filter-experiment' }, 'Experiment'), expSel),
    h('div', { class: 'field inline' }, h('label', { for: 'filter-q' }, 'Search name, title, content or id'), q),
    h('button', { type: 'submit' }, 'Apply filter'),
    h('p', { class: 'help', id: 'filter-q-help' }, 'A part of the name, title or content (any case), or a popup id.'));
  // apply: the filters, sort and search go into the address (a reload keeps them), then the list
  // renders page 1 with fresh numbers
  const apply = () => {
    listState.cursors = ['']; listState.page = 0;
    statsCache.at = 0; // an explicit action: fresh numbers, not the ones cached for paging
    history.replaceState(null, '', '#/popups' + listQuery());
    shownHash = location.hash;
    renderPage();
  };
  filters.addEventListener('submit', (ev) => {
    ev.preventDefault();
    Object.assign(listState, { state: stateSel.value, experiment: expSel.value, q: q.value.trim() });
    apply();
  });
  stateSel.addEventListener('change', () => filters.requestSubmit());
  expSel.addEventListener('change', () => filters.requestSubmit());
  screen('Popups',
    can('edit_drafts') ? h('p', {}, h('a', { href: '#/popups/new', class: 'button' }, 'New popup')) : null,
    filters, results);

  const sortBy = (key) => {
    const cur = listState.sort.replace(/^-/, '');
    // a new column starts ascending (names A→Z, lowest priority) except Updated (newest first)
    listState.sort = cur === key ? (listState.sort.startsWith('-') ? key : '-' + key) : (key === 'updated_at' ? '-updated_at' : key);
    apply();
  };

  let pageSeq = 0; // only the newest request renders
  async function renderPage() {
    const mine = ++pageSeq;
    results.setAttribute('aria-busy', 'true');
    const params = new URLSearchParams({ limit: String(PAGE), sort: listState.sort });
    if (listState.state) params.set('state', listState.state);
    if (listState.experiment) params.set('experiment', listState.experiment);
    if (listState.q) params.set('q', listState.q);
    const cursor = listState.cursors[listState.page];
    if (cursor) params.set('cursor', cursor);
    // the audience list names the audiences of the Targeting column
    const [r, stats] = await Promise.all([api('GET', '/admin/v1/popups?' + params), loadListStats(), loadAudiences()]);
    if (mine !== pageSeq) return;
    results.setAttribute('aria-busy', 'false');
    if (!r.ok) return setKids(results, alertBox(errorText(r)));
    const rows = r.body.popups || [];
    const next = r.body.next ?? null;
    const total = r.body.total;
    const sortKey = listState.sort.replace(/^-/, '');
    const dir = listState.sort.startsWith('-') ? 'descending' : 'ascending';
    const cols = ['Name', 'State', 'Experiment', 'Priority', 'Updated', `Window (${zoneName})`, 'Targeting', 'Today: impressions', 'Today: CTR', 'Last 14 days'];
    const header = (c) => {
      const key = SORT_COLS[c];
      if (!key) return h('th', { scope: 'col' }, c);
      const on = key === sortKey;
      return h('th', { scope: 'col', 'data-sort': key, 'aria-sort': on ? dir : null },
        h('button', { type: 'button', class: 'sort', onclick: () => sortBy(key) }, c, h('span', { 'aria-hidden': 'true' }, on ? (dir === 'ascending' ? ' ▲' : ' ▼') : ' ↕')));
    };
    const td = (i, attrs, ...kids) => h('td', { ...attrs, 'data-label': cols[i] }, ...kids);
    const table = h('table', { class: 'popups', id: 'popup-table' },
      h('caption', { class: 'sr-only' }, `Popups, sorted by ${sortKey.replace('_at', '')}, ${dir}`),
      h('thead', {}, h('tr', {}, cols.map(header))),
      h('tbody', {}, rows.map((p) => {
        const st = stats.byId?.get(p.id);
        const series = dailySeries(st, stats);
        const today = series[series.length - 1] || { impressions: 0, clicks: 0 };
        const ctr = today.impressions ? today.clicks / today.impressions : null;
        const state = p.state || p.status;
        return h('tr', { 'data-id': p.id },
          h('th', { scope: 'row' }, h('a', { href: '#/popups/' + p.id }, p.name || '(unnamed)'), h('span', { class: 'muted' }, ' #' + p.id)),
          td(1, {}, h('span', { class: 'badge ' + state }, state)),
          td(2, { class: 'experiment' }, experimentCell(p.experiment)),
          td(3, { class: 'num' }, p.priority),
          td(4, {}, fmtTime(p.updated_at)),
          td(5, {}, windowText(p)),
          td(6, {}, targetingSummary(p.targeting)),
          td(7, { class: 'num' }, stats.available ? today.impressions : '—'),
          td(8, { class: 'num' }, stats.available ? fmtPct(ctr) : '—'),
          td(9, {}, stats.available ? sparkline(series.map((d) => d.impressions), `Impressions over the last 14 days (${stats.zone} days) for ${p.name}: ${series.map((d) => d.impressions).join(', ')}`) : '—'));
      })));
    const pager = h('nav', { class: 'pager', 'aria-label': 'Pages of popups' },
      h('button', { type: 'button', class: 'secondary', disabled: listState.page === 0, onclick: () => { listState.page--; renderPage(); } }, 'Previous page'),
      h('span', {}, `Page ${listState.page + 1}` + (typeof total === 'number' ? ` of ${Math.max(1, Math.ceil(total / PAGE))}` : '')),
      h('button', { type: 'button', class: 'secondary', disabled: !next, onclick: () => { listState.cursors[listState.page + 1] = next; listState.page++; renderPage(); } }, 'Next page'));
    setKids(results,
      typeof total === 'number' ? h('p', { id: 'popup-total' }, `${total} popup${total === 1 ? '' : 's'}`, listState.state ? ` ${listState.state}` : '',
        listState.experiment ? ` · ${EXPERIMENT_FILTERS.find(([v]) => v === listState.experiment)[1].toLowerCase()}` : '', listState.q ? ` matching “${listState.q}”` : '',
        stats.available ? h('span', { class: 'muted' }, ` · today is ${stats.dates[stats.dates.length - 1] || ''} in ${stats.zone}`) : null) : null,
      stats.available ? null : alertBox('Stats: not available on this server.', 'info'),
      rows.length ? h('div', { class: 'table-wrap' }, table) : h('p', {}, 'No popups match.'),
      pager);
    results.dataset.rendered = String(performance.now());
  }
  renderPage();
}

// ---------------------------------------------------------------- edit / create

// DEFAULTS is a new popup's form: the API's defaults (docs/CONTRACT.md §2), so that the pre-fill,
// an emptied field (omitted: the API's default) and the docs agree. An empty close cooldown is
// the reshow interval.
const DEFAULTS = {
  name: '', status: 'draft', priority: 0, start_at: null, end_at: null,
  targeting: { platforms: [], min_app_version: '', max_app_version: '', regions: [], langs: [], rollout_percent: 100, uids: [] },
  reshow_after_seconds: 86400, click_cooldown_seconds: 0, close_cooldown_seconds: null, max_impressions: 0,
  title: '', content: '', image_url: '', image_alt: '', link_url: '', buttons: [], ext: {},
};
let pendingDuplicate = null;
const isLive = (status) => status === 'active' || status === 'paused';

function field(id, label, input, help) {
  input.id = id;
  const helpId = help ? id + '-help' : null;
  if (helpId) input.setAttribute('aria-describedby', helpId);
  return h('div', { class: 'field' },
    h('label', { for: id }, label), input,
    help ? h('p', { class: 'help', id: helpId }, help) : null);
}

function textInput(name, attrs = {}) {
  return h('input', { type: 'text', name, 'data-field': name, ...attrs });
}
function numInput(name, attrs = {}) {
  return h('input', { type: 'number', name, 'data-field': name, inputmode: 'numeric', ...attrs });
}
function listInput(name, dataField) {
  return h('textarea', { name, 'data-field': dataField, rows: 3, spellcheck: 'false', class: 'list' });
}

// durationField: a number and its unit (and "never again" where the API takes -1).
function durationField(id, name, label, help, never) {
  const num = h('input', { type: 'text', inputmode: 'decimal', name, id, 'data-field': name, autocomplete: 'off', class: 'dur', 'aria-describedby': id + '-help' });
  const unit = h('select', { id: id + '-unit', name: name + '-unit', 'aria-describedby': id + '-help' },
    UNITS.filter(([u]) => u !== 'seconds').map(([u]) => h('option', { value: u }, u)),
    never ? h('option', { value: NEVER }, 'never again') : null);
  const sync = () => { num.disabled = unit.value === NEVER; };
  unit.addEventListener('change', sync);
  const el = h('div', { class: 'field' },
    h('label', { for: id }, label),
    h('div', { class: 'dur-row' }, num, h('label', { for: id + '-unit', class: 'sr-only' }, label + ': unit'), unit),
    h('p', { class: 'help', id: id + '-help' }, help));
  return {
    el,
    set(sec) {
      const { n, unit: u } = splitDuration(sec);
      if (u === 'seconds' && !unit.querySelector('option[value=seconds]')) unit.prepend(h('option', { value: 'seconds' }, 'seconds'));
      num.value = n; unit.value = u; sync();
    },
    read: () => parseDuration(num.value, unit.value),
  };
}

// contentEditor: the content fields of a popup (title, content, image, link, buttons, ext), for the
// popup's own content (own: the ids f-title … and buttons-list) and for each experiment variant
// (ids from idp). prefix is how the API names the fields in its errors ('' or
// 'experiment.variants[1].'); onChange runs when a button row is added or removed.
function contentEditor({ own, idp, prefix = '', onChange }) {
  const id = (k) => (own ? { title: 'f-title', content: 'f-content', image_url: 'f-image', image_alt: 'f-image-alt', link_url: 'f-link', ext: 'f-ext' }[k] : `${idp}-${k}`);
  const f = {
    title: h('input', { type: 'text', name: 'title' }),
    content: h('textarea', { name: 'content', rows: own ? 4 : 3 }),
    image_url: h('input', { type: 'url', name: 'image_url', placeholder: 'https://…' }),
    image_alt: h('input', { type: 'text', name: 'image_alt', maxlength: '300' }),
    link_url: h('input', { type: 'text', name: 'link_url' }),
    ext: h('textarea', { name: 'ext', rows: own ? 4 : 2, class: 'mono', spellcheck: 'false' }),
  };
  const buttonsBox = h('div', { id: own ? 'buttons-list' : `${idp}-buttons`, class: 'buttons-list' });
  let pre = prefix;
  // a variant's translations are not edited in the form (the translations table carries them):
  // they go back as they came
  let translations = {};

  function buttonRow(b = { text: '', link_url: '' }) {
    const row = h('fieldset', { class: 'button-row' });
    const text = h('input', { type: 'text', name: 'button-text', value: b.text });
    const link = h('input', { type: 'text', name: 'button-link', value: b.link_url });
    row.append(h('legend', {}, 'Button'),
      (() => { const i = uid('btn-text'); text.id = i; return h('div', { class: 'field inline' }, h('label', { for: i }, 'Text'), text); })(),
      (() => { const i = uid('btn-link'); link.id = i; return h('div', { class: 'field inline' }, h('label', { for: i }, 'Link URL'), link); })(),
      h('button', { type: 'button', class: 'secondary', onclick: () => { row.remove(); renumber(); onChange(); } }, 'Remove button'));
    return row;
  }
  function renumber() {
    for (const [k, el] of Object.entries(f)) el.dataset.field = pre + k;
    [...buttonsBox.children].forEach((row, i) => {
      row.querySelector('legend').textContent = 'Button ' + (i + 1);
      row.querySelector('[name=button-text]').dataset.field = `${pre}buttons[${i}].text`;
      row.querySelector('[name=button-link]').dataset.field = `${pre}buttons[${i}].link_url`;
    });
  }
  const addLabel = own ? 'Add button' : 'Add button to this variant';
  const el = [
    field(id('title'), 'Title', f.title),
    field(id('content'), 'Content', f.content),
    field(id('image_url'), 'Image URL', f.image_url, own ? 'The preview shows https images only.' : null),
    field(id('link_url'), 'Link URL', f.link_url),
    h('div', { class: 'field' }, h('p', { class: 'label' }, 'Buttons'), buttonsBox,
      h('button', { type: 'button', class: 'secondary', onclick: () => { buttonsBox.append(buttonRow()); renumber(); onChange(); buttonsBox.lastChild.querySelector('input').focus(); } }, addLabel)),
    field(id('image_alt'), 'Image description (alt text)', f.image_alt, own ? 'What a screen reader says for the image; required in effect for a popup that is only an image.' : null),
    field(id('ext'), 'Extra data (ext, a JSON object)', f.ext, own ? 'Passed to the app as it is.' : null),
  ];
  renumber();
  return {
    el,
    setPrefix(p) { pre = p; renumber(); },
    load(p) {
      f.title.value = p.title || ''; f.content.value = p.content || ''; f.image_url.value = p.image_url || ''; f.image_alt.value = p.image_alt || ''; f.link_url.value = p.link_url || '';
      f.ext.value = p.ext === undefined ? '' : JSON.stringify(p.ext ?? {}, null, 2);
      buttonsBox.replaceChildren(...(p.buttons || []).map((b) => buttonRow(b)));
      translations = structuredClone(p.translations || {});
      renumber();
    },
    // read gives the content in the admin wire shape, adding to problems what the page can tell is wrong
    read(problems) {
      let ext;
      try { ext = f.ext.value.trim() === '' ? {} : JSON.parse(f.ext.value); } catch { ext = undefined; }
      if (ext === undefined || typeof ext !== 'object' || ext === null || Array.isArray(ext)) {
        problems.push({ field: pre + 'ext', message: 'must be a JSON object, e.g. {"campaign": "winter"}' });
      }
      return {
        title: f.title.value, content: f.content.value, image_url: f.image_url.value.trim(), image_alt: f.image_alt.value, link_url: f.link_url.value.trim(),
        buttons: [...buttonsBox.children].map((row) => ({ text: row.querySelector('[name=button-text]').value, link_url: row.querySelector('[name=button-link]').value.trim() })),
        ext,
        ...(own ? {} : { translations }),
      };
    },
  };
}

// translationsEditor: the popup's own content in other languages (docs/CONTRACT.md §13), beside
// the default content: a fieldset per language (its BCP 47 tag, title, content, optional image and
// link, one text per button of the default content), the strings still missing per language, a
// language to preview, and for a saved popup the translation table as CSV. ownContent reads the
// default content; onChange runs after every change.
function translationsEditor({ ownContent, onChange }) {
  let langs = []; // {tag, title, content, image_url, link_url, buttons: [inputs], row}
  const box = h('div', { id: 'translations-list' });
  const missing = h('div', { id: 'missing-strings', 'aria-live': 'polite' });
  const newTag = h('input', { type: 'text', id: 'translation-new', name: 'translation-new', autocomplete: 'off', spellcheck: 'false', placeholder: 'e.g. pt-BR', 'aria-describedby': 'translation-new-help' });
  const addBtn = h('button', { type: 'button', class: 'secondary', id: 'translation-add', onclick: () => {
    const tag = newTag.value.trim();
    if (!tag) return newTag.focus();
    add(tag, {});
    newTag.value = '';
    renumber(); onChange();
    langs.at(-1).title.focus();
  } }, 'Add language');
  const previewLang = h('select', { id: 'preview-lang', name: 'preview-lang', onchange: () => onChange() });

  function add(tag, t) {
    const idp = uid('tr');
    const item = {
      tag: h('input', { type: 'text', name: 'translation-tag', value: tag, autocomplete: 'off', spellcheck: 'false' }),
      title: h('input', { type: 'text', name: 'translation-title', value: t.title || '' }),
      content: h('textarea', { name: 'translation-content', rows: 3 }),
      image_url: h('input', { type: 'url', name: 'translation-image', value: t.image_url || '', placeholder: 'empty: the default image' }),
      link_url: h('input', { type: 'text', name: 'translation-link', value: t.link_url || '', placeholder: 'empty: the default link' }),
      buttonsBox: h('div', { class: 'buttons-list' }),
      links: (t.buttons || []).map((b) => b.link_url || ''),
      texts: (t.buttons || []).map((b) => b.text || ''),
      legend: h('legend'),
    };
    item.content.value = t.content || '';
    item.rm = h('button', { type: 'button', class: 'secondary', onclick: () => { langs = langs.filter((x) => x !== item); item.row.remove(); renumber(); onChange(); newTag.focus(); } }, 'Remove language');
    item.row = h('fieldset', { class: 'translation' }, item.legend,
      field(idp + '-tag', 'Language tag', item.tag),
      field(idp + '-title', 'Title', item.title),
      field(idp + '-content', 'Content', item.content),
      field(idp + '-image', 'Image URL', item.image_url),
      field(idp + '-link', 'Link URL', item.link_url),
      h('div', { class: 'field' }, h('p', { class: 'label' }, 'Button texts'), item.buttonsBox),
      h('p', {}, item.rm));
    langs.push(item);
    box.append(item.row);
  }
  // syncButtons gives each language one text per button of the default content, keeping what
  // was typed (a click's button index names the same button in every language)
  function syncButtons(own) {
    for (const l of langs) {
      const typed = [...l.buttonsBox.querySelectorAll('input')].map((i) => i.value);
      const texts = typed.length ? typed : l.texts;
      if (typed.length === own.buttons.length && l.buttonsBox.children.length === own.buttons.length) continue;
      l.buttonsBox.replaceChildren(...own.buttons.map((b, i) => {
        const iid = uid('tr-btn');
        return h('div', { class: 'field inline' }, h('label', { for: iid }, `Button ${i + 1} (“${b.text || '…'}”)`),
          h('input', { type: 'text', id: iid, name: 'translation-button', value: texts[i] ?? '' }));
      }));
    }
  }
  function renumber() {
    const own = ownContent();
    syncButtons(own);
    langs.forEach((l) => {
      const tag = l.tag.value.trim();
      l.legend.textContent = `Language ${tag || '(no tag)'}`;
      const pre = `translations.${tag}.`;
      l.tag.dataset.field = `translations.${tag}`;
      for (const k of ['title', 'content', 'image_url', 'link_url']) l[k].dataset.field = pre + k;
      l.buttonsBox.dataset.field = pre + 'buttons';
      [...l.buttonsBox.querySelectorAll('input')].forEach((inp, i) => { inp.dataset.field = `${pre}buttons[${i}].text`; });
    });
    const want = ['default', ...langs.map((l) => l.tag.value.trim()).filter(Boolean)];
    if ([...previewLang.options].map((o) => o.value).join('\n') !== want.join('\n')) {
      const cur = previewLang.value;
      setKids(previewLang, want.map((v) => h('option', { value: v }, v === 'default' ? 'Default content' : v)));
      previewLang.value = want.includes(cur) ? cur : 'default';
    }
  }
  // missingStrings: per language, the strings the default content has and the language lacks
  function missingStrings(own, tr) {
    const out = [];
    for (const [tag, t] of Object.entries(tr)) {
      const gaps = [];
      if (own.title && !t.title) gaps.push('title');
      if (own.content && !t.content) gaps.push('content');
      own.buttons.forEach((b, i) => { if (!(t.buttons[i]?.text || '').trim()) gaps.push(`button ${i + 1}`); });
      if (gaps.length) out.push({ tag, gaps });
    }
    return out;
  }
  function read() {
    const out = {};
    for (const l of langs) {
      const tag = l.tag.value.trim();
      out[tag] = {
        title: l.title.value, content: l.content.value, image_url: l.image_url.value.trim(), link_url: l.link_url.value.trim(),
        buttons: [...l.buttonsBox.querySelectorAll('input')].map((inp, i) => ({ text: inp.value, link_url: l.links[i] || '' })),
      };
    }
    return out;
  }
  // refresh renumbers and lists the missing strings; it returns the content the preview shows:
  // the default, or the chosen language's over it (its empty links keep the default's)
  function refresh(own) {
    renumber();
    const tr = read();
    const gaps = missingStrings(own, tr);
    setKids(missing, langs.length === 0 ? null : gaps.length === 0
      ? h('p', { class: 'ok', id: 'missing-none' }, 'Every language has every string.')
      : h('div', {}, h('p', { class: 'label' }, 'Missing strings'),
        h('ul', { id: 'missing-list' }, gaps.map((g) => h('li', { 'data-lang': g.tag }, `${g.tag}: ${g.gaps.join(', ')}`)))));
    const t = tr[previewLang.value];
    if (!t) return own;
    return { ...own, title: t.title, content: t.content, image_url: t.image_url || own.image_url, link_url: t.link_url || own.link_url,
      buttons: own.buttons.map((b, i) => ({ text: t.buttons[i]?.text || '', link_url: t.buttons[i]?.link_url || b.link_url })) };
  }
  function load(tr) {
    langs = [];
    box.replaceChildren();
    for (const [tag, t] of Object.entries(tr || {})) add(tag, t);
  }
  const el = h('fieldset', { id: 'translations', 'data-field': 'translations' }, h('legend', {}, 'Translations'),
    h('p', { class: 'help' }, 'The content in other languages. The app gets the language of its request’s lang: the exact tag, then the tag without its region or script (pt-BR → pt), else the default content above. Each language has one text per button of the default content.'),
    box,
    h('div', { class: 'row' }, field('translation-new', 'New language (BCP 47 tag)', newTag), h('p', {}, addBtn)),
    h('p', { class: 'help', id: 'translation-new-help' }, 'A language, then optionally a script and a region: en, pt-BR, zh-Hans, es-419.'),
    missing);
  return { el, load, read, refresh, previewField: field('preview-lang', 'Preview language', previewLang) };
}

// experimentEditor: the Experiment section of the popup form (docs/CONTRACT.md §10): add or remove
// an experiment, its coverage, variants (key, weight and the content fields of contentEditor), an
// optional control, the planned end, and a live check that the weights sum to 100. stored is the
// stored popup's experiment (null for none); head, what editScreen shows above the fields (status,
// transitions, results link); ownContent, the popup's own content, which a new experiment's
// variants start from; goals, the answer of GET /admin/v1/goals, which the primary goal is
// picked from. Every save sends primary_goal (null for clicks), so what the form shows is what is
// stored; a goal the list does not hold (deleted, or a list that cannot be read) stays on show,
// selected, so that saving never drops it unseen.
const MAX_VARIANTS = 8;
function experimentEditor({ stored, goals, head, ownContent, onChange }) {
  let on = false;
  let variants = []; // {key, weight, content, rm}
  const concluded = stored?.status === 'concluded';
  const running = stored?.status === 'running';
  const coverage = numInput('coverage_percent', { 'data-field': 'experiment.coverage_percent', min: 0, max: 100 });
  const variantsBox = h('div', { id: 'variants', 'data-field': 'experiment.variants' });
  const controlOn = h('input', { type: 'checkbox', id: 'exp-control', name: 'control', 'data-field': 'experiment.control' });
  const controlWeight = numInput('control_weight', { 'data-field': 'experiment.control.weight', min: 1, max: 99 });
  const controlMode = h('select', { name: 'control_mode', 'data-field': 'experiment.control.mode' },
    h('option', { value: 'none' }, 'Nothing: no popup (none)'),
    h('option', { value: 'fall_through' }, 'The next popup they may see (fall_through)'));
  const plannedEnd = h('input', { type: 'datetime-local', name: 'planned_end_at', 'data-field': 'experiment.planned_end_at' });
  const goalList = goals?.ok ? goals.body.goals || [] : [];
  const primaryGoal = h('select', { id: 'exp-primary-goal', name: 'primary_goal', 'data-field': 'experiment.primary_goal' });
  const goalsHelp = (
    !goals?.ok ? 'Goals: ' + errorText(goals) + ' The primary goal this experiment already has is kept.'
      : goalList.length ? `Every goal is reported in the results: ${goalList.map((g) => `${g.name} (${g.key})`).join(', ')}. The primary goal decides the verdict; changing it moves nobody.`
        : ['No goal exists yet: the verdict is decided on clicks. ', h('a', { href: '#/goals' }, 'Create a goal on the Goals page'), ' to decide on a purchase or a sign-up.']);
  function loadGoal(key) {
    const opts = [h('option', { value: '' }, 'Clicks (the click-through rate)'), ...goalList.map((g) => h('option', { value: g.key }, `${g.name} (${g.key})`))];
    if (key && !goalList.some((g) => g.key === key)) opts.push(h('option', { value: key }, `${key} (not in the list: deleted, or the list cannot be read)`));
    setKids(primaryGoal, opts);
    primaryGoal.value = key || '';
  }
  const sumOut = h('p', { id: 'weights-sum', class: 'weights-sum', 'aria-live': 'polite' });
  const addVariantBtn = h('button', { type: 'button', class: 'secondary', id: 'variant-add', onclick: () => { addVariant(blank(nextKey(), 0)); renumber(); onChange(); variants.at(-1).key.focus(); } }, 'Add variant');
  const controlBox = h('div', { class: 'row', id: 'control-fields' },
    field('exp-control-weight', 'Control weight (%)', controlWeight, '1 to 99.'),
    field('exp-control-mode', 'A control user gets', controlMode, 'Fall-through: the selection goes on as if this popup did not apply.'));
  controlOn.addEventListener('change', () => { controlBox.hidden = !controlOn.checked; });
  const removeBtn = h('button', { type: 'button', class: 'danger', id: 'experiment-remove', disabled: running, 'aria-describedby': 'experiment-remove-help', onclick: remove }, 'Remove the experiment');
  const fields = h('div', { id: 'experiment-fields' },
    field('exp-coverage', 'Coverage (% of the popup’s users)', coverage, 'In the experiment; the others see the popup’s own content and are not counted. Raising it moves nobody.'),
    variantsBox,
    h('p', {}, addVariantBtn),
    h('div', { class: 'field' }, h('label', { class: 'check', for: 'exp-control' }, controlOn, ' A control arm'),
      h('p', { class: 'help', id: 'exp-control-help' }, 'Users in the control are counted but shown nothing of this popup: whether the popup helps at all.')),
    controlBox,
    sumOut,
    field('exp-end', `Planned end (${zoneName})`, plannedEnd, `When you mean to read the result: from then on a fixed-horizon verdict is allowed. Empty: none. In your browser's time zone, ${zoneName}.`),
    field('exp-primary-goal', 'Primary goal: the verdict is decided on', primaryGoal, goalsHelp),
    h('p', {}, removeBtn),
    h('p', { class: 'help', id: 'experiment-remove-help' }, running ? 'A running experiment cannot be removed: stop it first.' : 'Its results stay readable by phase.'));
  const off = h('div', { id: 'experiment-off' });
  const fs = h('fieldset', { id: 'experiment', 'data-field': 'experiment' }, h('legend', {}, 'Experiment'), head, fields, off);

  const blank = (key, weight) => ({ key, weight, title: '', content: '', image_url: '', image_alt: '', link_url: '', buttons: [], ext: {} });
  function nextKey() {
    const used = new Set(variants.map((v) => v.key.value.trim()));
    return [...'abcdefghij'].find((k) => !used.has(k)) || '';
  }
  function addVariant(v) {
    const idp = uid('variant');
    const item = {
      key: h('input', { type: 'text', name: 'variant-key', autocomplete: 'off', spellcheck: 'false', value: v.key ?? '' }),
      weight: numInput('variant-weight', { min: 1, max: 100, value: v.weight ?? '' }),
      content: contentEditor({ idp, onChange }),
      legend: h('legend'),
    };
    item.content.load(v);
    item.rm = h('button', { type: 'button', class: 'secondary', onclick: () => { variants = variants.filter((x) => x !== item); item.row.remove(); renumber(); onChange(); addVariantBtn.focus(); } }, 'Remove variant');
    item.row = h('fieldset', { class: 'variant' }, item.legend,
      h('div', { class: 'row' },
        field(idp + '-key', 'Key', item.key, '1 to 16 of a-z, 0-9, _ and -; not “control”.'),
        field(idp + '-weight', 'Weight (%)', item.weight)),
      item.content.el, h('p', {}, item.rm));
    variants.push(item);
    variantsBox.append(item.row);
  }
  function renumber() {
    variants.forEach((v, i) => {
      v.legend.textContent = `Variant ${i + 1}`;
      v.key.dataset.field = `experiment.variants[${i}].key`;
      v.weight.dataset.field = `experiment.variants[${i}].weight`;
      v.content.setPrefix(`experiment.variants[${i}].`);
      v.rm.disabled = variants.length <= 1;
    });
    addVariantBtn.disabled = variants.length >= MAX_VARIANTS;
  }
  function render() {
    fields.hidden = !on;
    controlBox.hidden = !controlOn.checked;
    if (on) return setKids(off);
    if (stored) return setKids(off, h('p', { id: 'experiment-removed' }, 'The experiment is removed when you save. Once saved, a new one can be added.'));
    setKids(off,
      h('p', { class: 'help' }, 'Test up to 8 content variants of this popup, and optionally a control that gets nothing: each user is assigned one arm for good, and the results compare them.'),
      h('p', {}, h('button', { type: 'button', class: 'secondary', id: 'experiment-add', onclick: add }, 'Add an experiment')));
  }
  function add() {
    const own = ownContent();
    load({ coverage_percent: 100, variants: [{ ...own, key: 'a', weight: 50 }, { ...own, key: 'b', weight: 50 }], control: null, planned_end_at: null, primary_goal: null });
    onChange();
    variants[0].key.focus();
  }
  function remove() {
    on = false;
    render();
    onChange();
    (document.getElementById('experiment-add') || fs.querySelector('legend')).focus?.();
  }
  function load(e) {
    on = !!e;
    variants = [];
    variantsBox.replaceChildren();
    if (e) {
      coverage.value = e.coverage_percent ?? '';
      for (const v of e.variants || []) addVariant(v);
      controlOn.checked = !!e.control;
      controlWeight.value = e.control?.weight ?? '';
      controlMode.value = e.control?.mode || 'none';
      plannedEnd.value = utcToLocalInput(e.planned_end_at);
    }
    loadGoal(e?.primary_goal);
    renumber();
    render();
    if (concluded) {
      // read-only: only the removal is offered
      for (const el of fields.querySelectorAll('input, select, textarea, button')) if (el !== removeBtn) el.disabled = true;
    }
  }
  function read(problems) {
    if (!on) return null;
    const num = (el) => (el.value.trim() === '' ? undefined : Number(el.value));
    const instead = nonexistentLocal(plannedEnd.value);
    if (instead) problems.push({ field: 'experiment.planned_end_at', message: `${plannedEnd.value.replace('T', ' ')} does not exist in ${zoneName}: the clocks jump forward that night. Enter a time before or after the jump.` });
    const e = {
      coverage_percent: num(coverage),
      variants: variants.map((v) => ({ key: v.key.value.trim(), weight: num(v.weight), ...v.content.read(problems) })),
      control: controlOn.checked ? { weight: num(controlWeight), mode: controlMode.value } : null,
      planned_end_at: localInputToUTC(plannedEnd.value),
      primary_goal: primaryGoal.value || null,
    };
    // the API refuses weights that do not sum to 100: nothing is sent, no review opens
    const { sum } = armWeights(e);
    if (!concluded && sum !== 100) problems.push({ field: 'experiment.variants', message: `weights (the variants' and the control's) must sum to 100, not ${sum}` });
    return e;
  }
  // refresh shows whether the weights of the form's arms sum to 100
  function refresh(e) {
    if (!e) return;
    const { arms, sum } = armWeights(e);
    const ok = sum === 100 && arms >= 2;
    sumOut.className = 'weights-sum ' + (ok ? 'ok' : 'bad');
    sumOut.textContent = arms < 2 ? `One arm only (weights sum to ${sum}%): add a variant or a control; an experiment needs two arms.`
      : (sum === 100 ? `Weights sum to 100% over ${arms} arms.` : `Weights sum to ${sum}%: they must sum to 100%.`);
  }
  return { el: fs, load, read, refresh };
}

// audiencePicker: the Audiences part of the popup form's targeting (targeting.audiences
// {include, exclude}: audience ids), a checkbox list per side fed by the audience list. An id the
// list does not know (a deleted audience, or a list that cannot be read now) stays on show,
// checked, so that saving never drops it unseen. The checked boxes carry the API's field names
// (targeting.audiences.include[0] …) in the order they are sent, so a field error lands on its box.
const AUDIENCE_SIDES = [
  ['include', 'Only users in these audiences', 'A user must be a member of at least one audience checked (at most 20). None checked: no such condition.'],
  ['exclude', 'Never users in these audiences', 'A member of any audience checked never gets this popup, whatever else matches (at most 20).'],
];
function audiencePicker(cache) {
  const sides = {};
  const els = AUDIENCE_SIDES.map(([side, legend, help]) => {
    const list = h('div', { class: 'audience-list', id: `aud-${side}-list` });
    const fs = h('fieldset', { id: 'aud-' + side, 'data-field': 'targeting.audiences.' + side, 'aria-describedby': `aud-${side}-help` },
      h('legend', {}, legend), h('p', { class: 'help', id: `aud-${side}-help` }, help), list);
    sides[side] = { fs, list };
    return fs;
  });
  const note = cache.available ? (cache.list.length ? null : h('p', { class: 'help', id: 'aud-none' }, 'No audience exists yet: ', h('a', { href: '#/audiences' }, 'create one on the Audiences page'), '.'))
    : h('p', { class: 'alert info', id: 'aud-unavailable' }, 'Audiences: ' + errorText(cache.r) + ' The audiences this popup already names are kept.');
  // keys: the original id of every box's value (an id is sent with the type it came with)
  const ids = new Map();
  function box(side, id, label) {
    const key = String(id);
    ids.set(key, id);
    const cid = `aud-${side}-${key.replace(/[^A-Za-z0-9_-]/g, '_')}`;
    return h('div', { class: 'field' }, h('label', { class: 'check', for: cid }, h('input', { type: 'checkbox', id: cid, name: 'aud-' + side, value: key }), ' ', label));
  }
  const el = h('div', { id: 'audience-targeting' }, h('p', { class: 'label' }, 'Audiences'), note, h('div', { class: 'audience-picks' }, els));
  return {
    el,
    load(aud) {
      for (const [side] of AUDIENCE_SIDES) {
        const want = (aud?.[side] || []).map(String);
        const known = cache.list.map((a) => box(side, a.id, [a.name || `audience #${a.id}`, h('span', { class: 'muted' }, ` (${fmtInt(a.size)} member${a.size === 1 ? '' : 's'})`)]));
        const unknown = (aud?.[side] || []).filter((id) => !cache.byId.has(String(id))).map((id) => box(side, id, `audience #${id} (not in the list: deleted, or the list cannot be read)`));
        setKids(sides[side].list, known, unknown);
        for (const c of sides[side].list.querySelectorAll('input')) c.checked = want.includes(c.value);
      }
      this.renumber();
    },
    renumber() {
      for (const [side] of AUDIENCE_SIDES) {
        let i = 0;
        for (const c of sides[side].list.querySelectorAll('input')) {
          if (c.checked) c.dataset.field = `targeting.audiences.${side}[${i++}]`;
          else delete c.dataset.field;
        }
      }
    },
    read() {
      this.renumber();
      const out = {};
      for (const [side] of AUDIENCE_SIDES) out[side] = [...sides[side].list.querySelectorAll('input:checked')].map((c) => ids.get(c.value));
      return out;
    },
  };
}

// phaseChoice is the review's choice when an edit of an experiment that has run would start a new
// phase: a new phase (the default) or keeping the current assignment (?accept_reassignment=true).
// phaseChoice is the part of a review of a change that starts a new phase: the verdict of the
// phase it ends (results: its results answer), what each choice does, and how many of the
// users the phase counted keeping the assignment moves (moves: the reassignment answer,
// counted by the API user by user).
function phaseChoice(e, results, moves) {
  const name = uid('phase');
  const w = results?.ok ? results.body.verdict?.winner : null;
  const verdict = !results?.ok ? `The results of phase ${e.phase} cannot be read now; they are kept.`
    : (w ? `Phase ${e.phase}'s verdict ends: it names ${w === 'control' ? 'the control' : `variant “${w}”`} the winner. It stays readable on the results page, and Conclude still offers it.`
      : `Phase ${e.phase} names no winner so far (${(results.body.verdict?.reason || 'no verdict').replace('_', ' ')}); its results are kept.`);
  const moved = moves?.ok ? `${fmtInt(moves.body.moved_users)} of the ${fmtInt(moves.body.exposed_users)} users counted so far move to another arm` : 'the users whose bucket now falls in another arm move to it';
  const el = h('fieldset', { id: 'phase-choice' },
    h('legend', {}, `This change starts phase ${e.phase + 1} of the experiment`),
    h('p', { id: 'phase-warning', class: 'alert warn' }, `The arms, weights, content or control change: in a new phase every user is assigned afresh and the results start again from zero (phase ${e.phase}'s results are kept).`),
    h('p', { id: 'phase-verdict', class: w ? 'alert warn' : 'muted' }, verdict),
    h('label', { class: 'check block' }, h('input', { type: 'radio', name, value: 'new', id: 'phase-new', checked: true }), ` Start phase ${e.phase + 1}: a new assignment, the results start again`),
    h('label', { class: 'check block' }, h('input', { type: 'radio', name, value: 'keep', id: 'phase-keep', 'aria-describedby': 'phase-keep-help' }), ' Keep current assignment (moves users; audited)'),
    h('p', { class: 'help', id: 'phase-keep-help' }, `Stays in phase ${e.phase}: ${moved}, and the results of phase ${e.phase} mix both versions. The audit log records the write as a reassignment.`));
  return { el, keep: () => el.querySelector('#phase-keep').checked };
}

// editScreen shows a popup's form (id null: a new one). carry, when given, holds the stored
// version already in hand ({stored, etag}, after Pause or a stale save) and the operator's unsaved
// edits with the reading of the version they started from ({edits, base}), re-applied onto it.
// transitionReview is the review of a start or a stop (confirmDialog's arguments): what it does to
// whom, the arms it assigns, and, for a popup that is a draft, that nobody sees it until it is
// published.
function transitionReview(kind, p) {
  const e = p.experiment;
  const live = isLive(p.status);
  const reach = p.status === 'draft' ? 'This popup is a draft: nobody sees it, so nobody is assigned or counted until it is published.'
    : (p.status === 'paused' ? 'This popup is paused: nobody is assigned until it is resumed.' : 'Every instance applies it within 2 seconds.');
  if (kind === 'stop') {
    return ['Stop the experiment?', `Nobody is assigned any more: every user gets the popup's own content. The results are kept; it may start again in the same phase. ${live ? 'Every instance applies it within 2 seconds.' : ''}`, 'Stop the experiment', null];
  }
  const arms = [...e.variants.map((v) => [`variant “${v.key}”`, v.weight, v.title || '']), ...(e.control ? [[`control (${e.control.mode === 'fall_through' ? 'falls through to the next popup' : 'gets nothing'})`, e.control.weight, '']] : [])];
  const table = h('table', { id: 'start-arms' }, h('caption', {}, `The arms of phase ${e.phase}, over ${e.coverage_percent ?? 100}% of the popup's users`),
    h('thead', {}, h('tr', {}, ['Arm', 'Weight', 'Title'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, arms.map(([a, w, t]) => h('tr', {}, h('th', { scope: 'row' }, a), h('td', { class: 'num' }, `${w}%`), h('td', {}, t)))));
  return [e.status === 'stopped' ? 'Start the experiment again?' : 'Start the experiment?',
    `Users are assigned an arm for good and counted from now on. ${reach}`, e.status === 'stopped' ? 'Start again' : 'Start',
    h('div', {}, h('p', { class: p.status === 'draft' ? 'alert info' : 'muted', id: 'start-reach' }, reach), table)];
}

// TRANSITIONS name the experiment's transitions for the messages of the pages that make them.
const TRANSITIONS = {
  start: { doing: 'Starting the experiment', done: () => 'Experiment started.' },
  stop: { doing: 'Stopping the experiment', done: () => 'Experiment stopped.' },
  conclude: { doing: 'Concluding the experiment', done: (p) => `Concluded: variant “${p?.experiment?.concluded_variant ?? ''}” is the popup's content now.` },
};

// experimentTransition reviews a start, stop or conclude of popup p's experiment (as a publish is
// reviewed) and, confirmed, makes it on the version etag names; null when cancelled.
async function experimentTransition(kind, p, etag) {
  let payload;
  if (kind === 'conclude') {
    const review = await concludeReview(p);
    if (!await confirmDialog(...review.dialog)) return null;
    payload = { variant: review.chosen() };
  } else if (!await confirmDialog(...transitionReview(kind, p))) return null;
  return api('POST', `/admin/v1/popups/${p.id}/experiment/${kind}`, payload, { ifMatch: etag });
}

// concludeReview is the review of a conclude of popup p's experiment: the variant to ship, the
// winner of the latest phase whose results named one offered first, with that phase. Nothing is
// pre-selected when no phase named a variant: the page never suggests a loser.
async function concludeReview(p) {
  const e = p.experiment;
  let found = null;
  let latest = null; // the current phase's results
  for (let n = e.phase; n >= 1 && !found; n--) {
    const r = await api('GET', `/admin/v1/popups/${p.id}/experiment/results?phase=${n}`);
    if (!r.ok) break;
    latest = latest || r.body;
    const w = r.body.verdict?.winner;
    if (w && e.variants.some((v) => v.key === w)) found = { key: w, phase: n };
  }
  const reason = (latest?.verdict?.reason || 'no verdict').replace('_', ' ');
  const said = !latest ? 'The results cannot be read now: choose the variant yourself.'
    : (found && found.phase === e.phase ? `The results of phase ${e.phase} name variant “${found.key}” the winner.`
      : (found ? `Phase ${found.phase} named variant “${found.key}” the winner; the current phase ${e.phase} names none yet (${reason}).`
        : `The results of phase ${e.phase} name no winner (${reason}), nor does an earlier phase: choose the variant yourself.`));
  const name = uid('conclude');
  const pick = h('fieldset', { id: 'conclude-choice' }, h('legend', {}, 'The variant to ship'),
    h('p', { class: 'help', id: 'conclude-verdict' }, said),
    e.variants.map((v) => h('label', { class: 'check block' },
      h('input', { type: 'radio', name, value: v.key, required: true, checked: v.key === found?.key }), ` ${v.key}`, v.title ? ` “${v.title}”` : '',
      v.key === found?.key ? ` (the winner of phase ${found.phase})` : '')));
  const live = isLive(p.status) ? ' Every instance serves it within 2 seconds.' : '';
  return {
    dialog: ['Conclude the experiment?', `The chosen variant's content (title, content, image, link, buttons and ext) becomes the popup's own, for every user; the experiment ends and becomes read-only, its results kept.${live}`, 'Conclude and ship', pick],
    chosen: () => pick.querySelector('input:checked')?.value,
  };
}

// CONTENT_FIELDS are the popup's own content: what a conclude ships (docs/CONTRACT.md §10).
const CONTENT_FIELDS = new Set(['title', 'content', 'image_url', 'image_alt', 'link_url', 'buttons', 'ext']);

// shippedWarning: a write that changes the content a concluded experiment shipped ends the
// experiment (docs/CONTRACT.md §10); the review says so, and the write asks for it
// (end_experiment=true). Null when the write does not.
function shippedWarning(stored, next) {
  const e = stored?.experiment;
  if (e?.status !== 'concluded' || !next?.experiment) return null;
  if (!diff(stored, next).some((r) => CONTENT_FIELDS.has(r.field.split(/[.[]/)[0]))) return null;
  return h('div', { class: 'alert warn', id: 'shipped-warning' },
    h('p', {}, `This changes the content that variant “${e.concluded_variant}” shipped when the experiment was concluded. `,
      'The concluded experiment is removed with this write, so the popup no longer says a variant shipped while the app shows other content. Its revisions stay in the history.'));
}

async function editScreen(id, carry) {
  let current = null; // the stored popup, for an edit
  let etag = null;
  const seq = navSeq;
  if (!id && !can('edit_drafts')) {
    return screen('New popup', roleNote(`You are signed in as ${me.operator}, a ${me.role}: creating popups needs the editor role (drafts) or the publisher role (live popups).`));
  }
  if (id && carry?.stored) {
    current = carry.stored; etag = carry.etag;
  } else if (id) {
    const r = await api('GET', '/admin/v1/popups/' + id);
    if (seq !== navSeq) return;
    if (!r.ok) return screen('Popup #' + id, alertBox(errorText(r)));
    current = r.body; etag = r.etag;
  }
  const [audienceList, goalsR] = await Promise.all([loadAudiences(), api('GET', '/admin/v1/goals')]);
  const audiences = audiencePicker(audienceList);
  if (seq !== navSeq) return;

  // seed: the popup's bucketing seed (docs/CONTRACT.md §2). A new draft (a duplicate too) draws
  // its own when the form opens and sends it with every preview and with the create, so a
  // preview buckets users as the saved popup will; a stored popup's is sent back unchanged.
  const seed = current ? current.bucket_seed : newBucketSeed();
  const seedIn = h('input', { type: 'text', name: 'bucket_seed', 'data-field': 'bucket_seed', readonly: true, class: 'mono', value: seed ?? '' });
  const errSummary = h('div', { id: 'form-errors', tabindex: '-1' });
  const previewBox = h('div', { class: 'preview', id: 'preview' });

  // mayEdit: the role may save this popup (a draft or a new one: editor; any other: publisher).
  // Otherwise the form is a read-only view. Without publish, the status stays what it is.
  const mayEdit = !current || current.status === 'draft' ? can('edit_drafts') : can('publish');
  const statuses = can('publish') ? ['draft', 'active', 'paused', 'archived'] : [mayEdit ? 'draft' : current.status];
  const f = {
    name: textInput('name', { required: true, autocomplete: 'off' }),
    status: h('select', { name: 'status', 'data-field': 'status' }, statuses.map((s) => h('option', { value: s }, s))),
    priority: numInput('priority'),
    start_at: h('input', { type: 'datetime-local', name: 'start_at', 'data-field': 'start_at' }),
    end_at: h('input', { type: 'datetime-local', name: 'end_at', 'data-field': 'end_at' }),
    min_app_version: textInput('min_app_version', { 'data-field': 'targeting.min_app_version', placeholder: 'e.g. 8.10.0' }),
    max_app_version: textInput('max_app_version', { 'data-field': 'targeting.max_app_version' }),
    regions: listInput('regions', 'targeting.regions'),
    langs: listInput('langs', 'targeting.langs'),
    rollout_percent: numInput('rollout_percent', { 'data-field': 'targeting.rollout_percent' }),
    uids: listInput('uids', 'targeting.uids'),
    max_impressions: numInput('max_impressions'),
  };
  const content = contentEditor({ own: true, onChange: () => update() });
  const translations = translationsEditor({ ownContent: () => content.read([]), onChange: () => update() });
  const exempt = h('input', { type: 'checkbox', id: 'f-exempt', name: 'exempt_from_caps', 'data-field': 'exempt_from_caps', 'aria-describedby': 'f-exempt-help' });
  const holdoutExempt = h('input', { type: 'checkbox', id: 'f-holdout-exempt', name: 'holdout_exempt', 'data-field': 'holdout_exempt', 'aria-describedby': 'f-holdout-exempt-help' });
  const exp = experimentEditor({ stored: current?.experiment || null, goals: goalsR, head: experimentHead(), ownContent: () => content.read([]), onChange: () => update() });
  const dur = {
    reshow: durationField('f-reshow', 'reshow_after_seconds', 'Show again after', 'After an impression, hidden from that user this long. Empty: 1 day.', false),
    click: durationField('f-click', 'click_cooldown_seconds', 'After a click, hide for', 'Empty: 0, shown again at the next reshow.', true),
    close: durationField('f-close', 'close_cooldown_seconds', 'After a close, hide for', 'Empty: the same as “Show again after”.', true),
  };
  const platformBoxes = ['ios', 'android', 'web'].map((pl) => {
    const cid = 'platform-' + pl;
    return h('label', { class: 'check', for: cid }, h('input', { type: 'checkbox', id: cid, name: 'platforms', value: pl }), ' ' + pl);
  });
  const platformSet = h('fieldset', { 'data-field': 'targeting.platforms', id: 'platforms', 'aria-describedby': 'platforms-help' },
    h('legend', {}, 'Platforms'), platformBoxes, h('p', { class: 'help', id: 'platforms-help' }, 'None checked: every platform.'));

  // experimentHead: the stored experiment's status and phase, its results, and the transitions the
  // role may use (as a PUT of this popup would need: docs/CONTRACT.md §10).
  function experimentHead() {
    const e = current?.experiment;
    if (!e) return null;
    const st = e.status;
    const btn = (kind, label, cls = 'secondary') => h('button', { type: 'button', class: cls, id: 'experiment-' + kind, onclick: () => transition(kind) }, label);
    return h('div', { class: 'experiment-head' },
      h('p', { id: 'experiment-status' }, 'Status: ', h('span', { class: 'badge ' + st }, st),
        ` · phase ${e.phase}`, e.phase_started_at ? `, first run ${fmtTime(e.phase_started_at)}` : ', not run yet',
        e.concluded_variant ? ` · variant “${e.concluded_variant}” shipped: the experiment is read-only` : ''),
      h('p', {}, h('a', { href: `#/popups/${current.id}/experiment`, id: 'experiment-results-link' }, 'Experiment results'),
        st === 'draft' ? h('span', { class: 'muted' }, ' (none until it runs)') : null),
      mayEdit && st !== 'concluded' ? h('div', { class: 'actions' },
        st === 'draft' || st === 'stopped' ? btn('start', st === 'stopped' ? 'Start again…' : 'Start the experiment…', '') : null,
        st === 'running' ? btn('stop', 'Stop the experiment…') : null,
        // the API concludes a running or stopped experiment only: a draft has no results to act on
        st === 'running' || st === 'stopped' ? btn('conclude', 'Conclude…') : null) : null);
  }

  // transition starts, stops or concludes the stored experiment, based on the version on show
  // (If-Match); the form's unsaved edits stay, re-applied onto the version it stores.
  async function transition(kind) {
    const r = await experimentTransition(kind, current, etag);
    if (!r) return;
    if (r.status === 412) return stale(TRANSITIONS[kind].doing);
    if (!r.ok) return showErrors(r);
    toast(TRANSITIONS[kind].done(r.body));
    editScreen(current.id, { stored: r.body, etag: r.etag, edits: body(), base: baseline });
  }

  // translationTable: the stored popup's strings as a CSV table for translators, and the table
  // brought back (PUT, If-Match the version on show); the form then shows the version it stored.
  function translationTable() {
    const out = h('div', { id: 'translations-csv-out', 'aria-live': 'polite' });
    const file = h('input', { type: 'file', id: 'translations-file', name: 'translations-file', accept: '.csv,text/csv' });
    async function get() {
      const r = await download(`/admin/v1/popups/${current.id}/translations.csv`);
      if (!r.ok) return setKids(out, alertBox('Translations CSV: ' + errorText(r)));
      const a = h('a', { href: URL.createObjectURL(r.blob), download: r.filename || `popup-${current.id}-translations.csv` }, 'translations.csv');
      a.hidden = true;
      document.body.append(a);
      a.click();
      a.remove();
      setKids(out, alertBox(`Downloaded ${a.download}: one row per string, one column per language.`, 'info'));
    }
    async function put() {
      const f0 = file.files[0];
      if (!f0) return file.focus();
      const r = await upload('PUT', `/admin/v1/popups/${current.id}/translations.csv`, f0, { contentType: 'text/csv', ifMatch: etag });
      if (r.status === 412) return stale('Uploading the translations');
      if (!r.ok) {
        const fes = r.body?.error?.fields || [];
        return setKids(out, h('div', { class: 'alert error', role: 'alert', id: 'translations-csv-errors' },
          // the server's message already says the table was not applied: one sentence, each cell once below
          h('p', {}, fes.length ? 'The table was not applied; nothing changed. Fix these cells and upload it again:' : 'The table was not applied: ' + errorText(r)),
          fes.length ? h('ul', {}, fes.map((fe) => h('li', {}, `${fe.field}: ${fe.message}`))) : null));
      }
      toast(r.etag === etag ? 'The table changes nothing: nothing written.' : 'Translations uploaded.');
      editScreen(current.id, { stored: r.body, etag: r.etag });
    }
    return h('section', { class: 'card', id: 'translations-table', 'aria-labelledby': 'translations-table-h' },
      h('h3', { id: 'translations-table-h' }, 'Translation table (CSV)'),
      h('p', { class: 'help' }, 'For translators: every string of the saved popup and its variants, one column per language. Upload it back whole: a problem names its row and column and nothing is applied.'),
      h('p', {}, h('button', { type: 'button', class: 'secondary', id: 'translations-download', onclick: get }, 'Download CSV')),
      mayEdit ? h('div', { class: 'row' }, field('translations-file', 'Upload a table', file),
        h('p', {}, h('button', { type: 'button', class: 'secondary', id: 'translations-upload', onclick: put }, 'Upload CSV'))) : null,
      out);
  }

  // load puts a popup (stored, or in the form's own shape) into the form.
  function load(src) {
    const p = structuredClone(src);
    const t = { ...DEFAULTS.targeting, ...(p.targeting || {}) };
    f.name.value = p.name ?? ''; f.status.value = p.status || 'draft'; f.priority.value = p.priority ?? '';
    f.start_at.value = utcToLocalInput(p.start_at); f.end_at.value = utcToLocalInput(p.end_at);
    f.min_app_version.value = t.min_app_version || ''; f.max_app_version.value = t.max_app_version || '';
    f.regions.value = (t.regions || []).join('\n'); f.langs.value = (t.langs || []).join('\n');
    f.rollout_percent.value = t.rollout_percent ?? ''; f.uids.value = (t.uids || []).join('\n');
    dur.reshow.set(p.reshow_after_seconds); dur.click.set(p.click_cooldown_seconds); dur.close.set(p.close_cooldown_seconds);
    f.max_impressions.value = p.max_impressions ?? '';
    content.load(p);
    translations.load(p.translations);
    exempt.checked = !!p.exempt_from_caps;
    holdoutExempt.checked = !!p.holdout_exempt;
    exp.load(p.experiment ?? null);
    for (const l of platformBoxes) { const c = l.querySelector('input'); c.checked = (t.platforms || []).includes(c.value); }
    audiences.load(t.audiences);
  }

  // read turns the form into the admin wire shape ({body}) and lists what the page itself can tell
  // is wrong ({problems}: a duration that is no number, a time that does not exist here, ext).
  function read() {
    const num = (el) => (el.value.trim() === '' ? undefined : Number(el.value));
    const problems = [];
    const own = content.read(problems);
    const seconds = {};
    for (const [k, name] of [['reshow', 'reshow_after_seconds'], ['click', 'click_cooldown_seconds'], ['close', 'close_cooldown_seconds']]) {
      const d = dur[k].read();
      if (d.error) problems.push({ field: name, message: d.error });
      seconds[name] = d.seconds;
    }
    for (const k of ['start_at', 'end_at']) {
      const v = f[k].value;
      const instead = nonexistentLocal(v);
      if (instead) {
        problems.push({ field: k, message: `${v.replace('T', ' ')} does not exist in ${zoneName}: the clocks jump forward that night (the browser would take ${instead.replace('T', ' ')}). Enter a time before or after the jump.` });
      }
    }
    const body = {
      name: f.name.value, status: f.status.value, priority: num(f.priority),
      start_at: localInputToUTC(f.start_at.value), end_at: localInputToUTC(f.end_at.value),
      targeting: {
        platforms: platformBoxes.map((l) => l.querySelector('input')).filter((c) => c.checked).map((c) => c.value),
        min_app_version: f.min_app_version.value.trim(), max_app_version: f.max_app_version.value.trim(),
        regions: splitLines(f.regions.value), langs: splitLines(f.langs.value),
        rollout_percent: num(f.rollout_percent), uids: splitLines(f.uids.value),
      },
      ...seconds, max_impressions: num(f.max_impressions),
      ...own,
    };
    // sent once the popup has any or the stored one had the field, so that a popup without them
    // saves on a server that does not know them
    const tr = translations.read();
    if (Object.keys(tr).length || current?.translations) body.translations = tr;
    if (exempt.checked || current?.exempt_from_caps !== undefined) body.exempt_from_caps = exempt.checked;
    if (holdoutExempt.checked || current?.holdout_exempt !== undefined) body.holdout_exempt = holdoutExempt.checked;
    if (seed) body.bucket_seed = seed;
    // targeting.audiences: sent once the popup names any audience or the stored one had the
    // field, so that a popup without audiences saves on a server that does not know them
    const aud = audiences.read();
    if (aud.include.length || aud.exclude.length || current?.targeting?.audiences) body.targeting.audiences = aud;
    // experiment: sent while the form holds one, and as null to remove the stored one; a popup
    // that never had one is sent without it
    const e = exp.read(problems);
    if (e || current?.experiment) body.experiment = e;
    return { body, problems };
  }
  const body = () => read().body;

  // baseline: the form's reading of the stored version (or of a new popup's defaults); the form
  // holds unsaved edits while it reads otherwise.
  load(current || DEFAULTS);
  const baseline = body();
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  if (carry?.edits) load(merge3(carry.base, carry.edits, baseline));
  else if (!current && pendingDuplicate) load(pendingDuplicate);
  pendingDuplicate = null;
  const dirty = () => mayEdit && !same(body(), baseline);

  const utcNote = h('p', { class: 'help', id: 'window-utc', 'aria-live': 'polite' });
  const saveBtn = h('button', { type: 'button', id: 'save', onclick: () => save() });
  // previewArm: which content the preview shows, the popup's own or a variant's (by index)
  const previewArm = h('select', { id: 'preview-arm', name: 'preview-arm', onchange: () => update() });
  const previewArmField = field('preview-arm', 'Content shown', previewArm);
  function update() {
    const b = body();
    const vs = b.experiment?.variants || [];
    const want = ['own', ...vs.map((v, i) => `${i}:${v.key}`)];
    if ([...previewArm.options].map((o) => o.value).join('\n') !== want.join('\n')) {
      const cur = previewArm.selectedIndex;
      setKids(previewArm, want.map((v, i) => h('option', { value: v }, i === 0 ? 'The popup’s own content' : `Variant ${i}: ${vs[i - 1].key || '(no key)'}`)));
      previewArm.selectedIndex = cur > 0 && cur < want.length ? cur : 0;
    }
    previewArmField.hidden = vs.length === 0;
    const arm = vs[previewArm.selectedIndex - 1];
    const shown = translations.refresh(b);
    renderPreview(previewBox, arm ? { ...b, ...arm } : shown);
    exp.refresh(b.experiment);
    utcNote.textContent = `Stored as UTC: start ${b.start_at || 'open'}, end ${b.end_at || 'open'}.`;
    const publishing = isLive(b.status) || (current && isLive(current.status));
    saveBtn.textContent = publishing ? 'Review and publish…' : (current ? 'Save draft' : 'Create draft');
  }

  const live = current && isLive(current.status);
  // Enter in a field never saves: the form has no submit button, and a submit does nothing.
  const form = h('form', { id: 'popup-form', novalidate: true, 'data-id': current?.id ?? 'new', 'data-revision': current?.revision ?? 0 },
    errSummary,
    h('fieldset', {}, h('legend', {}, 'Basics'),
      field('f-name', 'Name', f.name, 'Unique among popups that are not archived.'),
      field('f-status', 'Status', f.status, 'Active or paused is live: saving it publishes, after a review of what changes.'),
      field('f-priority', 'Priority', f.priority, 'Higher wins; ties go to the lower id.')),
    h('fieldset', {}, h('legend', {}, 'Schedule'),
      field('f-start', `Start (${zoneName})`, f.start_at, `Empty: starts at once. In your browser's time zone, ${zoneName}.`),
      field('f-end', `End (${zoneName})`, f.end_at, 'Empty: never ends.'),
      utcNote),
    h('fieldset', {}, h('legend', {}, 'Targeting'),
      platformSet,
      field('f-minv', 'Minimum app version', f.min_app_version, 'Inclusive; empty: no minimum.'),
      field('f-maxv', 'Maximum app version', f.max_app_version, 'Inclusive; empty: no maximum.'),
      field('f-regions', 'Regions', f.regions, 'One per line, e.g. cn. Empty: every region.'),
      field('f-langs', 'Languages', f.langs, 'One per line, e.g. en. Empty: every language.'),
      field('f-rollout', 'Rollout percent', f.rollout_percent, '0 to 100 of users, stable per user.'),
      field('f-uids', 'Test uids', f.uids, 'One per line: these users get the popup whatever the rollout.'),
      audiences.el,
      h('details', { class: 'advanced' }, h('summary', {}, 'Advanced: bucketing seed'),
        field('f-seed', 'Bucketing seed', seedIn, current
          ? 'Which users fall in the rollout percent is decided by this seed, fixed when the popup was created; it never changes.'
          : 'Drawn for this new popup: “Try the draft” below buckets users with it, and the popup keeps it when saved, so the preview is what saving does.'))),
    h('fieldset', {}, h('legend', {}, 'Display rules'),
      dur.reshow.el, dur.click.el, dur.close.el,
      field('f-maximp', 'Maximum impressions per user', f.max_impressions, '0: unlimited.'),
      h('div', { class: 'field' }, h('label', { class: 'check', for: 'f-exempt' }, exempt, ' Exempt from the team’s pacing'),
        h('p', { class: 'help', id: 'f-exempt-help' }, 'Shown even within the minimum gap after another popup and past the daily cap (Settings): for service notices and outage messages.')),
      h('div', { class: 'field' }, h('label', { class: 'check', for: 'f-holdout-exempt' }, holdoutExempt, ' Exempt from the global holdout'),
        h('p', { class: 'help', id: 'f-holdout-exempt-help' }, 'Shown to the users the global holdout keeps from every other popup (Settings, Holdout): only for service notices, since what they see is not measured.'))),
    h('fieldset', {}, h('legend', {}, 'Content'), content.el),
    translations.el,
    current ? translationTable() : null,
    exp.el,
    actionBar(
      [mayEdit ? saveBtn : null,
        current?.status === 'draft' && can('publish') ? h('button', { type: 'button', class: 'secondary', id: 'publish', onclick: () => { f.status.value = 'active'; update(); save(); } }, 'Publish…') : null],
      [current && can('edit_drafts') ? h('button', { type: 'button', class: 'secondary', id: 'duplicate', onclick: duplicate }, 'Duplicate as draft') : null,
        live && can('publish') ? h('button', { type: 'button', class: 'secondary', id: 'pause', onclick: togglePause }, current.status === 'paused' ? 'Resume' : 'Pause') : null,
        current && current.status !== 'archived' && can('publish') ? h('button', { type: 'button', class: 'danger', id: 'archive', onclick: archive }, 'Archive') : null]));
  if (!mayEdit) {
    // a read-only view: every field shows its value and takes no input; the buttons that add or
    // remove a button of the popup go
    for (const el of form.querySelectorAll('input, textarea')) {
      if (el.type === 'checkbox') el.disabled = true; else el.readOnly = true;
    }
    for (const el of form.querySelectorAll('select')) el.disabled = true;
    for (const el of form.querySelectorAll('button')) if (!el.closest('.actions')) el.remove();
  }
  const readOnlyNote = mayEdit ? null : roleNote(can('edit_drafts')
    ? `This popup is ${current.status}: changing it needs the publisher role, so a publisher must make the change. You are signed in as ${me.operator}, an editor: to work on a copy, use Duplicate as draft.`
    : `You are signed in as ${me.operator}, a ${me.role}: this popup is shown read-only. Changing it needs the ${current.status === 'draft' ? 'editor' : 'publisher'} role.`);
  form.addEventListener('input', update);
  form.addEventListener('change', update);
  form.addEventListener('submit', (ev) => ev.preventDefault());

  function clearErrors() {
    setKids(errSummary, );
    for (const el of form.querySelectorAll('[aria-invalid]')) {
      el.removeAttribute('aria-invalid');
      el.setAttribute('aria-describedby', (el.getAttribute('aria-describedby') || '').split(' ').filter((x) => !x.endsWith('-err')).join(' '));
    }
    for (const el of form.querySelectorAll('.field-error')) el.remove();
  }

  // target is the element of an API field name, or of the nearest enclosing one
  // ("experiment.variants[1].buttons[0].text", then "…buttons[0]", "…buttons", "experiment.variants[1]", …)
  function target(fieldName) {
    const candidates = [fieldName];
    for (let c = fieldName, up; (up = c.replace(/(\.[^.[]*|\[\d+\])$/, '')) !== c;) candidates.push(c = up);
    for (const c of candidates) {
      const el = form.querySelector(`[data-field="${CSS.escape(c)}"]`);
      if (el) return el;
    }
    return null;
  }

  // entryMessage names the entry of a list field an error is about ("targeting.uids[1]": the
  // second entry, as the form read it, on its line).
  function entryMessage(fe, el) {
    const m = fe.field.match(/\[(\d+)\]$/);
    if (!m || el.tagName !== 'TEXTAREA') return fe.message;
    const e = lineOf(el.value, Number(m[1]));
    return e ? `“${e.text}” (line ${e.line}): ${fe.message}` : fe.message;
  }

  function showErrors(r, localFields) {
    clearErrors();
    const fields = localFields || r.body?.error?.fields || [];
    const items = [];
    let first = null;
    for (const fe of fields) {
      const el = target(fe.field);
      if (el) {
        const message = entryMessage(fe, el);
        const errId = (el.id || uid('fld')) + '-err';
        if (!el.id) el.id = errId.slice(0, -4);
        const existing = document.getElementById(errId);
        if (existing) existing.textContent += ' ' + message;
        else (el.tagName === 'FIELDSET' ? el : el.closest('.field') || el.parentElement).append(h('p', { class: 'field-error', id: errId }, message));
        el.setAttribute('aria-invalid', 'true');
        if (!(el.getAttribute('aria-describedby') || '').includes(errId)) el.setAttribute('aria-describedby', [el.getAttribute('aria-describedby'), errId].filter(Boolean).join(' '));
        first = first || el;
        items.push(h('li', {}, h('a', { href: '#' + el.id, onclick: (ev) => { ev.preventDefault(); (el.tagName === 'FIELDSET' ? el.querySelector('input') : el).focus(); } }, `${fe.field}: ${message}`)));
      } else items.push(h('li', {}, `${fe.field}: ${fe.message}`));
    }
    const text = localFields ? 'Fix the fields below: nothing was sent.'
      : errorText(r) + (r.status === 403 ? ' Nothing was written; your edits are kept in the form.' : '');
    if (r?.status === 403) loadMe().then(renderWho); // the role may have changed since sign-in
    setKids(errSummary, h('div', { class: 'alert error', role: 'alert' },
      h('p', {}, fields.length && !localFields && r.status === 400 ? 'The popup was not saved: ' + fields.length + ' field' + (fields.length > 1 ? 's need' : ' needs') + ' fixing.' : text),
      items.length ? h('ul', {}, items) : null));
    (first && first.tagName !== 'FIELDSET' ? first : errSummary).focus();
  }

  // stale: a write refused with 412. The operator's edits stay in the form; the newer stored
  // version is shown beside them, field by field, with a way to re-apply them onto it.
  async function stale(what) {
    clearErrors();
    const mine = body();
    const r = await api('GET', '/admin/v1/popups/' + current.id);
    if (!r.ok) return setKids(errSummary, alertBox(`${what} refused: this popup was changed by someone else since you opened it, and it cannot be read now: ${errorText(r)}`));
    const newer = r.body;
    const kept = dirty();
    const a = flatten(baseline); const b = flatten(newer); const c = flatten(mine);
    const show = (x) => (x === undefined ? '(none)' : (x === '' ? '(empty)' : x));
    const formKeys = new Set(Object.keys(baseline)); // what the form edits; the server's own fields are not compared
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b), ...Object.keys(c)])]
      .filter((k) => formKeys.has(k.split(/[.[]/)[0]) && (a[k] !== b[k] || a[k] !== c[k]));
    const table = h('table', { class: 'compare diff' },
      h('caption', {}, `Your form beside revision ${newer.revision}, saved by someone else since you opened revision ${current.revision}`),
      h('thead', {}, h('tr', {}, ['Field', `You started from (revision ${current.revision})`, `Stored now (revision ${newer.revision})`, 'Your form']
        .map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', {}, keys.map((k) => h('tr', { 'data-field': k }, h('th', { scope: 'row' }, k),
        h('td', {}, show(a[k])), h('td', { class: a[k] !== b[k] ? 'del' : '' }, show(b[k])), h('td', { class: a[k] !== c[k] ? 'ins' : '' }, show(c[k]))))));
    const reload = () => editScreen(current.id, { stored: newer, etag: r.etag });
    setKids(errSummary, h('div', { class: 'alert error', role: 'alert', id: 'stale' },
      h('p', {}, `${what} refused: this popup was changed by someone else since you opened it (now revision ${newer.revision}). Nothing was written.`),
      kept ? h('p', {}, 'Your edits are kept in the form. Compare them with the stored version, then re-apply them onto it (the fields you did not change take the newer values) and save again.') : null,
      kept ? table : null,
      h('div', { class: 'actions' },
        kept ? h('button', { type: 'button', id: 'reapply', onclick: () => editScreen(current.id, { stored: newer, etag: r.etag, edits: mine, base: baseline }) }, `Re-apply my edits onto revision ${newer.revision}`) : null,
        h('button', { type: 'button', class: kept ? 'secondary' : '', id: 'discard', onclick: reload }, kept ? `Discard my edits and load revision ${newer.revision}` : 'Reload the popup'))));
    errSummary.focus();
  }

  async function save() {
    const { body: b, problems } = read();
    if (problems.length) return showErrors(null, problems);
    if (current && !dirty()) { toast(`Nothing to save: the form is revision ${current.revision} as stored.`); return; }
    // an edit of the arms of an experiment that has run starts a new phase: the review says so
    // and offers to keep the assignment instead
    const se = current?.experiment;
    const newPhase = !!(se && b.experiment && se.phase_started_at && (se.status === 'running' || se.status === 'stopped') && armsChanged(baseline.experiment, b.experiment));
    const publishing = isLive(b.status) || (current && isLive(current.status));
    const shipped = current ? shippedWarning(current, b) : null;
    let keep = false;
    if (publishing || newPhase || shipped) {
      const rows = diff(current ? baseline : null, b);
      const choice = newPhase ? phaseChoice(se, ...await Promise.all([
        api('GET', `/admin/v1/popups/${current.id}/experiment/results`),
        api('POST', `/admin/v1/popups/${current.id}/experiment/reassignment`, { popup: b })])) : null;
      const title = shipped ? 'End the shipped experiment and save?' : (!publishing ? 'Save and start a new experiment phase?' : (!current ? 'Publish this new popup?' : (isLive(current.status) ? 'Publish these changes?' : 'Publish this draft?')));
      const text = !publishing ? `What changes against the stored revision ${current.revision}:`
        : (current ? `Every instance serves it within 2 seconds. What changes against the stored revision ${current.revision}:` : 'Every instance serves it within 2 seconds. What it holds:');
      const review = h('div', {}, shipped, choice?.el, diffTable(rows, publishing ? 'What publishing changes' : 'What saving changes'));
      if (!await confirmDialog(title, text, publishing ? 'Publish' : 'Save', review)) return;
      keep = !!choice?.keep();
    }
    const flags = [keep ? 'accept_reassignment=true' : '', shipped ? 'end_experiment=true' : ''].filter(Boolean).join('&');
    const r = current
      ? await api('PUT', '/admin/v1/popups/' + current.id + (flags ? '?' + flags : ''), b, { ifMatch: etag })
      : await api('POST', '/admin/v1/popups', b);
    if (r.status === 412) return stale('Saving');
    if (!r.ok) return showErrors(r);
    const phaseNote = newPhase ? (keep ? ' The experiment keeps its phase: users reassigned (audited).' : ` The experiment is in phase ${r.body.experiment?.phase ?? se.phase + 1} now.`) : '';
    toast((current ? `Saved revision ${r.body.revision}.` : `Created popup #${r.body.id}.`) + phaseNote);
    statsCache.at = 0;
    leaveGuard = null;
    if (current) editScreen(current.id, { stored: r.body, etag: r.etag }); else location.hash = '#/popups/' + r.body.id;
  }

  function duplicate() {
    const b = body();
    // the copy draws a seed of its own when its form opens: never the original's
    pendingDuplicate = { ...b, name: b.name + ' (copy)', status: 'draft', ext: b.ext ?? {}, bucket_seed: undefined };
    leaveGuard = null; // the edits go into the copy
    if (location.hash === '#/popups/new') route(); else location.hash = '#/popups/new';
    toast('Duplicated into a new draft: not saved yet.');
  }

  // Pause and Resume write the stored version with the other status; the form's unsaved edits
  // stay, re-applied onto the version the pause stored.
  async function togglePause() {
    const next = current.status === 'paused' ? 'active' : 'paused';
    const r = await api('PUT', '/admin/v1/popups/' + current.id, { ...current, status: next }, { ifMatch: etag });
    if (r.status === 412) return stale(next === 'paused' ? 'Pausing' : 'Resuming');
    if (!r.ok) return showErrors(r);
    toast(next === 'paused' ? 'Paused.' : 'Resumed.');
    editScreen(current.id, { stored: r.body, etag: r.etag, edits: body(), base: baseline });
  }

  async function archive() {
    if (!await confirmDialog('Archive this popup?', `“${current.name}” stops being served at once. Its history is kept.${dirty() ? ' Your unsaved edits are dropped.' : ''}`, 'Archive')) return;
    const r = await api('DELETE', '/admin/v1/popups/' + current.id, undefined, { ifMatch: etag });
    if (r.status === 412) return stale('Archiving');
    if (!r.ok) return showErrors(r);
    toast('Archived.');
    leaveGuard = null;
    editScreen(current.id, { stored: r.body, etag: r.etag });
  }

  const sizeGroup = h('fieldset', { class: 'device-pick' }, h('legend', {}, 'Preview on'),
    ['phone', 'web'].map((s) => h('label', { class: 'check' },
      h('input', { type: 'radio', name: 'device', value: s, checked: s === 'phone', onchange: () => { previewBox.dataset.device = s; } }), ' ' + (s === 'phone' ? 'Phone' : 'Web'))));
  previewBox.dataset.device = 'phone';

  const title = current ? `${current.name} (#${current.id})` : 'New popup';
  screen(title,
    readOnlyNote,
    current ? h('p', { class: 'muted', id: 'popup-meta' }, `Revision ${current.revision}, updated ${fmtTime(current.updated_at)} (times in ${zoneName}). Status: `, h('span', { class: 'badge ' + current.status }, current.status),
      // the experiment's results one Tab from the heading, not past every field of the form
      current.experiment ? [' · Experiment ', h('span', { class: 'badge ' + current.experiment.status }, current.experiment.status), ': ',
        h('a', { href: `#/popups/${current.id}/experiment`, id: 'experiment-results-top' }, 'results and decision')] : null) : null,
    h('div', { class: 'editor' },
      h('section', { 'aria-labelledby': 'form-h' }, h('h2', { id: 'form-h' }, 'Settings'), form),
      h('aside', { 'aria-labelledby': 'preview-h', class: 'preview-pane', id: 'preview-pane' }, h('h2', { id: 'preview-h' }, 'Live preview'), sizeGroup, previewArmField, translations.previewField, previewBox)),
    draftExplainSection(() => (current ? { ...body(), id: current.id } : body())),
    current ? resultsSection(current) : null,
    current ? historySection(current, { etag: () => etag, dirty, mayRollback: can('publish'), reopen: (r) => { leaveGuard = null; editScreen(current.id, { stored: r.body, etag: r.etag }); } }) : null);
  update();
  leaveGuard = dirty;
}

// actionBar is the popup form's sticky bar: the main actions, then the others. On a phone (the
// .phone-only controls show below 700 px) the others fold behind "More…", destructive ones out of
// the thumb's way, and "Preview" floats the live preview above the bar, beside the fields.
function actionBar(main, others) {
  const more = h('div', { class: 'more-actions', id: 'more-actions' }, others);
  const toggle = (btn, el, cls) => { const on = el.classList.toggle(cls); btn.setAttribute('aria-expanded', String(on)); };
  const moreBtn = h('button', { type: 'button', class: 'secondary phone-only', id: 'more-toggle', 'aria-expanded': 'false', 'aria-controls': 'more-actions',
    onclick: () => toggle(moreBtn, more, 'open') }, 'More…');
  const previewBtn = h('button', { type: 'button', class: 'secondary phone-only', id: 'preview-toggle', 'aria-expanded': 'false', 'aria-controls': 'preview-pane',
    onclick: () => toggle(previewBtn, document.getElementById('preview-pane'), 'floating') }, 'Preview');
  return h('div', { class: 'actions sticky' }, main, previewBtn, others.some(Boolean) ? [moreBtn, more] : null);
}

// renderPreview draws the popup as the app shows it, in a phone or web frame.
function renderPreview(box, p) {
  const img = p.image_url
    ? (/^https:\/\//i.test(p.image_url)
      ? h('img', { src: p.image_url, alt: p.image_alt || 'Popup image', class: 'pv-img', onerror: (ev) => ev.target.replaceWith(h('p', { class: 'pv-noimg' }, 'The image could not be loaded.')) })
      : h('p', { class: 'pv-noimg' }, 'Image not previewed: only https images are shown here.'))
    : null;
  const buttons = (p.buttons || []).filter((b) => b.text).map((b) => h('span', { class: 'pv-btn', title: b.link_url }, b.text));
  setKids(box, h('div', { class: 'frame', 'aria-label': 'Device preview', role: 'group' },
    h('div', { class: 'screen' },
      h('div', { class: 'pv-card' },
        h('span', { class: 'pv-close', 'aria-hidden': 'true' }, '×'),
        img,
        h('p', { class: 'pv-title', id: 'pv-title' }, p.title || '(no title)'),
        h('p', { class: 'pv-content' }, p.content || ''),
        buttons.length ? h('div', { class: 'pv-btns' }, buttons) : null))));
}

// resultsSection: a popup's results over a range of days of the team's reporting time zone (the
// API's default; docs/CONTRACT.md §8): a row per day and the totals, with unique users, clicks
// per button and the close rate; the CSV download holds exactly what the table shows.
const PRESETS = [7, 14, 30, 90];
function resultsSection(current) {
  const id = current.id;
  const fromIn = h('input', { type: 'date', name: 'from', id: 'results-from' });
  const toIn = h('input', { type: 'date', name: 'to', id: 'results-to' });
  const zoneLabel = h('p', { id: 'results-zone', class: 'muted' }, 'Days in the reporting time zone');
  const box = h('div', { id: 'results-out', 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Loading…'));
  const csvOut = h('span', { id: 'results-csv-out', class: 'muted' });
  let zone = ''; // the zone of the answer on show
  let shown = null; // {from, to, zone} of the table on show
  const form = h('form', { class: 'filters', 'aria-label': 'Date range of the results', novalidate: true },
    h('div', { class: 'field inline' }, h('label', { for: 'results-from' }, 'From'), fromIn),
    h('div', { class: 'field inline' }, h('label', { for: 'results-to' }, 'To'), toIn),
    h('button', { type: 'submit' }, 'Show'),
    h('div', { class: 'presets', role: 'group', 'aria-label': 'Last days' },
      PRESETS.map((n) => h('button', { type: 'button', class: 'secondary', 'data-days': n, onclick: () => preset(n) }, `Last ${n} days`))));
  form.addEventListener('submit', (ev) => { ev.preventDefault(); load(fromIn.value, toIn.value); });

  // preset: the last n days ending today in the reporting zone (not the browser's, not UTC)
  function preset(n) {
    const to = zoneToday(zone || 'UTC');
    load(addDays(to, -(n - 1)), to);
  }

  let seq = 0;
  async function load(from, to) {
    const mine = ++seq;
    const qs = new URLSearchParams();
    if (from) qs.set('from', from);
    if (to) qs.set('to', to);
    box.setAttribute('aria-busy', 'true');
    const r = await api('GET', `/admin/v1/popups/${id}/stats` + (qs.toString() ? '?' + qs : ''));
    if (mine !== seq) return;
    box.setAttribute('aria-busy', 'false');
    for (const el of [fromIn, toIn]) { el.removeAttribute('aria-invalid'); el.removeAttribute('aria-describedby'); }
    if (!r.ok) {
      const bad = r.body?.error?.fields?.[0]?.field || r.body?.error?.parameter || '';
      const el = bad === 'to' ? toIn : (bad === 'from' ? fromIn : null);
      if (el) { el.setAttribute('aria-invalid', 'true'); el.setAttribute('aria-describedby', 'results-err'); }
      return setKids(box, h('div', { class: 'alert ' + (notAvailable(r) ? 'info' : 'error'), role: 'alert', id: 'results-err' }, 'Results: ' + errorText(r)));
    }
    const b = r.body;
    zone = b.time_zone || 'UTC';
    fromIn.value = b.from; toIn.value = b.to;
    shown = { from: b.from, to: b.to, zone };
    zoneLabel.textContent = `Days in ${zone}, the team's reporting time zone: ${b.from} to ${b.to}, today is ${zoneToday(zone)}.`;
    csvOut.textContent = '';
    setKids(box, resultsTable(b));
  }

  async function csv() {
    if (!shown) return;
    const qs = new URLSearchParams({ from: shown.from, to: shown.to, tz: shown.zone });
    const r = await download(`/admin/v1/popups/${id}/stats.csv?` + qs);
    if (!r.ok) { csvOut.textContent = 'CSV: ' + errorText(r); return; }
    const a = h('a', { href: URL.createObjectURL(r.blob), download: r.filename || `popup-${id}-${shown.from}-${shown.to}.csv` }, r.filename || 'results.csv');
    a.hidden = true;
    document.body.append(a);
    a.click();
    a.remove();
    csvOut.textContent = `Downloaded ${a.download} (${shown.from} to ${shown.to}, days in ${shown.zone}).`;
  }

  load('', '');
  return h('section', { 'aria-labelledby': 'results-h', id: 'results' }, h('h2', { id: 'results-h' }, 'Results'), zoneLabel, form,
    h('p', {}, h('button', { type: 'button', class: 'secondary', id: 'results-csv', onclick: csv }, 'Download CSV'), ' ', csvOut), box);
}

// localeTable shows a stats answer's results per locale shown (by_locale), with the day table's
// cells; nothing when the range has none. Locale null is what no locale is known for.
function localeTable(b, num, users) {
  const locales = b.by_locale || [];
  if (!locales.length) return null;
  const unknown = (l) => l.locale === null || l.locale === undefined;
  return h('div', {},
    h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'Results per locale' }, h('table', { id: 'results-locales', class: 'results' },
      h('caption', {}, `Results per language shown, ${b.from} to ${b.to}: a click counts under the language of the impression it answers`),
      h('thead', {}, h('tr', {}, ['Locale', 'Impressions', 'Unique users', 'Clicks', 'CTR'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, locales.map((l) => h('tr', { 'data-locale': unknown(l) ? '' : l.locale },
        h('th', { scope: 'row', 'data-csv': 'locale: ' + (unknown(l) ? 'unknown' : l.locale) },
          unknown(l) ? 'not known' : (l.locale === 'default' ? 'default (the popup’s own content)' : l.locale)),
        num(l.impressions),
        unknown(l) ? h('td', { class: 'num', 'data-csv': '' }, h('abbr', { title: 'not counted: no language is known for these events' }, '—')) : users(l.users),
        num(l.clicks), h('td', { class: 'num' }, fmtPct(l.ctr))))))),
    locales.some(unknown) ? h('p', { class: 'help', id: 'results-locales-note' }, '“not known”: impressions recorded before languages were counted, and clicks sent without their decision id or whose impression was not found.') : null);
}

// campaignGoalsTable shows a stats answer's conversions on every goal (docs/CONTRACT.md §8
// "Conversions"): the users who converted within the goal's window after being shown the popup,
// and after clicking it, with their conversions and values; nothing when there are no goals.
function campaignGoalsTable(b) {
  const goals = b.goals || [];
  if (!goals.length) return null;
  const money = (v) => (v === null || v === undefined ? '—' : Number(v).toFixed(2));
  const cells = (g, c) => [h('td', { class: 'num' }, fmtInt(c.converted_users)), h('td', { class: 'num' }, fmtInt(c.conversions)),
    h('td', { class: 'num' }, g.value === 'sum' ? money(c.value_sum) : '—'), h('td', { class: 'num' }, g.value === 'sum' ? money(c.mean_value) : '—')];
  const incomplete = goals.filter((g) => !g.complete).map((g) => g.goal);
  return h('div', {},
    h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'Conversions per goal' }, h('table', { id: 'results-goals', class: 'results' },
      h('caption', {}, `Conversions per goal, ${b.from} to ${b.to} (conversions on those days of ${b.time_zone}), within each goal's window after the popup was shown, and after it was clicked`),
      h('thead', {}, h('tr', {}, ['Goal', 'Window', 'After', 'Converted users', 'Conversions', 'Value', 'Value per converted user'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, goals.flatMap((g) => ['shown', 'clicked'].map((after, i) => h('tr', { 'data-goal': g.goal, 'data-after': after },
        i === 0 ? h('th', { scope: 'rowgroup', rowspan: 2 }, g.name ? `${g.name} (${g.goal})` : g.goal, g.complete ? null : h('span', { class: 'badge warn' }, ' incomplete')) : null,
        i === 0 ? h('td', { rowspan: 2 }, `${g.window_hours} h`) : null,
        h('td', {}, after === 'shown' ? 'shown the popup' : 'clicked the popup'),
        ...cells(g, g[after]))))))),
    incomplete.length ? h('p', { class: 'help', id: 'results-goals-note' }, `Incomplete (${incomplete.join(', ')}): the range's first day less the goal's window reaches before what the action log keeps (POPUP_ACTION_LOG_RETENTION), so impressions before that are not found.`) : null,
    h('p', { class: 'help' }, 'A conversion counts for every popup the user was shown within the goal’s window before it (as Braze counts a conversion for every campaign received), so the popups’ conversions may add up to more than the conversions sent. “Clicked the popup” is the part of them whose user clicked it within the window.'));
}

// resultsTable shows a stats answer: a summary, then a row per day (newest first) and the totals,
// with the columns of its CSV.
function resultsTable(b) {
  const t = b.totals || {};
  const buttons = t.clicks_by_button || [];
  const bkey = (x) => (x.button === null || x.button === undefined ? 'u' : String(x.button));
  const num = (v) => h('td', { class: 'num' }, v ?? 0);
  const users = (v) => (v === null || v === undefined
    ? h('td', { class: 'num', 'data-csv': '' }, h('abbr', { title: 'not known: see the note below the table' }, '—'))
    : num(v));
  const complete = (d) => h('td', { 'data-csv': String(!!d.complete) }, d.complete ? 'yes' : 'no: incomplete');
  const byButton = (d) => {
    const m = new Map((d.clicks_by_button || []).map((x) => [bkey(x), x.clicks]));
    return buttons.map((x) => num(m.get(bkey(x)) ?? 0));
  };
  const cols = ['Date', 'Impressions', 'Unique users', 'Clicks', 'Closes', 'CTR', 'Close rate',
    ...buttons.map((x) => 'Clicks: ' + (x.button === null || x.button === undefined ? 'unspecified' : (x.text || `button ${x.button + 1} (removed)`))), 'Complete'];
  const days = (b.days || []).slice().reverse();
  const incomplete = days.filter((d) => !d.complete).length;
  const unknownUsers = t.users === null || t.users === undefined || days.some((d) => d.users === null) || b.uniques_complete === false;
  return h('div', {},
    h('p', { id: 'results-summary' }, `Impressions ${t.impressions ?? 0}, unique users ${t.users ?? '—'}, clicks ${t.clicks ?? 0} (CTR ${fmtPct(t.ctr)}), closes ${t.closes ?? 0} (close rate ${fmtPct(t.close_rate)}); users reached ever ${t.users_reached ?? 0}.`),
    sparkline((b.days || []).map((d) => d.impressions), 'Daily impressions: ' + (b.days || []).map((d) => d.impressions).join(', ')),
    // scrolls sideways on a phone: focusable and named, so the keyboard can scroll it too
    h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'Results per day' }, h('table', { id: 'results-table', class: 'results' },
      h('caption', {}, `Results per day, ${b.from} to ${b.to} (days in ${b.time_zone}), newest first; clicks per button in the columns “Clicks: …”`),
      h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, days.map((d) => h('tr', { class: d.complete ? '' : 'incomplete', 'data-date': d.date },
        h('th', { scope: 'row', 'data-csv': d.date }, d.date, d.complete ? null : h('span', { class: 'badge warn' }, ' incomplete')),
        num(d.impressions), users(d.users), num(d.clicks), num(d.closes),
        h('td', { class: 'num' }, fmtPct(d.ctr)), h('td', { class: 'num' }, fmtPct(d.close_rate)), byButton(d), complete(d)))),
      h('tfoot', {}, h('tr', {}, h('th', { scope: 'row', 'data-csv': 'total' }, 'Total'),
        num(t.impressions), users(t.users), num(t.clicks), num(t.closes),
        h('td', { class: 'num' }, fmtPct(t.ctr)), h('td', { class: 'num' }, fmtPct(t.close_rate)), byButton(t), complete(t))))),
    localeTable(b, num, users),
    campaignGoalsTable(b),
    unknownUsers ? h('p', { class: 'help', id: 'results-users-note' }, '“—” unique users: not known. Unique users are counted from the raw action log, which keeps only the last POPUP_ACTION_LOG_RETENTION (30 days by default); a day older than that, and a range starting before it, has no unique count. It is never estimated.') : null,
    incomplete ? h('p', { class: 'help', id: 'results-incomplete-note' }, `${incomplete} day${incomplete === 1 ? ' is' : 's are'} marked incomplete: its counts are the events known in this time zone's day (a lower bound), from before quarter-hour counting began.`) : null,
    h('p', { class: 'help' }, 'CTR is clicks / impressions, close rate closes / impressions. “Clicks: unspecified” are clicks whose app did not say which button.'));
}

// ---------------------------------------------------------------- experiment results

// goalsSection shows each goal's results per arm (docs/CONTRACT.md §14): converted users, the
// rate per exposed user and its comparison with the goal baseline, and a sum goal's mean value
// per user, as a table, and the rate and the difference with their intervals as charts; null when
// the results have no goal.
function goalsSection(b, arms, td, ci) {
  const keys = (arms[0]?.goals || []).map((g) => g.goal);
  if (!keys.length) return null;
  const base = b.goal_baseline;
  const money = (v) => (v === null || v === undefined ? '—' : Number(v).toFixed(2));
  const moneyIv = (iv) => (Array.isArray(iv) ? `[${money(iv[0])}, ${money(iv[1])}]` : '—');
  const tables = keys.map((key, k) => {
    const sum = arms.some((a) => a.goals[k].mean_value !== null && a.goals[k].mean_value !== undefined);
    // a goal with a value cap: the raw sum and the sum with each user's value capped, side by side
    const capped = arms.some((a) => a.goals[k].value_sum_capped !== null && a.goals[k].value_sum_capped !== undefined);
    const cols = ['Arm', 'Exposed users', 'Converted users', 'Conversion rate', 'Rate 95% interval', `Difference vs ${base} (points)`,
      'Difference interval (points)', `Lift vs ${base}`, 'Adjusted p', 'Sequential p', ...(sum ? ['Value per user', 'Value interval', `Value difference vs ${base}`, 'Value difference interval'] : []),
      ...(capped ? ['Value sum', 'Value sum, each user capped'] : [])];
    const primary = key === b.primary_goal;
    // the goal's charts, drawn as the click-through rate's: the rate, and the difference from the
    // baseline, each with its interval; the table above is their text equivalent
    const rateRows = intervalRows(arms, (a) => [a.goals[k].rate, a.goals[k].rate_ci]);
    const diffRows = intervalRows(arms, (a) => [a.goals[k].difference, a.goals[k].difference_ci]);
    const charts = rateRows.length || diffRows.length ? h('div', { class: 'charts', id: 'goal-charts-' + key },
      rateRows.length ? intervalChart(`chart-goal-${key}-rate`, `Goal ${key}: conversion rate by arm, with its 95% interval`, rateRows, false) : null,
      diffRows.length ? intervalChart(`chart-goal-${key}-diff`, `Goal ${key}: difference from the baseline (${base}), with its interval; 0 is no difference`, diffRows, true) : null) : null;
    return [h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-labelledby': 'goal-h-' + key },
      h('h3', { id: 'goal-h-' + key }, key, primary ? h('span', { class: 'badge running' }, ' primary goal: decides the verdict') : null),
      h('table', { id: 'goal-table-' + key, class: 'results' },
        h('caption', {}, `Goal ${key} by arm, against ${base} (95% intervals, Bonferroni-corrected over the comparisons)`),
        h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, arms.map((a) => {
          const g = a.goals[k];
          return h('tr', { 'data-arm': a.key },
            h('th', { scope: 'row' }, a.key, a.key === base ? h('span', { class: 'badge' }, ' baseline') : null),
            td(fmtNum(a.exposed_users)), td(fmtNum(g.converted_users)), td(pct(g.rate)), ci(interval(g.rate_ci)),
            td(points(g.difference, true)), ci(pointsInterval(g.difference_ci)), td(pct(g.lift, true)),
            td(pValue(g.p_adjusted)), td(pValue(g.sequential_p)),
            ...(sum ? [td(money(g.mean_value)), ci(moneyIv(g.mean_value_ci)), td(money(g.mean_value_difference)), ci(moneyIv(g.mean_value_difference_ci))] : []),
            ...(capped ? [td(money(g.value_sum)), td(money(g.value_sum_capped))] : []));
        })))), charts];
  });
  return h('section', { id: 'goals', 'aria-labelledby': 'goals-h' }, h('h2', { id: 'goals-h' }, 'Goals'),
    b.primary_goal ? h('p', { id: 'goals-primary' }, `The verdict is decided on goal ${b.primary_goal}, not on clicks.`) : null,
    ...tables.flat(),
    h('p', { class: 'help' }, `A user counts as converted once per goal, when a conversion came within the goal's window after their first exposure. Every arm is compared with ${base}; a control that shows nothing has conversions too, so its difference says whether the popup helps at all. Each goal's charts show the numbers of its table, which is their text equivalent.`));
}

// experimentScreen: an experiment's results for one phase (default the current one): the arms
// with their intervals, as a table and as an interval chart, the sample-ratio check, the verdict
// and why, and a row per UTC day and arm.
async function experimentScreen(id, qs) {
  const seq = navSeq;
  const phase = new URLSearchParams(qs || '').get('phase') || '';
  const [pr, rr] = await Promise.all([
    api('GET', '/admin/v1/popups/' + id),
    api('GET', `/admin/v1/popups/${id}/experiment/results` + (phase ? '?phase=' + encodeURIComponent(phase) : '')),
  ]);
  if (seq !== navSeq) return;
  const p = pr.ok ? pr.body : null;
  const back = h('p', {}, h('a', { href: '#/popups/' + id }, `← Popup #${id}${p ? ' ' + p.name : ''}`));
  const title = `Experiment results: ${p ? p.name : 'popup'} (#${id})`;
  const phases = Math.max(p?.experiment?.phase || 0, rr.ok ? rr.body.phase : 0, Number(phase) || 0);
  const sel = h('select', { id: 'phase-select', name: 'phase' },
    Array.from({ length: phases }, (_, i) => phases - i).map((n) => h('option', { value: n, selected: (rr.ok ? rr.body.phase : Number(phase)) === n }, `Phase ${n}${n === p?.experiment?.phase ? ' (current)' : ''}`)));
  sel.addEventListener('change', () => { location.hash = `#/popups/${id}/experiment?phase=${sel.value}`; });
  const picker = phases > 1 ? h('form', { class: 'filters', 'aria-label': 'Phase of the experiment', novalidate: true },
    h('div', { class: 'field inline' }, h('label', { for: 'phase-select' }, 'Phase'), sel),
    h('p', { class: 'help' }, 'A change of the arms starts a new phase: every user is assigned afresh and counted again.')) : null;
  if (!rr.ok) {
    const msg = rr.status === 404 && !notAvailable(rr) ? (p && !p.experiment ? 'This popup has no experiment.' : 'Results: ' + errorText(rr)) : 'Results: ' + errorText(rr);
    return screen(title, back, picker, alertBox(msg, rr.status === 404 ? 'info' : 'error'));
  }
  const b = rr.body;
  const o = b.options || {};
  const arms = b.arms || [];
  const srm = b.srm || {};
  const verdict = b.verdict || {};
  const baselineName = b.baseline === 'control' ? 'the control' : `variant ${b.baseline}`;
  const exposed = arms.reduce((n, a) => n + (a.exposed_users || 0), 0);

  const dof = `${srm.df ?? '—'} degree${srm.df === 1 ? '' : 's'} of freedom`;
  const srmBox = srm.alarm
    ? h('div', { class: 'alert error srm-alarm', role: 'alert', id: 'srm' },
      h('p', {}, h('strong', {}, 'Sample-ratio mismatch: do not trust these results.')),
      h('p', {}, `The exposed users of the arms do not match their weights (χ² ${fmtNum(srm.chi_square)}, ${dof}, p ${pValue(srm.p)}; the alarm is at p below ${o.srm_alpha ?? 0.001}). Users are lost or double-counted in some arm: look for a client that drops the popup, a filter, or a change of weights within the phase.`))
    : (exposed === 0
      ? h('div', { class: 'alert info', role: 'status', id: 'srm' }, 'Sample ratio: no data yet. Nobody has been exposed in this phase, so there is nothing to check.')
      : h('div', { class: 'alert info', role: 'status', id: 'srm' },
        `Sample ratio: OK. The exposed users match the weights (χ² ${fmtNum(srm.chi_square)}, ${dof}, p ${pValue(srm.p)}; an alarm below ${o.srm_alpha ?? 0.001}).`));
  // The verdict (the API's one reading of the results: docs/CONTRACT.md §10 "The verdict") says
  // everything about the decision: the summary, the winner, why, and what Conclude offers.
  const metric = verdict.metric && verdict.metric !== 'clicks' ? `goal ${verdict.metric}` : 'clicks';
  const verdictBox = h('div', { id: 'verdict', class: 'verdict-box ' + (verdict.winner ? 'winner' : 'none'), 'data-metric': verdict.metric || 'clicks' },
    h('p', { class: 'verdict' }, verdict.winner ? `Winner on ${metric}: ${verdict.winner === 'control' ? 'the control' : `variant “${verdict.winner}”`}` : `No winner on ${metric}`),
    h('p', { id: 'verdict-why' }, 'Why: ' + (verdict.why || verdict.reason || '')));

  // the plain summary first, with the decision's actions beside it; the statistician's table below
  const mayAct = p?.experiment && (p.status === 'draft' ? can('edit_drafts') : can('publish'));
  const st = p?.experiment?.status;
  const act = async (kind) => {
    const r = await experimentTransition(kind, p, pr.etag);
    if (!r) return;
    if (!r.ok) {
      const msg = r.status === 412 ? `${TRANSITIONS[kind].doing} refused: the popup was changed by someone else since this page loaded. Nothing was written; the page shows the newer version now.` : `${TRANSITIONS[kind].doing} failed: ${errorText(r)}`;
      toast(msg);
      return route();
    }
    toast(TRANSITIONS[kind].done(r.body));
    route();
  };
  const actions = mayAct && b.phase === p.experiment.phase && (st === 'running' || st === 'stopped') ? h('div', { class: 'actions', id: 'results-actions' },
    verdict.winner && verdict.winner !== 'control' ? h('button', { type: 'button', id: 'results-conclude', onclick: () => act('conclude') }, `Conclude and ship “${verdict.winner}”…`)
      : h('button', { type: 'button', id: 'results-conclude', class: 'secondary', onclick: () => act('conclude') }, 'Conclude and ship a variant…'),
    st === 'running' ? h('button', { type: 'button', class: 'secondary', id: 'results-stop', onclick: () => act('stop') }, 'Stop the experiment…') : null) : null;
  const earlier = phases > 1 && b.phase === p?.experiment?.phase ? h('div', { id: 'earlier-verdicts' }, h('p', { class: 'muted' }, 'Reading the earlier phases…')) : null;
  if (earlier) earlierVerdicts(id, b.phase, earlier);

  // the summary's table is the verdict's metric, against the verdict's baseline
  const onGoal = verdict.metric && verdict.metric !== 'clicks';
  const vbase = verdict.baseline || b.baseline;
  const gk = onGoal ? (arms[0]?.goals || []).findIndex((g) => g.goal === verdict.metric) : -1;
  const row = (a) => (gk >= 0 ? { users: a.goals[gk].converted_users, rate: a.goals[gk].rate, difference: a.goals[gk].difference, lift: a.goals[gk].lift }
    : { users: a.clicked_users, rate: a.ctr, difference: a.difference, lift: a.lift });
  const summaryRows = h('table', { id: 'summary-table', class: 'results', 'data-metric': onGoal ? verdict.metric : 'clicks' },
    h('caption', {}, `Each arm of phase ${b.phase} against ${vbase === 'control' ? 'the control' : `variant ${vbase}`}, on ${onGoal ? `goal ${verdict.metric}` : 'clicks'}`),
    h('thead', {}, h('tr', {}, ['Arm', 'Users', onGoal ? 'Converted' : 'Clicked', onGoal ? 'Conversion rate' : 'Click rate', `Difference (points)`, 'Lift'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, arms.map((a) => { const x = row(a); return h('tr', { 'data-arm': a.key, class: verdict.winner === a.key ? 'chosen' : '' },
      h('th', { scope: 'row' }, a.key, a.key === vbase ? h('span', { class: 'badge' }, ' baseline') : null),
      h('td', { class: 'num' }, fmtInt(a.exposed_users)), h('td', { class: 'num' }, fmtInt(x.users)), h('td', { class: 'num' }, pct(x.rate)),
      h('td', { class: 'num' }, points(x.difference, true)), h('td', { class: 'num' }, pct(x.lift, true))); })));

  const cols = ['Arm', 'Weight', 'Exposed users', 'Clicked users', 'CTR', 'CTR 95% interval', `Difference vs ${b.baseline} (points)`, 'Difference interval (points)',
    `Lift vs ${b.baseline}`, 'Lift interval', 'Adjusted p', 'Sequential p', 'Exposures', 'Clicks', 'Closes'];
  const td = (v, cls = 'num') => h('td', { class: cls }, v);
  const ci = (v) => td(v, 'num ci');
  const table = h('table', { id: 'arms-table', class: 'results' },
    h('caption', {}, `Arms of phase ${b.phase}: users, click-through rate and the comparison with the baseline, ${baselineName} (95% intervals, Bonferroni-corrected over the comparisons)`),
    h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, arms.map((a) => h('tr', { 'data-arm': a.key, class: verdict.winner === a.key ? 'chosen' : '' },
      h('th', { scope: 'row' }, a.key, a.key === b.baseline ? h('span', { class: 'badge' }, ' baseline') : null, verdict.winner === a.key ? h('span', { class: 'badge running' }, ' winner') : null),
      td(a.weight + '%'), td(fmtNum(a.exposed_users)), td(fmtNum(a.clicked_users)), td(pct(a.ctr)), ci(interval(a.ctr_ci)),
      td(points(a.difference, true)), ci(pointsInterval(a.difference_ci)), td(pct(a.lift, true)), ci(interval(a.lift_ci, true)),
      td(pValue(a.p_adjusted)), td(pValue(a.sequential_p)), td(fmtNum(a.exposures)), td(fmtNum(a.clicks)), td(fmtNum(a.closes))))));

  const ctrRows = intervalRows(arms, (a) => [a.ctr, a.ctr_ci]);
  const diffRows = intervalRows(arms, (a) => [a.difference, a.difference_ci]);
  const charts = h('div', { class: 'charts' },
    ctrRows.length ? intervalChart('chart-ctr', 'Click-through rate by arm, with its 95% interval', ctrRows, false) : null,
    diffRows.length ? intervalChart('chart-diff', `Difference from the baseline (${b.baseline}), with its interval; 0 is no difference`, diffRows, true) : null);

  // Days are the team's reporting zone's (the API's default); a day counted before days followed a
  // zone is a UTC day and says so on its row (docs/CONTRACT.md §10 "Results").
  const days = b.days || [];
  const dayZone = b.time_zone || 'UTC';
  const utcBefore = days.filter((d) => d.time_zone && d.time_zone !== dayZone).length;
  const dayTable = days.length ? h('table', { id: 'days-table' },
    h('caption', {}, `Per day of ${dayZone} (the team's reporting time zone) and arm: users first exposed or first clicking that day, so the days sum to the totals`),
    h('thead', {}, h('tr', {}, [`Day (${dayZone})`, 'Arm', 'Exposed users', 'Exposures', 'Clicked users', 'Clicks', 'Closes'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, days.map((d) => h('tr', { 'data-day': d.day, 'data-arm': d.arm, 'data-zone': d.time_zone || dayZone },
      h('th', { scope: 'row' }, d.day, d.time_zone && d.time_zone !== dayZone ? h('span', { class: 'badge' }, ` ${d.time_zone} day`) : null),
      h('td', {}, d.arm), td(fmtNum(d.exposed_users)), td(fmtNum(d.exposures)), td(fmtNum(d.clicked_users)), td(fmtNum(d.clicks)), td(fmtNum(d.closes))))))
    : h('p', { class: 'muted' }, 'No day has data yet.');
  const dayNote = utcBefore ? h('p', { class: 'help', id: 'days-utc-note' }, `Rows marked “UTC day” were counted before days followed the reporting time zone: they are UTC days and cannot be split into ${dayZone} days.`) : null;

  const goalsBox = goalsSection(b, arms, td, ci);

  screen(title, back,
    h('p', { id: 'experiment-meta' }, `Phase ${b.phase}, `, h('span', { class: 'badge ' + b.status }, b.status),
      `; first run ${fmtTime(b.phase_started_at)}, planned end ${fmtTime(b.planned_end_at)} (times in ${zoneName}).`),
    picker,
    h('section', { class: 'card results-summary', 'aria-labelledby': 'summary-h' }, h('h2', { id: 'summary-h' }, 'Summary'),
      h('p', { id: 'summary', class: 'summary' }, verdict.summary || ''), actions, earlier,
      h('div', { class: 'table-wrap' }, summaryRows)),
    srmBox, verdictBox, goalsBox,
    h('details', { id: 'statistics', class: 'statistics' }, h('summary', {}, 'For statisticians: intervals, p-values and every count'),
      h('section', { 'aria-labelledby': 'arms-h' }, h('h2', { id: 'arms-h' }, 'Arms'),
        // a wide table scrolls sideways: focusable, so the keyboard can scroll it too
        h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-labelledby': 'arms-h' }, table),
        h('p', { class: 'help' }, `A user counts once per arm: CTR is clicked users / exposed users (Wilson interval). Differences are in percentage points (5.00% against 4.00% is +1.00 points); lift is relative. The baseline is ${baselineName}; “—” where a number is not defined (a control that shows nothing has no CTR). Sequential p stays valid however often you look; adjusted p (Bonferroni) is the fixed-horizon test's, for after the planned end. Minimum sample: ${o.min_exposed ?? '?'} exposed users and ${o.min_clicks ?? '?'} clicks per arm; α ${o.alpha ?? '?'}. Assignment salt `, h('code', {}, b.salt || '—'), '.')),
      h('section', { 'aria-labelledby': 'chart-h' }, h('h2', { id: 'chart-h' }, 'Intervals'), charts,
        h('p', { class: 'help' }, 'The charts show the numbers of the Arms table, which is their text equivalent.'))),
    h('section', { 'aria-labelledby': 'days-h' }, h('h2', { id: 'days-h' }, 'Per day'), h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-labelledby': 'days-h' }, dayTable), dayNote));
}

// points shows a difference of rates in percentage points ("+8.25 points"); — when there is none.
function points(x, signed = false) {
  if (typeof x !== 'number' || isNaN(x)) return '—';
  const s = (x * 100).toFixed(2) + ' points';
  return signed && x > 0 ? '+' + s : s;
}
const pointsInterval = (ci) => (Array.isArray(ci) && typeof ci[0] === 'number' && typeof ci[1] === 'number' ? `[${points(ci[0], true)}, ${points(ci[1], true)}]` : '—');

// earlierVerdicts shows what each earlier phase of the experiment concluded, newest first: a
// new phase ends the current verdict, but what the earlier ones found stays readable.
async function earlierVerdicts(id, phase, box) {
  const rs = await Promise.all(Array.from({ length: phase - 1 }, (_, i) => phase - 1 - i).map((n) => api('GET', `/admin/v1/popups/${id}/experiment/results?phase=${n}`).then((r) => [n, r])));
  setKids(box, h('h3', {}, 'Earlier phases'), h('ul', {}, rs.map(([n, r]) => h('li', { 'data-phase': n },
    h('a', { href: `#/popups/${id}/experiment?phase=${n}` }, `Phase ${n}`), ': ',
    !r.ok ? 'cannot be read now' : (r.body.verdict?.winner ? `variant “${r.body.verdict.winner}” won` : 'no winner'),
    r.ok ? ` (${fmtInt((r.body.arms || []).reduce((k, a) => k + (a.exposed_users || 0), 0))} users)` : ''))));
}

const fmtNum = (n) => (typeof n === 'number' && !isNaN(n) ? (Number.isInteger(n) ? String(n) : n.toFixed(2)) : '—');

// intervalRows are an intervalChart's rows: each arm whose estimate and interval, [est, ci] =
// pick(arm), are defined (a control that shows nothing has no click-through rate, the baseline no
// difference).
function intervalRows(arms, pick) {
  return arms.map((a) => [a.key, ...pick(a)]).filter(([, est, ci]) => typeof est === 'number' && Array.isArray(ci))
    .map(([label, est, ci]) => ({ label, est, lo: ci[0], hi: ci[1] }));
}

// intervalChart draws estimates with their intervals, one row per arm, as an SVG whose text
// alternative lists the same numbers (zero: a difference, with its 0 line).
function intervalChart(id, caption, rows, zero) {
  const w = 560, rowH = 30, left = 90, right = 20, top = 10;
  const hgt = top + rows.length * rowH + 26;
  let lo = Math.min(...rows.map((r) => r.lo), zero ? 0 : Infinity);
  let hi = Math.max(...rows.map((r) => r.hi), zero ? 0 : -Infinity);
  if (!zero) lo = Math.max(0, lo - (hi - lo) * 0.1);
  if (hi === lo) hi = lo + 0.01;
  const pad = (hi - lo) * 0.05;
  lo -= zero ? pad : 0; hi += pad;
  const x = (v) => left + ((v - lo) / (hi - lo)) * (w - left - right);
  const text = rows.map((r) => `${r.label}: ${pct(r.est, zero)} [${pct(r.lo, zero)}, ${pct(r.hi, zero)}]`).join('; ');
  const descId = id + '-desc';
  return h('figure', { class: 'interval-chart', id },
    h('svg:svg', { width: w, height: hgt, viewBox: `0 0 ${w} ${hgt}`, role: 'img', 'aria-labelledby': id + '-cap', 'aria-describedby': descId },
      zero ? h('svg:line', { x1: x(0), x2: x(0), y1: top - 4, y2: top + rows.length * rowH, class: 'zero' }) : null,
      zero ? h('svg:text', { x: x(0), y: top + rows.length * rowH + 12, 'text-anchor': 'middle', class: 'axis' }, '0') : null,
      rows.map((r, i) => {
        const y = top + i * rowH + rowH / 2;
        return h('svg:g', { 'data-arm': r.label },
          h('svg:text', { x: left - 8, y: y + 4, 'text-anchor': 'end' }, r.label),
          h('svg:line', { x1: x(r.lo), x2: x(r.hi), y1: y, y2: y, class: 'ci' }),
          h('svg:line', { x1: x(r.lo), x2: x(r.lo), y1: y - 6, y2: y + 6, class: 'ci' }),
          h('svg:line', { x1: x(r.hi), x2: x(r.hi), y1: y - 6, y2: y + 6, class: 'ci' }),
          h('svg:circle', { cx: x(r.est), cy: y, r: 4.5, class: 'est' }));
      }),
      h('svg:text', { x: left, y: hgt - 6, class: 'axis' }, pct(lo, zero)),
      h('svg:text', { x: w - right, y: hgt - 6, 'text-anchor': 'end', class: 'axis' }, pct(hi, zero))),
    h('figcaption', { id: id + '-cap' }, caption),
    h('p', { class: 'sr-only', id: descId }, text));
}

// teamZone is the team's reporting time zone (GET /admin/v1/settings), read once per page load;
// the browser's when the settings cannot be read.
let teamZoneRead = null;
function teamZone() {
  teamZoneRead = teamZoneRead || api('GET', '/admin/v1/settings').then((r) => (r.ok && r.body.reporting_time_zone) || zoneName);
  return teamZoneRead;
}

// teamTime shows an instant in zone, naming the zone: "27 Nov 2026, 12:20 (Asia/Shanghai)".
function teamTime(s, zone) {
  const d = new Date(s);
  if (!s || isNaN(d)) return s || '—';
  return new Intl.DateTimeFormat('en-GB', { timeZone: zone, day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit' }).format(d) + ` (${zone})`;
}

// readable makes a diff's rows read as a person would: field paths in words
// (experiment.variants[0].weight: "experiment › variant 1 › weight") and instants in the team's zone.
const INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/;
function readable(rows, zone) {
  const field = (f) => f.replace(/([a-z_]+)\[(\d+)\]/g, (_, k, i) => `${k.replace(/s$/, '')} ${Number(i) + 1}`).split('.').join(' › ').replaceAll('_', ' ');
  const value = (v) => (INSTANT.test(v) ? teamTime(v, zone) : v);
  return rows.map((r) => ({ field: field(r.field), before: value(r.before), after: value(r.after) }));
}

// historySection lists the revisions with their diffs; a rollback carries the ETag the page was
// based on (ed.etag), so a rollback from a page someone else has changed since is refused (412).
function historySection(current, ed) {
  const box = h('div', { id: 'history' }, h('p', { class: 'muted' }, 'Loading…'));
  Promise.all([api('GET', `/admin/v1/popups/${current.id}/history`), teamZone()]).then(([r, zone]) => {
    if (!r.ok) return setKids(box, alertBox('History: ' + errorText(r), notAvailable(r) ? 'info' : 'error'));
    const revs = (r.body.revisions || []).slice().sort((a, b) => b.revision - a.revision);
    setKids(box, h('ol', { class: 'revisions', reversed: true }, revs.map((rev, i) => {
      const older = revs[i + 1];
      const isCurrent = rev.revision === current.revision;
      return h('li', { 'data-revision': rev.revision },
        h('h3', {}, `Revision ${rev.revision}`, isCurrent ? ' (current)' : ''),
        h('p', { class: 'muted' }, `${teamTime(rev.at, zone)} by ${rev.actor || 'unknown'}`),
        older ? diffTable(readable(diff(older.popup, rev.popup), zone), `Changes from revision ${older.revision} to ${rev.revision}`) : h('p', { class: 'muted' }, 'First revision.'),
        isCurrent || !ed.mayRollback ? null : h('button', { type: 'button', class: 'secondary', 'data-rollback': rev.revision, onclick: () => rollback(rev.revision, rev.popup) }, `Roll back to revision ${rev.revision}`));
    })));
  });
  // rollback reviews what the rollback changes against the stored popup, as a publish does, and
  // whether it ends a shipped experiment (then it asks the API for that: end_experiment=true)
  async function rollback(n, old) {
    const drop = ed.dirty() ? ' Your unsaved edits in the form above are dropped.' : '';
    const shipped = shippedWarning(current, old);
    const review = h('div', {}, shipped, diffTable(readable(diff(current, old), await teamZone()), `What rolling back to revision ${n} changes`));
    if (!await confirmDialog(`Roll back to revision ${n}?`, `This writes a new revision with the content of revision ${n}; every instance serves it within seconds. What changes against the stored revision ${current.revision}:${drop}`, 'Roll back', review)) return;
    const r = await api('POST', `/admin/v1/popups/${current.id}/rollback${shipped ? '?end_experiment=true' : ''}`, { revision: n }, { ifMatch: ed.etag() });
    if (!r.ok) {
      for (const old of box.querySelectorAll(':scope > .alert')) old.remove();
      const msg = r.status === 412
        ? `Rollback to revision ${n} refused: this popup was changed by someone else since you opened revision ${current.revision}. Nothing was written. Reload the popup to see the newer version before rolling back.`
        : `Rollback to revision ${n} failed: ` + errorText(r);
      const alert = alertBox(h('div', {}, h('p', {}, msg), r.status === 412 ? h('button', { type: 'button', onclick: async () => { if (!ed.dirty() || await confirmLeave()) route(); } }, 'Reload the popup') : null));
      alert.tabIndex = -1;
      box.prepend(alert);
      alert.focus();
      return;
    }
    toast(`Rolled back to revision ${n}: now revision ${r.body?.revision ?? ''}.`);
    ed.reopen(r);
  }
  return h('section', { 'aria-labelledby': 'history-h' }, h('h2', { id: 'history-h' }, 'History'), box);
}

// ---------------------------------------------------------------- explain

const REASONS = {
  '': 'chosen', not_active: 'not active', not_started: 'not started yet', ended: 'ended', platform: 'platform not targeted',
  app_version: 'app version out of range', region: 'region not targeted', lang: 'language not targeted',
  rollout: 'outside the rollout percent', reshow: 'shown recently (reshow interval)', click_cooldown: 'clicked recently (click cooldown)',
  close_cooldown: 'closed recently (close cooldown)', max_impressions: 'max impressions reached', daily_cap: 'daily cap of popups reached',
  lower_priority: 'eligible, but a higher-priority popup wins',
  not_in_audience: 'not in an included audience', in_excluded_audience: 'in an excluded audience',
  audience_not_loaded: 'an audience is not loaded yet on this instance',
};

// AUDIENCE_REASONS say a reason about one audience with its name (the candidate's audience).
const AUDIENCE_REASONS = {
  not_in_audience: (n) => `not in audience “${n}”`,
  in_excluded_audience: (n) => `in excluded audience “${n}”`,
  audience_not_loaded: (n) => `audience “${n}” not loaded yet on this instance`,
};

// reasonText says why a candidate was not chosen, naming the audience a reason is about.
function reasonText(c) {
  const say = AUDIENCE_REASONS[c.reason];
  const a = c.audience ?? c.audience_id;
  if (!say || a === undefined || a === null) return REASONS[c.reason || ''] || c.reason;
  const name = typeof a === 'object' ? (a.name || audienceName(a.id)) : (c.audience_name || audienceName(a));
  return say(name);
}

function userFields(prefix) {
  const el = {
    uid: h('input', { type: 'text', name: 'uid', required: true, autocomplete: 'off' }),
    platform: h('select', { name: 'platform' }, ['ios', 'android', 'web'].map((p) => h('option', { value: p }, p))),
    app_version: h('input', { type: 'text', name: 'app_version', value: '1.0.0' }),
    region: h('input', { type: 'text', name: 'region' }),
    lang: h('input', { type: 'text', name: 'lang' }),
  };
  const row = h('div', { class: 'row' },
    field(prefix + '-uid', 'User id (uid)', el.uid), field(prefix + '-platform', 'Platform', el.platform),
    field(prefix + '-version', 'App version', el.app_version), field(prefix + '-region', 'Region', el.region, 'Optional'),
    field(prefix + '-lang', 'Language', el.lang, 'Optional'));
  const values = () => ({ uid: el.uid.value.trim(), platform: el.platform.value, app_version: el.app_version.value.trim(), region: el.region.value.trim(), lang: el.lang.value.trim() });
  return { row, values };
}

// renderExplain shows the chosen popup and why the others were not chosen, as groups with counts
// ("1,000 outside the rollout percent"); a group's rows are rendered when it is opened, a page at a
// time, so thousands of popups keep the page short.
const GROUP_PAGE = 100;
function renderExplain(r, draftLabel) {
  if (!r.ok) return alertBox(errorText(r), notAvailable(r) ? 'info' : 'error');
  const chosen = r.body.popup;
  const cands = r.body.candidates || [];
  const prev = h('div', { class: 'preview small', 'data-device': 'phone' });
  if (chosen) renderPreview(prev, chosen);
  const label = (c) => (c.id > 0 ? h('a', { href: '#/popups/' + c.id }, `#${c.id} ${c.name || ''}`) : (draftLabel || `#${c.id} ${c.name || ''}`));
  const row = (c) => h('tr', { class: c.eligible && !c.reason ? 'chosen' : '', 'data-id': c.id },
    h('th', { scope: 'row' }, label(c)),
    h('td', { class: 'num' }, c.priority ?? ''), h('td', {}, c.eligible ? 'yes' : 'no'),
    h('td', { 'data-reason': c.reason || '' }, reasonText(c)));
  const table = (rows, caption) => h('div', { class: 'table-wrap' }, h('table', {}, h('caption', { class: 'sr-only' }, caption),
    h('thead', {}, h('tr', {}, ['Popup', 'Priority', 'Eligible', 'Why'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, rows.map(row))));
  const groups = new Map();
  for (const c of cands) {
    const k = c.reason || '';
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(c);
  }
  const chosenCand = cands.find((c) => c.eligible && !c.reason) || null;
  const others = [...groups.entries()].filter(([k]) => k !== '');
  const group = ([reason, list]) => {
    const body = h('div', {});
    const d = h('details', { class: 'reason-group', 'data-reason': reason },
      h('summary', {}, `${list.length} ${REASONS[reason] || reason}`), body);
    let shown = 0;
    const more = () => {
      shown = Math.min(list.length, shown + GROUP_PAGE);
      setKids(body, table(list.slice(0, shown), `${REASONS[reason] || reason}: ${shown} of ${list.length}`),
        shown < list.length ? h('button', { type: 'button', class: 'secondary', onclick: more }, `Show ${Math.min(GROUP_PAGE, list.length - shown)} more of ${list.length}`) : null);
    };
    d.addEventListener('toggle', () => { if (d.open && !shown) more(); });
    return d;
  };
  return h('div', { class: 'explain-result' },
    h('div', { class: 'candidates' },
      h('p', { class: 'verdict', 'data-arm': r.body.arm || '' }, explainVerdict(r.body, cands, draftLabel), ` (config version ${r.body.config_version ?? '?'})`),
      chosenCand ? table([chosenCand], 'The chosen popup') : null,
      h('h3', {}, `The other ${others.reduce((n, [, l]) => n + l.length, 0)} active popups, by reason`),
      others.length ? others.map(group) : h('p', { class: 'muted' }, 'None.')),
    chosen ? prev : null);
}

// explainVerdict says what the app gets, as the preview's answer says it (docs/CONTRACT.md §10):
// the popup served, and the experiment arm the user is in: a variant of the chosen popup, or its
// control, which shows nothing (mode none) or falls through to the popup served.
function explainVerdict(body, cands, draftLabel) {
  const served = body.popup;
  const chosen = cands.find((c) => c.eligible && !c.reason);
  const nameOf = (id) => {
    if (id === 0 && draftLabel) return draftLabel.toLowerCase();
    const c = cands.find((x) => x.id === id);
    return `popup #${id}${c?.name ? ' ' + c.name : ''}`;
  };
  const gets = (p) => `${nameOf(p.id)}${p.title ? ' “' + p.title + '”' : ''}`;
  if (!chosen) return 'This user would get no popup.';
  const steps = body.arms || [];
  const servedArm = served && steps.find((s) => s.popup_id === served.id && s.arm !== 'control');
  const variant = servedArm ? `, variant “${servedArm.arm}” of its experiment` : '';
  const controls = steps.filter((s) => s.arm === 'control');
  if (!controls.length) return served ? `This user would get ${gets(served)}${variant}.` : 'This user would get no popup.';
  const groups = controls.map((s) => `the control group of ${nameOf(s.popup_id)}’s experiment`).join(', then ');
  return served ? `This user is in ${groups}, which falls through: the app gets ${gets(served)}${variant}.`
    : `This user is in ${groups}: the app gets no popup (a control user sees nothing).`;
}

function renderState(r) {
  if (!r.ok) return alertBox('User state: ' + errorText(r));
  const rows = r.body.popups || [];
  return h('div', {},
    h('p', {}, `Popups shown to this user today: ${r.body.impressions_today ?? 0}.`),
    rows.length ? h('table', {}, h('caption', {}, 'Per-popup state of this user'),
      h('thead', {}, h('tr', {}, ['Popup', 'Impressions', 'Next show', 'Last impression', 'Last click', 'Last close'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows.map((s) => h('tr', {}, h('th', { scope: 'row' }, h('a', { href: '#/popups/' + s.popup_id }, '#' + s.popup_id)),
        h('td', { class: 'num' }, s.impressions), h('td', {}, fmtTime(s.next_show_at)), h('td', {}, fmtTime(s.last_impression_at)),
        h('td', {}, fmtTime(s.last_click_at)), h('td', {}, fmtTime(s.last_close_at))))))
      : h('p', { class: 'muted' }, 'No per-popup state: this user has not seen any popup.'));
}

function explainScreen() {
  const u = userFields('x');
  const out = h('div', { id: 'explain-out', 'aria-live': 'polite' });
  const form = h('form', { class: 'card', novalidate: true }, u.row, h('button', { type: 'submit', id: 'explain' }, 'Explain'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const v = u.values();
    const qs = new URLSearchParams(Object.entries(v).filter(([, x]) => x));
    setKids(out, h('p', { class: 'muted' }, 'Asking…'));
    const [pr, sr] = await Promise.all([api('GET', '/admin/v1/preview?' + qs), v.uid ? api('GET', '/admin/v1/users/' + encodeURIComponent(v.uid) + '/state') : null, loadAudiences()]);
    setKids(out, 
      h('section', { 'aria-labelledby': 'decision-h' }, h('h2', { id: 'decision-h' }, 'Decision'), renderExplain(pr)),
      sr ? h('section', { 'aria-labelledby': 'state-h' }, h('h2', { id: 'state-h' }, 'User state'), renderState(sr)) : null,
      v.uid && can('admin') ? personalDataSection(v.uid) : null);
  });
  screen('Explain for a user',
    h('p', {}, 'What would this user get right now, and why not the others? Nothing is recorded.'), form, out);
}

// personalDataSection offers an admin the user's export (everything held about the uid, one JSON
// file) and erasure (docs/CONTRACT.md §12), which asks first and then follows the erasure until
// popup-worker has done it.
function personalDataSection(uid) {
  const outEl = h('div', { id: 'privacy-out', 'aria-live': 'polite' });
  async function exportData() {
    outEl.textContent = 'Exporting…';
    const d = await download('/admin/v1/users/' + encodeURIComponent(uid) + '/export');
    if (!d.ok) { setKids(outEl, alertBox('Export: ' + errorText(d))); return; }
    const name = 'user-export.json';
    const link = h('a', { href: URL.createObjectURL(d.blob), download: name }, name);
    link.hidden = true;
    document.body.append(link);
    link.click();
    link.remove();
    outEl.textContent = `Downloaded ${name} (${fmtBytes(d.blob.size)}): everything held about this user.`;
  }
  async function erase() {
    if (!await confirmDialog('Erase this user?', `Everything held about “${uid}” is deleted within a minute: their state, action log, experiment rows and audience memberships. Totals and daily results stay. This cannot be undone.`, 'Erase')) return;
    const r = await api('DELETE', '/admin/v1/users/' + encodeURIComponent(uid));
    if (!r.ok) { setKids(outEl, alertBox('Erase: ' + errorText(r))); return; }
    const id = r.body.erasure_id;
    outEl.textContent = 'Erasing… (pending)';
    for (let i = 0; i < 90; i++) {
      const st = await api('GET', '/admin/v1/erasures/' + id);
      if (!st.ok) { setKids(outEl, alertBox('Erasure status: ' + errorText(st))); return; }
      if (st.body.status === 'done') {
        const removed = Object.entries(st.body.removed || {}).filter(([, n]) => n > 0).map(([k, n]) => `${fmtInt(n)} ${k}`).join(', ');
        setKids(outEl, alertBox(`Erased: ${removed || 'nothing was held'}.`, 'info'));
        return;
      }
      await new Promise((res) => setTimeout(res, 1000));
    }
    outEl.textContent = `The erasure ${id} is still pending; its status: GET /admin/v1/erasures/${id}.`;
  }
  return h('section', { 'aria-labelledby': 'privacy-h' },
    h('h2', { id: 'privacy-h' }, 'Personal data'),
    h('p', { class: 'muted' }, 'An access request gets the export; an erasure request, the erasure. Only admins see these.'),
    h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'secondary', id: 'export-user', onclick: exportData }, 'Export data'),
      h('button', { type: 'button', class: 'danger', id: 'erase-user', onclick: erase }, 'Erase user…')),
    outEl);
}

function draftExplainSection(body) {
  const u = userFields('d');
  const out = h('div', { id: 'draft-explain-out', 'aria-live': 'polite' });
  const form = h('form', { novalidate: true }, u.row, h('button', { type: 'submit', class: 'secondary' }, 'Explain this draft for the user'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const b = body();
    const r = await api('POST', '/admin/v1/preview', { ...u.values(), popup: { ...b, ext: b.ext ?? {} } });
    setKids(out, renderExplain(r, 'This draft'));
  });
  return h('section', { 'aria-labelledby': 'draft-h' },
    h('h2', { id: 'draft-h' }, 'Try the draft on a user'),
    h('p', { class: 'muted' }, 'As if the form above were saved and active, alongside the live popups. Nothing is saved or recorded.'),
    form, out);
}

// ---------------------------------------------------------------- audiences

// Audiences (issue 34): uploaded lists of user ids that popups target. The list and what a popup
// form offers come from GET /admin/v1/audiences, read at most every 30 seconds (fresh after a
// write of this page).
let audienceCache = { at: 0, list: [], byId: new Map(), available: true, r: null };

// audiencesOf reads the list answer: {audiences: [...]} (or a bare array).
const audiencesOf = (body) => (Array.isArray(body) ? body : body?.audiences || []);

async function loadAudiences(fresh = false) {
  if (!fresh && Date.now() - audienceCache.at < 30000) return audienceCache;
  const r = await api('GET', '/admin/v1/audiences');
  const list = r.ok ? audiencesOf(r.body) : [];
  audienceCache = { at: Date.now(), list, byId: new Map(list.map((a) => [String(a.id), a])), available: r.ok, r };
  return audienceCache;
}

// audienceName names an audience by id for the operator: its name when the list knows it.
const audienceName = (id) => audienceCache.byId.get(String(id))?.name || `audience #${id}`;

// popupsById reads the popups an audience names (used_by) for their names and status; a popup
// that cannot be read is {id} alone.
async function popupsById(ids) {
  const uniq = [...new Set(ids.map(String))];
  const got = await Promise.all(uniq.map((id) => api('GET', '/admin/v1/popups/' + encodeURIComponent(id))));
  return new Map(uniq.map((id, i) => [id, got[i].ok ? got[i].body : { id, name: '', unread: true }]));
}

// popupLinks: links to the popups (by id), named, with their status.
function popupLinks(ids, byId) {
  if (!ids?.length) return h('span', { class: 'muted' }, 'no popup');
  return h('ul', { class: 'inline-list' }, ids.map((id) => {
    const p = byId.get(String(id)) || { id };
    return h('li', {}, h('a', { href: '#/popups/' + id }, p.name || `popup #${id}`), p.status ? h('span', { class: 'badge ' + p.status }, p.status) : null);
  }));
}

// liveUser: some popup of used_by is live (active or paused), or cannot be read (counted live:
// the page then offers less, never more, than the API allows).
const liveUser = (ids, byId) => (ids || []).some((id) => { const p = byId.get(String(id)); return !p || p.unread || isLive(p.status); });

const fmtInt = (n) => (typeof n === 'number' ? n.toLocaleString('en-US') : (n ?? '—'));
const versionTag = (a) => `"${a.version}"`;

// fieldErrorsIn shows the field errors of an API answer at the fields of form (by data-field),
// the rest in the summary box; it returns whether any field took one.
function fieldErrorsIn(form, summary, r, what) {
  for (const el of form.querySelectorAll('.field-error')) el.remove();
  for (const el of form.querySelectorAll('[aria-invalid]')) {
    el.removeAttribute('aria-invalid');
    el.setAttribute('aria-describedby', (el.getAttribute('aria-describedby') || '').split(' ').filter((x) => x && !x.endsWith('-err')).join(' '));
  }
  if (!r) return setKids(summary);
  const fields = r.body?.error?.fields || [];
  const rest = [];
  let first = null;
  for (const fe of fields) {
    const el = form.querySelector(`[data-field="${CSS.escape(fe.field)}"]`);
    if (!el) { rest.push(fe); continue; }
    const errId = el.id + '-err';
    el.closest('.field').append(h('p', { class: 'field-error', id: errId }, fe.message));
    el.setAttribute('aria-invalid', 'true');
    el.setAttribute('aria-describedby', [el.getAttribute('aria-describedby'), errId].filter(Boolean).join(' '));
    first = first || el;
  }
  setKids(summary, h('div', { class: 'alert error', role: 'alert' },
    h('p', {}, `${what}: ${fields.length ? `${fields.length} field${fields.length > 1 ? 's need' : ' needs'} fixing.` : errorText(r)}`),
    rest.length ? h('ul', {}, rest.map((fe) => h('li', {}, `${fe.field}: ${fe.message}`))) : null));
  (first || summary).focus?.();
  return !!first;
}

function audienceFields(prefix, a = {}) {
  const name = h('input', { type: 'text', name: 'name', 'data-field': 'name', required: true, autocomplete: 'off', value: a.name || '' });
  const description = h('textarea', { name: 'description', 'data-field': 'description', rows: 2, value: a.description || '' });
  return {
    name, description,
    el: [field(prefix + '-name', 'Name', name, 'Shown in the popup form and in explanations, e.g. VIPs.'),
      field(prefix + '-description', 'Description', description, 'Optional: where the list comes from, who keeps it.')],
    read: () => ({ name: name.value.trim(), description: description.value.trim() }),
  };
}

async function audiencesScreen() {
  const seq = navSeq;
  const results = h('div', { id: 'audience-results', 'aria-live': 'polite', 'aria-busy': 'true' }, h('p', { class: 'muted' }, 'Loading…'));
  let create = null;
  if (can('edit_drafts')) {
    const f = audienceFields('new-aud');
    const errs = h('div', { id: 'audience-create-errors', tabindex: '-1' });
    const form = h('form', { class: 'card narrow', id: 'audience-create', novalidate: true, 'aria-labelledby': 'audience-create-h' },
      h('h2', { id: 'audience-create-h' }, 'New audience'), errs, f.el,
      h('button', { type: 'submit', id: 'audience-create-submit' }, 'Create audience'),
      h('p', { class: 'help' }, 'Its members are uploaded next, on the audience’s page.'));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      fieldErrorsIn(form, errs, null);
      const r = await api('POST', '/admin/v1/audiences', f.read());
      if (!r.ok) return fieldErrorsIn(form, errs, r, 'The audience was not created');
      audienceCache.at = 0;
      toast(`Created audience “${r.body.name}”: now upload its members.`);
      location.hash = '#/audiences/' + r.body.id;
    });
    create = form;
  }
  screen('Audiences',
    h('p', {}, 'Lists of user ids that popups target: a popup can show only to the users of some audiences, or never to those of others.'),
    create || roleNote(`You are signed in as ${me.operator}, a ${me.role}: creating audiences and uploading their members needs the editor role (the publisher role for an audience a live popup uses).`),
    h('h2', { id: 'audience-list-h' }, 'All audiences'),
    results);
  const c = await loadAudiences(true);
  if (seq !== navSeq) return;
  results.setAttribute('aria-busy', 'false');
  if (!c.available) return setKids(results, alertBox('Audiences: ' + errorText(c.r), notAvailable(c.r) ? 'info' : 'error'));
  if (!c.list.length) return setKids(results, h('p', { id: 'audience-none' }, 'No audience yet.'));
  const popups = await popupsById(c.list.flatMap((a) => a.used_by || []));
  if (seq !== navSeq) return;
  const cols = ['Name', 'Members', 'Version', 'Updated', 'Used by'];
  setKids(results, h('div', { class: 'table-wrap' }, h('table', { id: 'audience-table' },
    h('caption', { class: 'sr-only' }, `${c.list.length} audience${c.list.length === 1 ? '' : 's'}`),
    h('thead', {}, h('tr', {}, cols.map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, c.list.map((a) => h('tr', { 'data-id': a.id },
      h('th', { scope: 'row' }, h('a', { href: '#/audiences/' + a.id }, a.name || `audience #${a.id}`),
        a.description ? h('p', { class: 'help' }, a.description) : null),
      h('td', { class: 'num', 'data-col': 'size' }, fmtInt(a.size)),
      h('td', { class: 'num', 'data-col': 'version' }, a.version),
      h('td', {}, fmtTime(a.updated_at)),
      h('td', { 'data-col': 'used-by' }, popupLinks(a.used_by, popups))))))));
}

// ---------------------------------------------------------------- goals

// GOAL_VALUES name what a goal's conversions carry (docs/CONTRACT.md §14).
const GOAL_VALUES = { none: 'Whether users converted', sum: 'A value that adds up (an amount)' };

// goalsScreen lists the goals experiments count conversions of; a publisher creates and deletes
// them (a goal a running experiment decides on is refused, and the answer says why).
async function goalsScreen() {
  const seq = navSeq;
  const results = h('div', { id: 'goal-results', 'aria-live': 'polite', 'aria-busy': 'true' }, h('p', { class: 'muted' }, 'Loading…'));
  let create = null;
  if (can('publish')) {
    const key = textInput('key', { required: true, autocomplete: 'off', pattern: '[a-z0-9_\\-]{1,32}' });
    const name = textInput('name', { required: true, autocomplete: 'off' });
    const windowHours = numInput('window_hours', { min: 1, max: 720, value: 72 });
    const value = h('select', { name: 'value', 'data-field': 'value' },
      Object.entries(GOAL_VALUES).map(([v, label]) => h('option', { value: v }, label)));
    const cap = numInput('value_cap', { min: 0, step: 'any', inputmode: 'decimal' });
    const errs = h('div', { id: 'goal-create-errors', tabindex: '-1' });
    const form = h('form', { class: 'card narrow', id: 'goal-create', novalidate: true, 'aria-labelledby': 'goal-create-h' },
      h('h2', { id: 'goal-create-h' }, 'New goal'), errs,
      field('new-goal-key', 'Key', key, 'What apps and backends send as the conversion’s goal: 1-32 of a-z, 0-9, _ and -, e.g. purchase. It never changes.'),
      field('new-goal-name', 'Name', name, 'Shown on the results, e.g. Purchase.'),
      field('new-goal-window', 'Window (hours)', windowHours, 'A conversion counts for an experiment when it comes within this long after the user first saw it: 1 to 720.'),
      field('new-goal-value', 'Conversions carry', value, null),
      field('new-goal-cap', 'Cap each user’s value at (optional)', cap, 'For a goal whose conversions carry a value: the results also show the sums with each user’s value counted up to this, so one huge order does not decide them. Empty: no cap.'),
      h('button', { type: 'submit', id: 'goal-create-submit' }, 'Create goal'));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      fieldErrorsIn(form, errs, null);
      const r = await api('POST', '/admin/v1/goals', { key: key.value.trim(), name: name.value.trim(),
        window_hours: Number(windowHours.value), value: value.value,
        value_cap: cap.value.trim() === '' ? null : Number(cap.value) });
      if (!r.ok) return fieldErrorsIn(form, errs, r, 'The goal was not created');
      toast(`Created goal “${r.body.name}” (${r.body.key}).`);
      form.reset();
      goalsScreen();
    });
    create = form;
  }
  screen('Goals',
    h('p', {}, 'Conversions experiments count besides clicks: an app or a backend reports that a user reached a goal, and each arm’s results show how many of its users did.'),
    create || roleNote(`You are signed in as ${me.operator}, a ${me.role}: creating and deleting goals needs the publisher role.`),
    h('h2', { id: 'goal-list-h' }, 'All goals'),
    results);
  const r = await api('GET', '/admin/v1/goals');
  if (seq !== navSeq) return;
  results.setAttribute('aria-busy', 'false');
  if (!r.ok) return setKids(results, alertBox('Goals: ' + errorText(r), notAvailable(r) ? 'info' : 'error'));
  const goals = r.body.goals || [];
  if (!goals.length) return setKids(results, h('p', { id: 'goal-none' }, 'No goal yet.'));
  const cols = ['Key', 'Name', 'Window', 'Conversions carry', 'Value cap per user', 'Updated'].concat(can('publish') ? ['Actions'] : []);
  setKids(results, h('div', { class: 'table-wrap' }, h('table', { id: 'goal-table' },
    h('caption', { class: 'sr-only' }, `${goals.length} goal${goals.length === 1 ? '' : 's'}`),
    h('thead', {}, h('tr', {}, cols.map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, goals.map((g) => h('tr', { 'data-key': g.key },
      h('th', { scope: 'row' }, h('code', {}, g.key)),
      h('td', {}, g.name),
      h('td', { class: 'num' }, `${g.window_hours} h`),
      h('td', {}, GOAL_VALUES[g.value] || g.value),
      h('td', { class: 'num' }, g.value_cap === null || g.value_cap === undefined ? '—' : String(g.value_cap)),
      h('td', {}, fmtTime(g.updated_at)),
      can('publish') ? h('td', {}, deleteGoalButton(g)) : null))))));
}

function deleteGoalButton(g) {
  const btn = h('button', { type: 'button', class: 'secondary', id: 'goal-delete-' + g.key, 'aria-label': `Delete goal ${g.key}` }, 'Delete');
  btn.addEventListener('click', async () => {
    if (!await confirmDialog(`Delete goal ${g.key}?`, 'Conversions of it are no longer accepted; the counts already made stay.', 'Delete goal')) return;
    const r = await api('DELETE', '/admin/v1/goals/' + encodeURIComponent(g.key));
    if (!r.ok) return setKids(document.getElementById('goal-results'), alertBox(`Goal ${g.key} was not deleted: ` + errorText(r)));
    toast(`Deleted goal ${g.key}.`);
    goalsScreen();
  });
  return btn;
}

// UPLOAD_MODES: how an uploaded file changes the members (docs/CONTRACT.md, audiences).
const UPLOAD_MODES = [
  ['replace', 'PUT', '', 'Replace the whole list with the file'],
  ['add', 'POST', '/add', 'Add the file’s ids'],
  ['remove', 'POST', '/remove', 'Remove the file’s ids'],
];

// badLinesOf reads the lines a refused upload names (error.lines, the first 100 of them:
// [{line, message}]) and how many bad lines the file has in all (error.bad_lines).
function badLinesOf(err) {
  const lines = (err?.lines || []).map((x) => ({ line: x.line, message: x.message || 'is not a valid uid' }));
  return { lines, total: typeof err?.bad_lines === 'number' ? err.bad_lines : lines.length };
}

// CHANGE_ACTIONS name the writes of an audience's history.
const CHANGE_ACTIONS = {
  create: 'created', update: 'name or description changed', replace: 'members replaced', add: 'members added', remove: 'members removed', delete: 'deleted',
};

async function audienceScreen(id) {
  const seq = navSeq;
  const r = await api('GET', '/admin/v1/audiences/' + encodeURIComponent(id));
  if (seq !== navSeq) return;
  if (!r.ok) return screen('Audience #' + id, h('p', {}, h('a', { href: '#/audiences' }, '← Audiences')), alertBox(errorText(r), notAvailable(r) ? 'info' : 'error'));
  let a = r.body;
  let popups = await popupsById(a.used_by || []);
  if (seq !== navSeq) return;

  const live = () => liveUser(a.used_by, popups);
  // the editor role changes an audience no live popup uses; the publisher role, any
  const mayChange = () => can('publish') || (can('edit_drafts') && !live());
  const why = () => (can('edit_drafts')
    ? `You are signed in as ${me.operator}, an ${me.role}: a live popup uses this audience, so changing it (its name, description and members) needs the publisher role.`
    : `You are signed in as ${me.operator}, a ${me.role}: this audience is shown read-only. Changing it needs the editor role (the publisher role while a live popup uses it); deleting it, the publisher role.`);

  const meta = h('div', { id: 'audience-meta' });
  function renderMeta() {
    setKids(meta,
      h('dl', { class: 'facts' },
        h('dt', {}, 'Members'), h('dd', { id: 'audience-size' }, fmtInt(a.size)),
        h('dt', {}, 'Version'), h('dd', { id: 'audience-version' }, String(a.version)),
        h('dt', {}, 'Updated'), h('dd', {}, fmtTime(a.updated_at)),
        h('dt', {}, 'Created'), h('dd', {}, fmtTime(a.created_at)),
        h('dt', {}, 'Used by'), h('dd', { id: 'audience-used-by' }, popupLinks(a.used_by, popups))),
      a.description ? h('p', { id: 'audience-description' }, a.description) : null);
    document.title = `Audience: ${a.name} — Popup console`;
    const h1 = document.getElementById('page-title');
    if (h1) h1.textContent = `Audience: ${a.name}`;
  }
  // took: a write answered with the audience (plus, for members, lines/added/removed)
  const took = (body) => {
    a = { ...a, ...body };
    audienceCache.at = 0;
    renderMeta();
    loadHistory();
  };

  // name and description
  const ed = audienceFields('aud', a);
  const edErrs = h('div', { id: 'audience-edit-errors', tabindex: '-1' });
  const edForm = h('form', { id: 'audience-edit', novalidate: true }, edErrs, ed.el, h('button', { type: 'submit', id: 'audience-save' }, 'Save name and description'));
  edForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    fieldErrorsIn(edForm, edErrs, null);
    const w = await api('PUT', '/admin/v1/audiences/' + a.id, ed.read(), { ifMatch: versionTag(a) });
    if (w.status === 412) return setKids(edErrs, staleBox('Saving'));
    if (!w.ok) return fieldErrorsIn(edForm, edErrs, w, 'Not saved');
    took(w.body);
    toast(`Saved: “${a.name}”, version ${a.version}.`);
  });

  function staleBox(what) {
    const box = h('div', { class: 'alert error', role: 'alert', id: 'audience-stale', tabindex: '-1' },
      h('p', {}, `${what} refused: this audience was changed by someone else since you opened it (you had version ${a.version}). Nothing was changed.`),
      h('button', { type: 'button', id: 'audience-reload', onclick: () => route() }, 'Reload the audience'));
    queueMicrotask(() => box.focus());
    return box;
  }

  // upload
  const fileIn = h('input', { type: 'file', name: 'members', accept: '.txt,.csv,text/plain,text/csv', 'aria-describedby': 'upload-file-help' });
  const modeName = uid('mode');
  const modes = h('fieldset', { id: 'upload-mode' }, h('legend', {}, 'What the file does'),
    UPLOAD_MODES.map(([v, , , label], i) => h('label', { class: 'check block' }, h('input', { type: 'radio', name: modeName, value: v, checked: i === 0, id: 'upload-mode-' + v }), ' ' + label)));
  // the bar counts the bytes sent; the status line below it says them, then the ids read
  const progress = h('progress', { id: 'upload-progress', max: 1, value: 0, 'aria-describedby': 'upload-status' });
  const progressRow = h('div', { class: 'field progress-row', id: 'upload-progress-row', hidden: true }, h('label', { for: 'upload-progress' }, 'Upload progress'), progress);
  const progressText = h('p', { id: 'upload-status', role: 'status', 'aria-live': 'polite' });
  const uploadOut = h('div', { id: 'upload-out', tabindex: '-1' });
  const uploadBtn = h('button', { type: 'submit', id: 'upload-submit' }, 'Upload');
  // a CSV whose header has no uid column: the column that holds the uids, chosen from its header
  const columnIn = h('select', { name: 'uid-column', 'aria-describedby': 'upload-column-help' });
  const columnRow = h('div', { id: 'upload-column-row', hidden: true }, field('upload-uid-column', 'Column with the uids', columnIn),
    h('p', { class: 'help', id: 'upload-column-help' }, 'The file’s header row has no column named uid: choose the one that holds the user ids.'));
  function offerColumns(cols) {
    setKids(columnIn, cols.map((c) => h('option', { value: c }, c || '(unnamed column)')));
    const guess = cols.find((c) => /(^|[_\s.-])id$|Id$|ID$/.test(c));
    if (guess !== undefined) columnIn.value = guess;
    columnRow.hidden = cols.length === 0;
  }
  fileIn.addEventListener('change', async () => {
    offerColumns([]);
    const f = fileIn.files[0];
    if (!f || !(/\.csv$/i.test(f.name) || f.type === 'text/csv')) return;
    const first = (await f.slice(0, 64 << 10).text()).replace(/^\ufeff/, '').split(/\r?\n/)[0];
    const cols = first.split(',').map((c) => c.trim().replace(/^"(.*)"$/, '$1').trim());
    if (!cols.some((c) => c.toLowerCase() === 'uid')) offerColumns(cols);
  });
  const upForm = h('form', { id: 'audience-upload', novalidate: true },
    field('upload-file', 'Member file', fileIn),
    h('p', { class: 'help', id: 'upload-file-help' }, 'Plain text with one uid per line (a first line such as customer_id is read as a header), or a CSV file (saved as CSV from a spreadsheet) with a header row. Spaces around ids are ignored. A file with any bad line changes nothing: the lines are listed below.'),
    columnRow, modes, uploadBtn,
    progressRow, progressText,
    uploadOut);
  upForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const file = fileIn.files[0];
    setKids(uploadOut);
    fileIn.removeAttribute('aria-invalid');
    if (!file) {
      fileIn.setAttribute('aria-invalid', 'true');
      setKids(uploadOut, alertBox('Choose a file first.'));
      return fileIn.focus();
    }
    const mode = upForm.querySelector(`input[name="${modeName}"]:checked`).value;
    const [, method, suffix, label] = UPLOAD_MODES.find(([v]) => v === mode);
    if (mode === 'replace' && a.size > 0 && !await confirmDialog('Replace every member?', `The ${fmtInt(a.size)} members of “${a.name}” are replaced by the ids of ${file.name}.`, 'Replace')) return;
    const csv = /\.csv$/i.test(file.name) || file.type === 'text/csv';
    uploadBtn.disabled = true;
    progressRow.hidden = false;
    progress.max = Math.max(1, file.size); progress.value = 0;
    progressText.textContent = `Sending ${file.name} (${fmtBytes(file.size)})…`;
    let lastSaid = 0;
    const column = csv && !columnRow.hidden ? '?uid_column=' + encodeURIComponent(columnIn.value) : '';
    const w = await upload(method, `/admin/v1/audiences/${a.id}/members${suffix}${column}`, file, {
      contentType: csv ? 'text/csv' : 'text/plain',
      ifMatch: versionTag(a),
      onProgress: (sent, total) => {
        progress.max = Math.max(1, total); progress.value = sent;
        // the live region speaks at most once a second, and when the last byte has gone
        if (sent >= total || performance.now() - lastSaid > 1000) {
          lastSaid = performance.now();
          progressText.textContent = sent >= total ? `Sent ${fmtBytes(total)}; the server is reading the ids…` : `Sent ${fmtBytes(sent)} of ${fmtBytes(total)}…`;
        }
      },
    });
    uploadBtn.disabled = false;
    if (w.ok) {
      const b = w.body || {};
      took(b);
      progressText.textContent = `Read ${fmtInt(b.lines)} ids from ${file.name}.`;
      setKids(uploadOut, h('div', { class: 'alert info', role: 'status', id: 'upload-result' },
        `${label}: ${fmtInt(b.lines)} lines read, ${fmtInt(b.added ?? 0)} added, ${fmtInt(b.removed ?? 0)} removed, ${fmtInt(b.duplicates ?? 0)} duplicates, ${fmtInt(b.blank ?? 0)} blank` +
        (b.header ? ` (the first line, “${b.header}”, was read as a header)` : '') + `. “${a.name}” has ${fmtInt(a.size)} members now, version ${a.version}.`));
      fileIn.value = '';
      return;
    }
    progressRow.hidden = true;
    progressText.textContent = '';
    fileIn.setAttribute('aria-invalid', 'true');
    const e = w.body?.error || {};
    let box;
    if (w.status === 412) {
      box = staleBox('The upload was');
    } else if (w.status === 413) {
      // too_many_members: more distinct uids than one write may hold (error.limit); audience_memory:
      // every audience's sets together would be over what each instance may hold
      const tooMany = e.code === 'too_many_members';
      box = h('div', { class: 'alert error', role: 'alert', id: 'upload-error' },
        h('p', {}, tooMany
          ? `${file.name} holds too many uids: one ${mode} takes at most ${fmtInt(e.limit)} distinct uids. Nothing was changed.`
          : `${file.name} (${fmtBytes(file.size)}) is over the server’s limit: nothing was changed.`),
        e.message ? h('p', {}, e.message) : null,
        h('p', {}, tooMany && mode === 'replace' ? 'Replace with a shorter list, then add the rest in parts with “Add”.'
          : (tooMany ? 'Split the file and upload the parts one after another.' : 'Free room first: remove members, or delete an audience no popup needs.')));
    } else {
      if (Array.isArray(e.columns)) offerColumns(e.columns); // the server found no uid column: choose one
      const { lines: bad, total } = badLinesOf(e);
      const count = `${fmtInt(total)} bad line${total === 1 ? '' : 's'}` + (total > bad.length ? `, the first ${bad.length} listed` : '');
      box = h('div', { class: 'alert error', role: 'alert', id: 'upload-error' },
        h('p', {}, bad.length ? `${file.name} was refused: ${count}. Nothing was changed; fix the file and upload it again.` : `The upload was refused: ${errorText(w)} Nothing was changed.`),
        bad.length ? h('ol', { id: 'upload-bad-lines', class: 'bad-lines', 'aria-label': 'Bad lines' }, bad.map((x) => h('li', { 'data-line': x.line },
          h('strong', {}, `Line ${fmtInt(x.line)}`), `: ${x.message}`))) : null);
    }
    setKids(uploadOut, box);
    if (w.status === 403) loadMe().then(renderWho);
  });

  // check a uid
  const uidIn = h('input', { type: 'text', name: 'uid', required: true, autocomplete: 'off', spellcheck: 'false' });
  const checkOut = h('div', { id: 'check-out', 'aria-live': 'polite' });
  const checkForm = h('form', { id: 'audience-check', class: 'filters', novalidate: true },
    field('check-uid', 'User id (uid)', uidIn), h('button', { type: 'submit', id: 'check-submit', class: 'secondary' }, 'Check'));
  checkForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const u = uidIn.value.trim();
    uidIn.removeAttribute('aria-invalid');
    if (!u) { uidIn.setAttribute('aria-invalid', 'true'); setKids(checkOut, alertBox('Enter a uid.')); return uidIn.focus(); }
    const c = await api('GET', `/admin/v1/audiences/${a.id}/members/${encodeURIComponent(u)}`);
    if (!c.ok) return setKids(checkOut, alertBox('Check: ' + errorText(c)));
    setKids(checkOut, h('p', { id: 'check-result', class: c.body.member ? 'member yes' : 'member no' },
      h('strong', {}, u), c.body.member ? ' is a member' : ' is not a member', ` of “${a.name}” at version ${c.body.version}.`));
  });

  // download
  const dlOut = h('span', { id: 'download-out', class: 'muted', 'aria-live': 'polite' });
  async function downloadMembers() {
    dlOut.textContent = 'Downloading…';
    const d = await download(`/admin/v1/audiences/${a.id}/members`);
    if (!d.ok) { dlOut.textContent = 'Download: ' + errorText(d); return; }
    const name = d.filename || `audience-${a.id}-v${a.version}.txt`;
    const link = h('a', { href: URL.createObjectURL(d.blob), download: name }, name);
    link.hidden = true;
    document.body.append(link);
    link.click();
    link.remove();
    dlOut.textContent = `Downloaded ${name} (${fmtBytes(d.blob.size)}).`;
  }

  // delete
  const delOut = h('div', { id: 'delete-out', tabindex: '-1' });
  async function remove() {
    if (!await confirmDialog(`Delete audience “${a.name}”?`, `Its ${fmtInt(a.size)} members and its history are deleted. A popup that still names it cannot be saved until it no longer does.`, 'Delete')) return;
    const w = await api('DELETE', '/admin/v1/audiences/' + a.id);
    if (w.ok) {
      audienceCache.at = 0;
      toast(`Deleted audience “${a.name}”.`);
      location.hash = '#/audiences';
      return;
    }
    let msg = 'Not deleted: ' + errorText(w);
    let ids = [];
    if (w.status === 409) {
      const e = w.body?.error || {};
      ids = (e.popups || e.used_by || a.used_by || []).map((p) => (typeof p === 'object' ? p.id : p));
      const named = (e.popups || []).filter((p) => typeof p === 'object');
      for (const p of named) if (!popups.has(String(p.id))) popups.set(String(p.id), p);
      msg = `Not deleted: live popups use “${a.name}”. Take it out of their targeting (or archive them) first, then delete it. Nothing was changed.`;
    }
    setKids(delOut, h('div', { class: 'alert error', role: 'alert', id: 'delete-error' }, h('p', {}, msg),
      ids.length ? popupLinks(ids, popups) : null));
    delOut.focus();
  }

  // history
  const histBox = h('div', { id: 'audience-history', 'aria-busy': 'true' }, h('p', { class: 'muted' }, 'Loading…'));
  let histSeq = 0;
  async function loadHistory() {
    const mine = ++histSeq;
    histBox.setAttribute('aria-busy', 'true');
    const hr = await api('GET', `/admin/v1/audiences/${a.id}/history`);
    if (mine !== histSeq) return;
    histBox.setAttribute('aria-busy', 'false');
    if (!hr.ok) return setKids(histBox, alertBox('History: ' + errorText(hr), notAvailable(hr) ? 'info' : 'error'));
    const rows = (hr.body?.changes || []).slice().sort((x, y) => y.version - x.version);
    if (!rows.length) return setKids(histBox, h('p', { class: 'muted' }, 'No change yet.'));
    const num = (v) => h('td', { class: 'num' }, v === undefined || v === null ? '—' : fmtInt(v));
    setKids(histBox, h('div', { class: 'table-wrap' }, h('table', { id: 'audience-history-table' },
      h('caption', { class: 'sr-only' }, 'Versions of the audience, newest first'),
      h('thead', {}, h('tr', {}, ['Version', 'When', 'By', 'Change', 'Added', 'Removed', 'Members after'].map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', {}, rows.map((v) => h('tr', { 'data-version': v.version },
        h('th', { scope: 'row' }, String(v.version)), h('td', {}, fmtTime(v.at)),
        h('td', {}, v.actor + (v.role ? ` (${v.role})` : '')), h('td', {}, CHANGE_ACTIONS[v.action] || v.action),
        num(v.added), num(v.removed), num(v.size)))))));
  }
  loadHistory();

  const canChange = mayChange();
  screen(`Audience: ${a.name}`,
    h('p', {}, h('a', { href: '#/audiences' }, '← Audiences')),
    canChange ? null : roleNote(why()),
    meta,
    canChange ? h('section', { 'aria-labelledby': 'upload-h' }, h('h2', { id: 'upload-h' }, 'Upload members'), upForm) : null,
    h('section', { 'aria-labelledby': 'check-h' }, h('h2', { id: 'check-h' }, 'Check a user'), checkForm, checkOut),
    h('section', { 'aria-labelledby': 'download-h' }, h('h2', { id: 'download-h' }, 'Member list'),
      h('p', {}, h('button', { type: 'button', class: 'secondary', id: 'download-members', onclick: downloadMembers }, 'Download the member list'), ' ', dlOut),
      h('p', { class: 'help' }, 'A text file, one uid per line, as it stands now.')),
    canChange ? h('section', { 'aria-labelledby': 'edit-h' }, h('h2', { id: 'edit-h' }, 'Name and description'), edForm) : null,
    h('section', { 'aria-labelledby': 'audience-history-h' }, h('h2', { id: 'audience-history-h' }, 'History'), histBox),
    can('publish') ? h('section', { 'aria-labelledby': 'delete-h' }, h('h2', { id: 'delete-h' }, 'Delete'),
      h('p', {}, h('button', { type: 'button', class: 'danger', id: 'audience-delete', onclick: remove }, 'Delete this audience')),
      h('p', { class: 'help' }, 'Refused while a live popup uses it.'), delOut) : null);
  renderMeta();
}

// ---------------------------------------------------------------- audit

function auditScreen() {
  const popupIn = h('input', { type: 'text', name: 'popup_id', inputmode: 'numeric' });
  const actorIn = h('input', { type: 'text', name: 'actor' });
  const list = h('div', { id: 'audit-list', 'aria-live': 'polite' });
  let before = '';
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter the audit log', novalidate: true },
    field('a-popup', 'Popup id', popupIn), field('a-actor', 'Operator', actorIn), h('button', { type: 'submit' }, 'Apply filter'));
  form.addEventListener('submit', (ev) => { ev.preventDefault(); before = ''; more.hidden = true; setKids(list, ); load(); });
  // shown only while the API answered a next page; a click without one does nothing, so the end
  // of the log is never loaded twice
  const more = h('button', { type: 'button', class: 'secondary', id: 'audit-more', hidden: true, onclick: () => { if (before) { more.hidden = true; load(); } } }, 'Older entries');
  let loadSeq = 0; // a filter applied while a page loads: only the newest request renders
  async function load() {
    const mine = ++loadSeq;
    const qs = new URLSearchParams({ limit: String(PAGE) });
    if (popupIn.value.trim()) qs.set('popup_id', popupIn.value.trim());
    if (actorIn.value.trim()) qs.set('actor', actorIn.value.trim());
    if (before) qs.set('before', before);
    const [r, zone] = await Promise.all([api('GET', '/admin/v1/audit?' + qs), teamZone()]);
    if (mine !== loadSeq) return;
    if (!r.ok) { more.hidden = true; return setKids(list, alertBox('Audit log: ' + errorText(r), notAvailable(r) ? 'info' : 'error')); }
    const entries = r.body.entries || [];
    if (!entries.length && !before) list.append(h('p', {}, 'No entries.'));
    for (const e of entries) {
      list.append(h('article', { class: 'audit-entry', 'data-id': e.id, 'data-action': e.action, 'data-popup': e.popup_id ?? '' },
        h('h2', { class: 'h3' }, `${e.action} of `, e.popup_id ? h('a', { href: '#/popups/' + e.popup_id }, `popup #${e.popup_id}`) : 'the config',
          (e.after || e.before)?.name ? ` “${(e.after || e.before).name}”` : '', e.revision ? ` (revision ${e.revision})` : ''),
        h('p', { class: 'muted' }, `${teamTime(e.at, zone)} by ${e.actor}`),
        (e.before || e.after) ? h('details', {}, h('summary', {}, 'Changes'), diffTable(readable(diff(e.before, e.after), zone), 'Changes of entry ' + e.id)) : null));
    }
    before = r.body.next || '';
    more.hidden = !before;
  }
  screen('Audit log', form, list, more);
  load();
}

// ---------------------------------------------------------------- import / export

function importScreen() {
  const out = h('div', { id: 'import-out', 'aria-live': 'polite' });
  const exportOut = h('div', { id: 'export-out', 'aria-live': 'polite' });
  const fileIn = h('input', { type: 'file', accept: 'application/json,.json' });
  const text = h('textarea', { rows: 10, class: 'mono', spellcheck: 'false', name: 'import' });
  const applyBtn = h('button', { type: 'button', id: 'import-apply', disabled: true, onclick: () => run(false) }, 'Apply import');
  // a dry run needs the editor role, applying the publisher role: what the role may not use is not offered
  const mayCheck = can('edit_drafts');
  const mayApply = can('publish');
  fileIn.addEventListener('change', async () => { if (fileIn.files[0]) { text.value = await fileIn.files[0].text(); applyBtn.disabled = true; } });
  text.addEventListener('input', () => { applyBtn.disabled = true; });

  async function exportAll() {
    const r = await api('GET', '/admin/v1/export');
    if (!r.ok) return setKids(exportOut, alertBox('Export: ' + errorText(r), notAvailable(r) ? 'info' : 'error'));
    const blob = new Blob([JSON.stringify(r.body, null, 2)], { type: 'application/json' });
    const a = h('a', { href: URL.createObjectURL(blob), download: `popups-${isoDay(new Date())}.json` }, 'Download the export');
    setKids(exportOut, h('p', {}, `${(r.body.popups || []).length} popup(s) exported. `, a));
    a.focus();
  }

  async function run(dryRun) {
    let body;
    try { body = JSON.parse(text.value); } catch { return setKids(out, alertBox('The import is not valid JSON.')); }
    if (!dryRun && !await confirmDialog('Apply the import?', 'Every popup in the file is created or updated in one step.', 'Apply import')) return;
    const r = await api('POST', '/admin/v1/import?dry_run=' + dryRun, body);
    if (!r.ok) {
      applyBtn.disabled = true;
      const fields = r.body?.error?.fields || [];
      return setKids(out, alertBox(h('div', {}, h('p', {}, 'Import: ' + errorText(r)), fields.length ? h('ul', {}, fields.map((f) => h('li', {}, `${f.field}: ${f.message}`))) : null), notAvailable(r) ? 'info' : 'error'));
    }
    const b = r.body;
    setKids(out, alertBox(`${b.dry_run ? 'Dry run: would create' : 'Imported: created'} ${b.created}, ${b.dry_run ? 'update' : 'updated'} ${b.updated}, ${b.unchanged} unchanged.`, 'info'));
    applyBtn.disabled = !b.dry_run;
    if (!b.dry_run) { applyBtn.disabled = true; statsCache.at = 0; }
  }

  screen('Import / export',
    h('section', { 'aria-labelledby': 'export-h' }, h('h2', { id: 'export-h' }, 'Export'),
      h('p', {}, 'Every popup, in the shape the import takes.'),
      h('button', { type: 'button', id: 'export', onclick: exportAll }, 'Export all popups'), exportOut),
    h('section', { 'aria-labelledby': 'import-h' }, h('h2', { id: 'import-h' }, 'Import'),
      mayCheck ? [
        h('p', {}, 'Popups are matched by name. Check first: the dry run changes nothing.'),
        mayApply ? null : roleNote(`You are signed in as ${me.operator}, an ${me.role}: you can check an import; applying it needs the publisher role.`),
        field('i-file', 'Export file', fileIn),
        field('i-text', 'Or paste the JSON', text),
        h('div', { class: 'actions' }, h('button', { type: 'button', id: 'import-dry', onclick: () => run(true) }, 'Check (dry run)'), mayApply ? applyBtn : null),
        out,
      ] : roleNote(`You are signed in as ${me.operator}, a ${me.role}: importing needs the publisher role (checking an import, the editor role).`)));
}

// ---------------------------------------------------------------- operators (admin)

const ROLE_MAY = {
  viewer: 'reads everything',
  editor: 'also creates and edits drafts, checks imports',
  publisher: 'also publishes, pauses, resumes, archives, rolls back and imports',
  admin: 'also lists the operators and reloads the config cache (API: POST /admin/v1/cache/reload)',
};

async function operatorsScreen() {
  const seq = navSeq;
  if (!can('admin')) return screen('Operators', roleNote(`You are signed in as ${me.operator}, a ${me.role}: the list of operators needs the admin role.`));
  const box = h('div', { id: 'operators-out', 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Loading…'));
  screen('Operators',
    h('p', {}, 'Who may use the admin API, with which role. Operators and roles are declared with their tokens (POPUP_ADMIN_TOKENS, name@role:token); this list is read-only.'),
    box);
  const r = await api('GET', '/admin/v1/operators');
  if (seq !== navSeq) return;
  if (!r.ok) return setKids(box, alertBox('Operators: ' + errorText(r), notAvailable(r) ? 'info' : 'error'));
  const ops = r.body.operators || [];
  setKids(box,
    h('div', { class: 'table-wrap' }, h('table', { id: 'operators-table' }, h('caption', {}, `${ops.length} operator${ops.length === 1 ? '' : 's'}`),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Role'))),
      h('tbody', {}, ops.map((o) => h('tr', {}, h('th', { scope: 'row' }, o.name), h('td', {}, o.role)))))),
    h('h2', {}, 'What each role may do'),
    h('ul', { id: 'role-rights' }, Object.entries(ROLE_MAY).map(([role, may]) => h('li', {}, h('strong', {}, role), ': ' + may))));
}

// ---------------------------------------------------------------- global holdout

// holdoutScreen: one phase of the global holdout (docs/CONTRACT.md §15), the latest by default:
// for every goal, the users the holdout kept from the popups against the others, with what the
// popups add (difference and lift, with their intervals) in plain words first; whether the split
// matches the percentage; the phases, the setting's history. Every operator reads it; an admin
// changes the share in Settings.
async function holdoutScreen(qs) {
  const seq = navSeq;
  const phase = new URLSearchParams(qs || '').get('phase') || '';
  const r = await api('GET', '/admin/v1/holdout/results' + (phase ? '?phase=' + encodeURIComponent(phase) : ''));
  if (seq !== navSeq) return;
  const title = 'Global holdout';
  const where = can('admin') ? h('a', { href: '#/settings' }, 'Settings') : 'Settings (an admin’s)';
  if (!r.ok) {
    if (r.body?.error?.code === 'holdout_missing') {
      return screen(title, h('div', { class: 'alert info', role: 'status', id: 'holdout-none' },
        'No holdout has run yet. A holdout keeps a share of all users from every popup (but service notices) so that comparing them with the others says whether the popups help at all; it is set in ', where, '.'));
    }
    return screen(title, alertBox('Holdout results: ' + errorText(r), r.status === 404 && !notAvailable(r) ? 'info' : 'error'));
  }
  const b = r.body;
  const groups = b.groups || [];
  const [held, others] = groups;
  const o = b.options || {};
  const srm = b.srm || {};
  const exposed = groups.reduce((n, g) => n + (g.exposed_users || 0), 0);

  const sel = h('select', { id: 'holdout-phase', name: 'phase' }, (b.phases || []).map((p) => h('option', { value: p.phase, selected: p.phase === b.phase },
    `Phase ${p.phase}: ${p.percent}%${p.running ? ' (running)' : ''}`)));
  sel.addEventListener('change', () => { location.hash = '#/holdout?phase=' + sel.value; });
  const picker = (b.phases || []).length > 1 ? h('form', { class: 'filters', 'aria-label': 'Phase of the holdout', novalidate: true },
    h('div', { class: 'field inline' }, h('label', { for: 'holdout-phase' }, 'Phase'), sel),
    h('p', { class: 'help' }, 'Another percentage starts a new phase, counted from zero.')) : null;
  const meta = h('p', { id: 'holdout-meta' }, `Phase ${b.phase}: ${b.percent}% of users held out, `,
    h('span', { class: 'badge ' + (b.running ? 'running' : 'ended') }, b.running ? 'running' : 'ended'),
    ` since ${fmtTime(b.started_at)} (set by ${b.started_by})`, b.ended_at ? `, until ${fmtTime(b.ended_at)} (${b.ended_by})` : '', ` (times in ${zoneName}). The share is set in `, where, '.');

  const dof = `${srm.df ?? '—'} degree${srm.df === 1 ? '' : 's'} of freedom`;
  const srmBox = srm.alarm
    ? h('div', { class: 'alert error srm-alarm', role: 'alert', id: 'srm' },
      h('p', {}, h('strong', {}, 'Sample-ratio mismatch: do not trust these results.')),
      h('p', {}, `The users held out are not ${b.percent}% of the users exposed (χ² ${fmtNum(srm.chi_square)}, ${dof}, p ${pValue(srm.p)}; the alarm is at p below ${o.srm_alpha ?? 0.001}). Users are lost or double-counted in one group.`))
    : h('div', { class: 'alert info', role: 'status', id: 'srm' }, exposed === 0
      ? 'Sample ratio: no data yet. Nobody has been exposed in this phase.'
      : `Sample ratio: OK. The users held out match the ${b.percent}% (χ² ${fmtNum(srm.chi_square)}, ${dof}, p ${pValue(srm.p)}).`);

  const goals = (others?.goals || []).map((g, k) => ({ key: g.goal, held: held.goals[k], others: g }));
  // the words and the interval they quote are the API's (effects: docs/CONTRACT.md §15 "Results")
  const effects = new Map((b.effects || []).map((e) => [e.goal, e]));
  const said = (g) => effects.get(g.key)?.summary || `${g.key}: not enough data yet.`;
  const td = (v, cls = 'num') => h('td', { class: cls }, v);
  const ci = (v) => td(v, 'num ci');
  const money = (v) => (v === null || v === undefined ? '—' : Number(v).toFixed(2));
  const tables = goals.map((g) => {
    const sum = g.others.mean_value !== null && g.others.mean_value !== undefined;
    const cols = ['Group', 'Exposed users', 'Converted users', 'Conversion rate', 'Rate 95% interval', 'Difference (points)', 'Difference interval (points)',
      'Lift', 'Lift interval', 'Sequential p', ...(sum ? ['Value per user', 'Value difference'] : [])];
    return h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-labelledby': 'holdout-goal-h-' + g.key },
      h('h3', { id: 'holdout-goal-h-' + g.key }, g.key),
      h('table', { id: 'holdout-goal-' + g.key, class: 'results' },
        h('caption', {}, `Goal ${g.key}: the others (not held out, shown a popup) against the users held out (95% intervals)`),
        h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, groups.map((grp, i) => {
          const x = i === 0 ? g.held : g.others;
          return h('tr', { 'data-group': grp.group },
            h('th', { scope: 'row' }, grp.group, i === 0 ? h('span', { class: 'badge' }, ' baseline') : null),
            td(fmtNum(grp.exposed_users)), td(fmtNum(x.converted_users)), td(pct(x.rate)), ci(interval(x.rate_ci)),
            td(points(x.difference, true)), ci(pointsInterval(x.difference_ci)), td(pct(x.lift, true)), ci(interval(x.lift_ci, true)), td(pValue(x.sequential_p)),
            ...(sum ? [td(money(x.mean_value)), td(money(x.mean_value_difference))] : []));
        }))));
  });
  const liftRows = goals.filter((g) => Array.isArray(g.others.lift_ci) && g.others.lift !== null).map((g) => ({ label: g.key, est: g.others.lift, lo: g.others.lift_ci[0], hi: g.others.lift_ci[1] }));

  screen(title, meta, picker,
    h('section', { class: 'card results-summary', 'aria-labelledby': 'holdout-summary-h' }, h('h2', { id: 'holdout-summary-h' }, 'Do the popups help?'),
      goals.length ? h('ul', { id: 'holdout-summary' }, goals.map((g) => h('li', { 'data-goal': g.key }, said(g))))
        : h('p', { id: 'holdout-summary' }, 'There are no goals yet: create one (Goals) and send conversions to compare the groups.'),
      h('table', { id: 'holdout-groups', class: 'results' }, h('caption', {}, `Groups of phase ${b.phase}`),
        h('thead', {}, h('tr', {}, ['Group', 'Share', 'Exposed users', 'Exposures'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, groups.map((g) => h('tr', { 'data-group': g.group }, h('th', { scope: 'row' }, g.group === 'holdout' ? 'held out' : 'others (not held out, shown a popup)'),
          td(g.percent + '%'), td(fmtNum(g.exposed_users)), td(fmtNum(g.exposures))))))),
    srmBox,
    liftRows.length ? intervalChart('holdout-lift', 'Lift of the popups on each goal (the others against the users held out), with its 95% interval; 0 is no effect', liftRows, true) : null,
    goals.length ? h('section', { id: 'holdout-goals', 'aria-labelledby': 'holdout-goals-h' }, h('h2', { id: 'holdout-goals-h' }, 'Goals'), ...tables) : null,
    h('p', { class: 'help' }, 'A user counts in a group from the first time the popups would have reached them in the phase (a user held out: the popup they would have been shown; the others: a popup shown). A conversion counts within the goal’s window after that; a user converts once per goal. “Confident” means the always-valid interval of the difference excludes 0, so it may be read at any time.'));
}

// ---------------------------------------------------------------- settings (admin)

// settingsScreen: the team's settings (docs/CONTRACT.md §8), changed by admins only; every other
// operator sees the values.
async function settingsScreen() {
  const seq = navSeq;
  const box = h('div', { id: 'settings-box' }, h('p', { class: 'muted' }, 'Loading…'));
  screen('Settings', box);
  const r = await api('GET', '/admin/v1/settings');
  if (seq !== navSeq) return;
  if (!r.ok) return setKids(box, alertBox('Settings: ' + errorText(r), notAvailable(r) ? 'info' : 'error'));
  const zone = r.body.reporting_time_zone || 'UTC';
  const pacingText = (b) => `${b.min_gap_seconds ? `at least ${b.min_gap_seconds} s between two popups` : 'no gap between popups'}, ${b.daily_cap ? `at most ${b.daily_cap} a day` : 'no daily cap'}`;
  const holdoutText = (b) => (b.holdout_percent ? `${b.holdout_percent}% of users see no popup but the exempt ones` : 'none');
  if (!can('admin')) {
    return setKids(box, roleNote(`You are signed in as ${me.operator}, a ${me.role}: changing the settings needs the admin role.`),
      h('p', {}, 'Reporting time zone: ', h('strong', { id: 'reporting-zone-shown' }, zone), '. Results and daily stats are counted in its days.'),
      h('p', {}, 'Pacing across campaigns: ', h('strong', { id: 'pacing-shown' }, pacingText(r.body)), '.'),
      h('p', {}, 'Global holdout: ', h('strong', { id: 'holdout-shown' }, holdoutText(r.body)), '. ', h('a', { href: '#/holdout' }, 'Its results')));
  }
  let heldNow = r.body.holdout_percent ?? 0; // the running percentage: another starts a new phase
  const held = h('input', { type: 'number', id: 'holdout-percent', name: 'holdout_percent', min: 0, max: 20, step: 1, value: heldNow, 'aria-describedby': 'holdout-percent-help' });
  const gap = h('input', { type: 'number', id: 'min-gap', name: 'min_gap_seconds', min: 0, max: 604800, value: r.body.min_gap_seconds ?? 0, 'aria-describedby': 'min-gap-help' });
  const cap = h('input', { type: 'number', id: 'daily-cap', name: 'daily_cap', min: 0, max: 1000, value: r.body.daily_cap ?? 0, 'aria-describedby': 'daily-cap-help' });
  const names = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  const input = h('input', { type: 'text', id: 'reporting-zone', name: 'reporting_time_zone', value: zone, list: 'zone-names', autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'reporting-zone-help' });
  const out = h('div', { id: 'settings-out', 'aria-live': 'polite' });
  const form = h('form', { class: 'card narrow', novalidate: true },
    h('div', { class: 'field' }, h('label', { for: 'reporting-zone' }, 'Reporting time zone'), input,
      h('datalist', { id: 'zone-names' }, ['UTC', ...names.filter((n) => n !== 'UTC')].map((n) => h('option', { value: n }))),
      h('p', { class: 'help', id: 'reporting-zone-help' }, `An IANA time zone name, e.g. America/Los_Angeles or Europe/Berlin. Results, their CSV and the list's “Today” count the days of this zone, for every operator. Your browser is in ${zoneName}.`)),
    h('fieldset', { id: 'pacing' }, h('legend', {}, 'Pacing across campaigns'),
      h('div', { class: 'field' }, h('label', { for: 'min-gap' }, 'Minimum gap between two popups (seconds)'), gap,
        h('p', { class: 'help', id: 'min-gap-help' }, 'After any popup is shown to a user, no other for this long. 0: no gap. The preview names it min_gap.')),
      h('div', { class: 'field' }, h('label', { for: 'daily-cap' }, 'Popups per user per day'), cap,
        h('p', { class: 'help', id: 'daily-cap-help' }, 'At most this many a UTC day, across all popups. 0: no cap. The preview names it daily_cap.')),
      h('p', { class: 'help' }, 'Popups marked “exempt from the team’s pacing” pass both. A change reaches every instance within 2 seconds.')),
    h('fieldset', { id: 'holdout' }, h('legend', {}, 'Global holdout'),
      h('div', { class: 'field' }, h('label', { for: 'holdout-percent' }, 'Users held out (percent, 0 to 20)'), held,
        h('p', { class: 'help', id: 'holdout-percent-help' }, 'This share of all users sees no popup but those marked “exempt from the global holdout”; comparing them with the others on the goals says whether the popups help at all (', h('a', { href: '#/holdout' }, 'Holdout results'), '). 0: no holdout. Another percentage starts a new phase, counted from zero; the users held out stay held out when it grows. Peers recommend 1–10%, kept for months.'))),
    h('button', { type: 'submit', id: 'settings-save' }, 'Save settings'), out);
  const inputs = { reporting_time_zone: [input, 'reporting-zone'], min_gap_seconds: [gap, 'min-gap'], daily_cap: [cap, 'daily-cap'], holdout_percent: [held, 'holdout-percent'] };
  const clear = () => {
    for (const [el, id] of Object.values(inputs)) {
      document.getElementById(id + '-err')?.remove();
      el.removeAttribute('aria-invalid');
      el.setAttribute('aria-describedby', id + '-help');
    }
  };
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clear();
    setKids(out);
    const whole = (el) => (el.value.trim() === '' ? 0 : Number(el.value));
    if (held.validity.badInput) { // not a number: never sent (an empty box would read as 0, the end of the holdout)
      held.closest('.field').append(h('p', { class: 'field-error', id: 'holdout-percent-err' }, 'must be a whole number from 0 to 20'));
      held.setAttribute('aria-invalid', 'true');
      held.setAttribute('aria-describedby', 'holdout-percent-help holdout-percent-err');
      return held.focus();
    }
    const body = { reporting_time_zone: input.value.trim(), min_gap_seconds: whole(gap), daily_cap: whole(cap), holdout_percent: whole(held) };
    if (body.holdout_percent !== heldNow && Number.isInteger(body.holdout_percent) && body.holdout_percent >= 0 && body.holdout_percent <= 20) {
      const text = body.holdout_percent === 0
        ? `This ends the holdout: the ${heldNow}% held out will see popups again. Its results are kept.`
        : (heldNow ? `This ends the current phase (${heldNow}%) and starts a new one with ${body.holdout_percent}%, counted from zero. The earlier phase's results are kept.`
          : `From now on ${body.holdout_percent}% of all users see no popup but the exempt ones.`);
      if (!await confirmDialog(heldNow ? 'Start a new holdout phase?' : 'Start the holdout?', text, 'Save and start')) return;
    }
    const w = await api('PUT', '/admin/v1/settings', body);
    if (!w.ok) {
      let first = null;
      for (const fe of w.body?.error?.fields || []) {
        const [el, id] = inputs[fe.field] || [];
        if (!el) continue;
        el.closest('.field').append(h('p', { class: 'field-error', id: id + '-err' }, fe.message));
        el.setAttribute('aria-invalid', 'true');
        el.setAttribute('aria-describedby', `${id}-help ${id}-err`);
        first = first || el;
      }
      if (first) return first.focus();
      return setKids(out, alertBox('Settings: ' + errorText(w)));
    }
    input.value = w.body.reporting_time_zone;
    gap.value = w.body.min_gap_seconds; cap.value = w.body.daily_cap; held.value = w.body.holdout_percent;
    setKids(out, alertBox(`Saved: results are counted in the days of ${w.body.reporting_time_zone}; ${pacingText(w.body)}; global holdout: ${holdoutText(w.body)}.`, 'info'));
    heldNow = w.body.holdout_percent;
    statsCache.at = 0;
  });
  setKids(box, h('p', {}, 'Settings of the whole team. Changes are logged with the operator.'), form);
}

route();
