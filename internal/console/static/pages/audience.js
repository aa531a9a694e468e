// One audience (#/audiences/:id): its facts, the member upload with its progress and bad lines,
// a membership check, the member list, its name, its history and its deletion.
import { h, notAvailable, errorText, uid, fmtTime, fmtBytes } from '../lib.js';
import { getAudience, updateAudience, deleteAudience, audienceHistory, isMember, membersFile, uploadMembers } from '../api/audiences.js';
import { session, can, loadMe, nav, reroute } from '../state.js';
import { dropAudiences } from '../cache.js';
import { setKids, toast, screen, alertBox, roleNote, renderWho, confirmDialog, saveBlob } from '../ui.js';
import { field, fieldErrorsIn } from '../form.js';
import { fmtInt } from '../figures.js';
import { popupsById, popupLinks, liveUser, versionTag, audienceFields } from './audiences.js';

// UPLOAD_MODES: how an uploaded file changes the members (docs/CONTRACT.md, audiences).
const UPLOAD_MODES = [
  ['replace', 'Replace the whole list with the file'],
  ['add', 'Add the file’s ids'],
  ['remove', 'Remove the file’s ids'],
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

export async function audienceScreen(id) {
  const seq = nav.seq;
  const r = await getAudience(id);
  if (seq !== nav.seq) return;
  if (!r.ok) return screen('Audience #' + id, h('p', {}, h('a', { href: '#/audiences' }, '← Audiences')), alertBox(errorText(r), notAvailable(r) ? 'info' : 'error'));
  let a = r.body;
  let popups = await popupsById(a.used_by || []);
  if (seq !== nav.seq) return;

  const live = () => liveUser(a.used_by, popups);
  // the editor role changes an audience no live popup uses; the publisher role, any
  const mayChange = () => can('publish') || (can('edit_drafts') && !live());
  const why = () => (can('edit_drafts')
    ? `You are signed in as ${session.me.operator}, an ${session.me.role}: a live popup uses this audience, so changing it (its name, description and members) needs the publisher role.`
    : `You are signed in as ${session.me.operator}, a ${session.me.role}: this audience is shown read-only. Changing it needs the editor role (the publisher role while a live popup uses it); deleting it, the publisher role.`);

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
    dropAudiences();
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
    const w = await updateAudience(a.id, ed.read(), versionTag(a));
    if (w.status === 412) return setKids(edErrs, staleBox('Saving'));
    if (!w.ok) return fieldErrorsIn(edForm, edErrs, w, 'Not saved');
    took(w.body);
    toast(`Saved: “${a.name}”, version ${a.version}.`);
  });

  function staleBox(what) {
    const box = h('div', { class: 'alert error', role: 'alert', id: 'audience-stale', tabindex: '-1' },
      h('p', {}, `${what} refused: this audience was changed by someone else since you opened it (you had version ${a.version}). Nothing was changed.`),
      h('button', { type: 'button', id: 'audience-reload', onclick: () => reroute() }, 'Reload the audience'));
    queueMicrotask(() => box.focus());
    return box;
  }

  // upload
  const fileIn = h('input', { type: 'file', name: 'members', accept: '.txt,.csv,text/plain,text/csv', 'aria-describedby': 'upload-file-help' });
  const modeName = uid('mode');
  const modes = h('fieldset', { id: 'upload-mode' }, h('legend', {}, 'What the file does'),
    UPLOAD_MODES.map(([v, label], i) => h('label', { class: 'check block' }, h('input', { type: 'radio', name: modeName, value: v, checked: i === 0, id: 'upload-mode-' + v }), ' ' + label)));
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
    const [, label] = UPLOAD_MODES.find(([v]) => v === mode);
    if (mode === 'replace' && a.size > 0 && !await confirmDialog('Replace every member?', `The ${fmtInt(a.size)} members of “${a.name}” are replaced by the ids of ${file.name}.`, 'Replace')) return;
    const csv = /\.csv$/i.test(file.name) || file.type === 'text/csv';
    uploadBtn.disabled = true;
    progressRow.hidden = false;
    progress.max = Math.max(1, file.size); progress.value = 0;
    progressText.textContent = `Sending ${file.name} (${fmtBytes(file.size)})…`;
    let lastSaid = 0;
    const column = csv && !columnRow.hidden ? columnIn.value : null;
    const w = await uploadMembers(a.id, mode, file, column, {
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
    const c = await isMember(a.id, u);
    if (!c.ok) return setKids(checkOut, alertBox('Check: ' + errorText(c)));
    setKids(checkOut, h('p', { id: 'check-result', class: c.body.member ? 'member yes' : 'member no' },
      h('strong', {}, u), c.body.member ? ' is a member' : ' is not a member', ` of “${a.name}” at version ${c.body.version}.`));
  });

  // download
  const dlOut = h('span', { id: 'download-out', class: 'muted', 'aria-live': 'polite' });
  async function downloadMembers() {
    dlOut.textContent = 'Downloading…';
    const d = await membersFile(a.id);
    if (!d.ok) { dlOut.textContent = 'Download: ' + errorText(d); return; }
    const name = d.filename || `audience-${a.id}-v${a.version}.txt`;
    saveBlob(d.blob, name);
    dlOut.textContent = `Downloaded ${name} (${fmtBytes(d.blob.size)}).`;
  }

  // delete
  const delOut = h('div', { id: 'delete-out', tabindex: '-1' });
  async function remove() {
    if (!await confirmDialog(`Delete audience “${a.name}”?`, `Its ${fmtInt(a.size)} members and its history are deleted. A popup that still names it cannot be saved until it no longer does.`, 'Delete')) return;
    const w = await deleteAudience(a.id);
    if (w.ok) {
      dropAudiences();
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
    const hr = await audienceHistory(a.id);
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
