// The audit log (#/audit): who changed what, newest first, with each change as a diff.
import { h, notAvailable, errorText, diff, diffTable } from '../lib.js';
import { listAudit } from '../api/audit.js';
import { teamZone } from '../cache.js';
import { PAGE, setKids, screen, alertBox } from '../ui.js';
import { field } from '../form.js';
import { teamTime, readable } from '../figures.js';

export function auditScreen() {
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
    const [r, zone] = await Promise.all([listAudit(qs), teamZone()]);
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
