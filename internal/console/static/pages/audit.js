// The audit log (#/audit): who changed what, newest first, in words: every resource's changes, or
// one resource's, found by the name of what changed and by operator. A popup's change opens on
// its before and after.
import { h, notAvailable, errorText, diff, diffTable, fmtTime } from '../lib.js';
import { listChanges, popupWrite } from '../api/audit.js';
import { teamZone } from '../cache.js';
import { PAGE, setKids, screen, alertBox } from '../ui.js';
import { field } from '../form.js';
import { readable } from '../figures.js';
import { RESOURCES, describe } from './auditwords.js';

// popupChanges is the details of a popup's change: its before and after, read when opened.
function popupChanges(e) {
  const box = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const details = h('details', {}, h('summary', {}, 'What changed'), box);
  let loaded = false;
  details.addEventListener('toggle', async () => {
    if (!details.open || loaded) return;
    loaded = true;
    const [r, zone] = await Promise.all([popupWrite(e.popup_id, e.id), teamZone()]);
    const w = r.ok ? (r.body.entries || [])[0] : null;
    if (!w) { loaded = false; return setKids(box, alertBox('The change cannot be read now: ' + errorText(r))); }
    setKids(box, diffTable(readable(diff(w.before, w.after), zone), 'What changed in ' + (e.name || 'the popup')));
  });
  return details;
}

export function auditScreen() {
  const resourceIn = h('select', { name: 'resource' }, RESOURCES.map(([v, words]) => h('option', { value: v }, words)));
  const nameIn = h('input', { type: 'search', name: 'name', autocomplete: 'off' });
  const actorIn = h('input', { type: 'text', name: 'actor', autocomplete: 'off' });
  const list = h('div', { id: 'audit-list', 'aria-live': 'polite' });
  let before = '';
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter the audit log', novalidate: true },
    field('a-resource', 'Show changes of', resourceIn), field('a-name', 'Name contains', nameIn),
    field('a-actor', 'Operator', actorIn), h('button', { type: 'submit' }, 'Apply filter'));
  form.addEventListener('submit', (ev) => { ev.preventDefault(); before = ''; more.hidden = true; setKids(list); load(); });
  resourceIn.addEventListener('change', () => form.requestSubmit());
  // shown only while the API answered a next page; a click without one does nothing, so the end
  // of the log is never loaded twice
  const more = h('button', { type: 'button', class: 'secondary', id: 'audit-more', hidden: true, onclick: () => { if (before) { more.hidden = true; load(); } } }, 'Older entries');
  let loadSeq = 0; // a filter applied while a page loads: only the newest request renders
  async function load() {
    const mine = ++loadSeq;
    const qs = new URLSearchParams({ resource: resourceIn.value, limit: String(PAGE) });
    if (nameIn.value.trim()) qs.set('name', nameIn.value.trim());
    if (actorIn.value.trim()) qs.set('actor', actorIn.value.trim());
    if (before) qs.set('before', before);
    const r = await listChanges(qs);
    if (mine !== loadSeq) return;
    if (!r.ok) { more.hidden = true; return setKids(list, alertBox('Audit log: ' + errorText(r), notAvailable(r) ? 'info' : 'error')); }
    const entries = r.body.entries || [];
    if (!entries.length && !before) list.append(h('p', {}, 'No entries.'));
    for (const e of entries) {
      list.append(h('article', { class: 'audit-entry', 'data-id': e.resource + '-' + e.id, 'data-resource': e.resource, 'data-action': e.action },
        h('p', { class: 'audit-what' }, describe(e)),
        h('p', { class: 'muted' }, h('time', { datetime: e.at }, fmtTime(e.at))),
        e.resource === 'popups' ? popupChanges(e) : null));
    }
    before = r.body.next || '';
    more.hidden = !before;
  }
  screen('Audit log', form, list, more);
  load();
}
