// The audiences (#/audiences): uploaded lists of user ids that popups target; the list, a new
// one, and the parts the audience page shares (the popups that use one, the name fields).
import { h, notAvailable, errorText, fmtTime, isLive } from '../lib.js';
import { getPopup } from '../api/popups.js';
import { createAudience } from '../api/audiences.js';
import { session, can, nav } from '../state.js';
import { loadAudiences, dropAudiences } from '../cache.js';
import { setKids, toast, screen, alertBox, roleNote } from '../ui.js';
import { field, fieldErrorsIn } from '../form.js';
import { fmtInt } from '../figures.js';

// popupsById reads the popups an audience names (used_by) for their names and status; a popup
// that cannot be read is {id} alone.
export async function popupsById(ids) {
  const uniq = [...new Set(ids.map(String))];
  const got = await Promise.all(uniq.map((id) => getPopup(id)));
  return new Map(uniq.map((id, i) => [id, got[i].ok ? got[i].body : { id, name: '', unread: true }]));
}

// popupLinks: links to the popups (by id), named, with their status.
export function popupLinks(ids, byId) {
  if (!ids?.length) return h('span', { class: 'muted' }, 'no popup');
  return h('ul', { class: 'inline-list' }, ids.map((id) => {
    const p = byId.get(String(id)) || { id };
    return h('li', {}, h('a', { href: '#/popups/' + id }, p.name || `popup #${id}`), p.status ? h('span', { class: 'badge ' + p.status }, p.status) : null);
  }));
}

// liveUser: some popup of used_by is live (active or paused), or cannot be read (counted live:
// the page then offers less, never more, than the API allows).
export const liveUser = (ids, byId) => (ids || []).some((id) => { const p = byId.get(String(id)); return !p || p.unread || isLive(p.status); });

export const versionTag = (a) => `"${a.version}"`;

export function audienceFields(prefix, a = {}) {
  const name = h('input', { type: 'text', name: 'name', 'data-field': 'name', required: true, autocomplete: 'off', value: a.name || '' });
  const description = h('textarea', { name: 'description', 'data-field': 'description', rows: 2, value: a.description || '' });
  return {
    name, description,
    el: [field(prefix + '-name', 'Name', name, 'Shown in the popup form and in explanations, e.g. VIPs.'),
      field(prefix + '-description', 'Description', description, 'Optional: where the list comes from, who keeps it.')],
    read: () => ({ name: name.value.trim(), description: description.value.trim() }),
  };
}

export async function audiencesScreen() {
  const seq = nav.seq;
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
      const r = await createAudience(f.read());
      if (!r.ok) return fieldErrorsIn(form, errs, r, 'The audience was not created');
      dropAudiences();
      toast(`Created audience “${r.body.name}”: now upload its members.`);
      location.hash = '#/audiences/' + r.body.id;
    });
    create = form;
  }
  screen('Audiences',
    h('p', {}, 'Lists of user ids that popups target: a popup can show only to the users of some audiences, or never to those of others.'),
    create || roleNote(`You are signed in as ${session.me.operator}, a ${session.me.role}: creating audiences and uploading their members needs the editor role (the publisher role for an audience a live popup uses).`),
    h('h2', { id: 'audience-list-h' }, 'All audiences'),
    results);
  const c = await loadAudiences(true);
  if (seq !== nav.seq) return;
  results.setAttribute('aria-busy', 'false');
  if (!c.available) return setKids(results, alertBox('Audiences: ' + errorText(c.r), notAvailable(c.r) ? 'info' : 'error'));
  if (!c.list.length) return setKids(results, h('p', { id: 'audience-none' }, 'No audience yet.'));
  const popups = await popupsById(c.list.flatMap((a) => a.used_by || []));
  if (seq !== nav.seq) return;
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
