// The answer to a write of the popup form refused with 412 (someone else saved a newer version):
// the operator's edits stay in the form; the newer stored version is shown beside them, field by
// field, with a way to re-apply them onto it.
import { h, flatten } from '../../lib.js';

// staleAlert: stored is the version the form started from (baseline: the form's reading of it),
// newer the version stored now, mine the form's reading now, kept whether it holds edits;
// reapply and reload reopen the form on newer, with and without the edits.
export function staleAlert({ what, stored, newer, baseline, mine, kept, reapply, reload }) {
  const a = flatten(baseline); const b = flatten(newer); const c = flatten(mine);
  const show = (x) => (x === undefined ? '(none)' : (x === '' ? '(empty)' : x));
  const formKeys = new Set(Object.keys(baseline)); // what the form edits; the server's own fields are not compared
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b), ...Object.keys(c)])]
    .filter((k) => formKeys.has(k.split(/[.[]/)[0]) && (a[k] !== b[k] || a[k] !== c[k]));
  const table = h('table', { class: 'compare diff' },
    h('caption', {}, `Your form beside revision ${newer.revision}, saved by someone else since you opened revision ${stored.revision}`),
    h('thead', {}, h('tr', {}, ['Field', `You started from (revision ${stored.revision})`, `Stored now (revision ${newer.revision})`, 'Your form']
      .map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, keys.map((k) => h('tr', { 'data-field': k }, h('th', { scope: 'row' }, k),
      h('td', {}, show(a[k])), h('td', { class: a[k] !== b[k] ? 'del' : '' }, show(b[k])), h('td', { class: a[k] !== c[k] ? 'ins' : '' }, show(c[k]))))));
  return h('div', { class: 'alert error', role: 'alert', id: 'stale' },
    h('p', {}, `${what} refused: this popup was changed by someone else since you opened it (now revision ${newer.revision}). Nothing was written.`),
    kept ? h('p', {}, 'Your edits are kept in the form. Compare them with the stored version, then re-apply them onto it (the fields you did not change take the newer values) and save again.') : null,
    kept ? table : null,
    h('div', { class: 'actions' },
      kept ? h('button', { type: 'button', id: 'reapply', onclick: reapply }, `Re-apply my edits onto revision ${newer.revision}`) : null,
      h('button', { type: 'button', class: kept ? 'secondary' : '', id: 'discard', onclick: reload }, kept ? `Discard my edits and load revision ${newer.revision}` : 'Reload the popup')));
}
