// Explain for a user (#/explain): what a user would get now and why not the others, their state,
// and for admins their personal data (export, erasure). draftExplainSection asks the same with the
// popup form's draft beside the live popups.
import { h, notAvailable, errorText, fmtTime, fmtBytes } from '../lib.js';
import { explainUser, explainDraft } from '../api/preview.js';
import { userState, exportUser, eraseUser, erasureStatus, erasurePath } from '../api/users.js';
import { can } from '../state.js';
import { loadAudiences, audienceName } from '../cache.js';
import { setKids, screen, alertBox, confirmDialog, saveBlob } from '../ui.js';
import { field } from '../form.js';
import { fmtInt } from '../figures.js';
import { renderPreview } from './popup/preview.js';

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

export function explainScreen() {
  const u = userFields('x');
  const out = h('div', { id: 'explain-out', 'aria-live': 'polite' });
  const form = h('form', { class: 'card', novalidate: true }, u.row, h('button', { type: 'submit', id: 'explain' }, 'Explain'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const v = u.values();
    const qs = new URLSearchParams(Object.entries(v).filter(([, x]) => x));
    setKids(out, h('p', { class: 'muted' }, 'Asking…'));
    const [pr, sr] = await Promise.all([explainUser(qs), v.uid ? userState(v.uid) : null, loadAudiences()]);
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
    const d = await exportUser(uid);
    if (!d.ok) { setKids(outEl, alertBox('Export: ' + errorText(d))); return; }
    const name = 'user-export.json';
    saveBlob(d.blob, name);
    outEl.textContent = `Downloaded ${name} (${fmtBytes(d.blob.size)}): everything held about this user.`;
  }
  async function erase() {
    if (!await confirmDialog('Erase this user?', `Everything held about “${uid}” is deleted within a minute: their state, action log, experiment rows and audience memberships. Totals and daily results stay. This cannot be undone.`, 'Erase')) return;
    const r = await eraseUser(uid);
    if (!r.ok) { setKids(outEl, alertBox('Erase: ' + errorText(r))); return; }
    const id = r.body.erasure_id;
    outEl.textContent = 'Erasing… (pending)';
    for (let i = 0; i < 90; i++) {
      const st = await erasureStatus(id);
      if (!st.ok) { setKids(outEl, alertBox('Erasure status: ' + errorText(st))); return; }
      if (st.body.status === 'done') {
        const removed = Object.entries(st.body.removed || {}).filter(([, n]) => n > 0).map(([k, n]) => `${fmtInt(n)} ${k}`).join(', ');
        setKids(outEl, alertBox(`Erased: ${removed || 'nothing was held'}.`, 'info'));
        return;
      }
      await new Promise((res) => setTimeout(res, 1000));
    }
    outEl.textContent = `The erasure ${id} is still pending; its status: GET ${erasurePath(id)}.`;
  }
  return h('section', { 'aria-labelledby': 'privacy-h' },
    h('h2', { id: 'privacy-h' }, 'Personal data'),
    h('p', { class: 'muted' }, 'An access request gets the export; an erasure request, the erasure. Only admins see these.'),
    h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'secondary', id: 'export-user', onclick: exportData }, 'Export data'),
      h('button', { type: 'button', class: 'danger', id: 'erase-user', onclick: erase }, 'Erase user…')),
    outEl);
}

export function draftExplainSection(body) {
  const u = userFields('d');
  const out = h('div', { id: 'draft-explain-out', 'aria-live': 'polite' });
  const form = h('form', { novalidate: true }, u.row, h('button', { type: 'submit', class: 'secondary' }, 'Explain this draft for the user'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const b = body();
    const r = await explainDraft({ ...u.values(), popup: { ...b, ext: b.ext ?? {} } });
    setKids(out, renderExplain(r, 'This draft'));
  });
  return h('section', { 'aria-labelledby': 'draft-h' },
    h('h2', { id: 'draft-h' }, 'Try the draft on a user'),
    h('p', { class: 'muted' }, 'As if the form above were saved and active, alongside the live popups. Nothing is saved or recorded.'),
    form, out);
}
