// A popup's Results section: its numbers over a range of days, per day, per locale and per goal,
// and the same as CSV.
import { h, notAvailable, errorText, fmtPct, sparkline, zoneToday, addDays } from '../../lib.js';
import { popupStats, popupStatsCSV } from '../../api/popups.js';
import { setKids, saveBlob } from '../../ui.js';
import { fmtInt } from '../../figures.js';

// resultsSection: a popup's results over a range of days of the team's reporting time zone (the
// API's default; docs/CONTRACT.md §8): a row per day and the totals, with unique users, clicks
// per button and the close rate; the CSV download holds exactly what the table shows.
const PRESETS = [7, 14, 30, 90];

export function resultsSection(current) {
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
    const r = await popupStats(id, qs);
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
    const r = await popupStatsCSV(id, qs);
    if (!r.ok) { csvOut.textContent = 'CSV: ' + errorText(r); return; }
    const name = r.filename || `popup-${id}-${shown.from}-${shown.to}.csv`;
    saveBlob(r.blob, name);
    csvOut.textContent = `Downloaded ${name} (${shown.from} to ${shown.to}, days in ${shown.zone}).`;
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
