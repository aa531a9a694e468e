// A popup's History section: its revisions with their diffs, and the rollback to one.
import { h, notAvailable, errorText, diff, diffTable } from '../../lib.js';
import { popupHistory, rollbackPopup } from '../../api/popups.js';
import { reroute } from '../../state.js';
import { teamZone } from '../../cache.js';
import { setKids, toast, alertBox, confirmDialog, confirmLeave } from '../../ui.js';
import { teamTime, readable } from '../../figures.js';
import { shippedWarning } from './review.js';

// historySection lists the revisions with their diffs; a rollback carries the ETag the page was
// based on (ed.etag), so a rollback from a page someone else has changed since is refused (412).
export function historySection(current, ed) {
  const box = h('div', { id: 'history' }, h('p', { class: 'muted' }, 'Loading…'));
  Promise.all([popupHistory(current.id), teamZone()]).then(([r, zone]) => {
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
    const r = await rollbackPopup(current.id, n, ed.etag(), !!shipped);
    if (!r.ok) {
      for (const old of box.querySelectorAll(':scope > .alert')) old.remove();
      const msg = r.status === 412
        ? `Rollback to revision ${n} refused: this popup was changed by someone else since you opened revision ${current.revision}. Nothing was written. Reload the popup to see the newer version before rolling back.`
        : `Rollback to revision ${n} failed: ` + errorText(r);
      const alert = alertBox(h('div', {}, h('p', {}, msg), r.status === 412 ? h('button', { type: 'button', onclick: async () => { if (!ed.dirty() || await confirmLeave()) reroute(); } }, 'Reload the popup') : null));
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
