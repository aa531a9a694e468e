// The popup list (#/popups): filters, sort and search kept in the address, a page of popups with
// today's numbers and the last 14 days, paged by cursor.
import { h, errorText, fmtTime, fmtPct, sparkline, zoneName } from '../lib.js';
import { listPopups } from '../api/popups.js';
import { can, nav } from '../state.js';
import { loadListStats, dropListStats, loadAudiences, audienceName } from '../cache.js';
import { PAGE, setKids, screen, alertBox } from '../ui.js';
import { summary as whereSummary } from './popup/where.js';

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
  const where = whereSummary(t); // placements, trigger, rules in plain words
  if (where) parts.push(where);
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

export async function listScreen(qs) {
  readListQuery(qs);
  listState.cursors = ['']; listState.page = 0;
  dropListStats(); // fresh numbers each time the list opens; paging reuses them
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
    dropListStats(); // an explicit action: fresh numbers, not the ones cached for paging
    history.replaceState(null, '', '#/popups' + listQuery());
    nav.shownHash = location.hash;
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
    const [r, stats] = await Promise.all([listPopups(params), loadListStats(), loadAudiences()]);
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
