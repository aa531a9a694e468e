// The operators (#/operators, admins only): who may use the admin API, with which role.
import { h, notAvailable, errorText } from '../lib.js';
import { listOperators } from '../api/operators.js';
import { session, can, nav } from '../state.js';
import { setKids, screen, alertBox, roleNote } from '../ui.js';

const ROLE_MAY = {
  viewer: 'reads everything',
  editor: 'also creates and edits drafts, checks imports',
  publisher: 'also publishes, pauses, resumes, archives, rolls back and imports',
  admin: 'also lists the operators and reloads the config cache (API: POST /admin/v1/cache/reload)',
};

export async function operatorsScreen() {
  const seq = nav.seq;
  if (!can('admin')) return screen('Operators', roleNote(`You are signed in as ${session.me.operator}, a ${session.me.role}: the list of operators needs the admin role.`));
  const box = h('div', { id: 'operators-out', 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Loading…'));
  screen('Operators',
    h('p', {}, 'Who may use the admin API, with which role. Operators and roles are declared with their tokens (POPUP_ADMIN_TOKENS, name@role:token); this list is read-only.'),
    box);
  const r = await listOperators();
  if (seq !== nav.seq) return;
  if (!r.ok) return setKids(box, alertBox('Operators: ' + errorText(r), notAvailable(r) ? 'info' : 'error'));
  const ops = r.body.operators || [];
  setKids(box,
    h('div', { class: 'table-wrap' }, h('table', { id: 'operators-table' }, h('caption', {}, `${ops.length} operator${ops.length === 1 ? '' : 's'}`),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Role'))),
      h('tbody', {}, ops.map((o) => h('tr', {}, h('th', { scope: 'row' }, o.name), h('td', {}, o.role)))))),
    h('h2', {}, 'What each role may do'),
    h('ul', { id: 'role-rights' }, Object.entries(ROLE_MAY).map(([role, may]) => h('li', {}, h('strong', {}, role), ': ' + may))));
}
