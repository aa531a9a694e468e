// Import / export (#/import): every popup as one JSON file, and that file checked then applied.
import { h, notAvailable, errorText, isoDay } from '../lib.js';
import { exportPopups, importPopups } from '../api/transfer.js';
import { session, can } from '../state.js';
import { dropListStats } from '../cache.js';
import { setKids, screen, alertBox, roleNote, confirmDialog } from '../ui.js';
import { field } from '../form.js';

export function importScreen() {
  const out = h('div', { id: 'import-out', 'aria-live': 'polite' });
  const exportOut = h('div', { id: 'export-out', 'aria-live': 'polite' });
  const fileIn = h('input', { type: 'file', accept: 'application/json,.json' });
  const text = h('textarea', { rows: 10, class: 'mono', spellcheck: 'false', name: 'import' });
  const applyBtn = h('button', { type: 'button', id: 'import-apply', disabled: true, onclick: () => run(false) }, 'Apply import');
  // a dry run needs the editor role, applying the publisher role: what the role may not use is not offered
  const mayCheck = can('edit_drafts');
  const mayApply = can('publish');
  fileIn.addEventListener('change', async () => { if (fileIn.files[0]) { text.value = await fileIn.files[0].text(); applyBtn.disabled = true; } });
  text.addEventListener('input', () => { applyBtn.disabled = true; });

  async function exportAll() {
    const r = await exportPopups();
    if (!r.ok) return setKids(exportOut, alertBox('Export: ' + errorText(r), notAvailable(r) ? 'info' : 'error'));
    const blob = new Blob([JSON.stringify(r.body, null, 2)], { type: 'application/json' });
    const a = h('a', { href: URL.createObjectURL(blob), download: `popups-${isoDay(new Date())}.json` }, 'Download the export');
    setKids(exportOut, h('p', {}, `${(r.body.popups || []).length} popup(s) exported. `, a));
    a.focus();
  }

  async function run(dryRun) {
    let body;
    try { body = JSON.parse(text.value); } catch { return setKids(out, alertBox('The import is not valid JSON.')); }
    if (!dryRun && !await confirmDialog('Apply the import?', 'Every popup in the file is created or updated in one step.', 'Apply import')) return;
    const r = await importPopups(body, dryRun);
    if (!r.ok) {
      applyBtn.disabled = true;
      const fields = r.body?.error?.fields || [];
      return setKids(out, alertBox(h('div', {}, h('p', {}, 'Import: ' + errorText(r)), fields.length ? h('ul', {}, fields.map((f) => h('li', {}, `${f.field}: ${f.message}`))) : null), notAvailable(r) ? 'info' : 'error'));
    }
    const b = r.body;
    setKids(out, alertBox(`${b.dry_run ? 'Dry run: would create' : 'Imported: created'} ${b.created}, ${b.dry_run ? 'update' : 'updated'} ${b.updated}, ${b.unchanged} unchanged.`, 'info'));
    applyBtn.disabled = !b.dry_run;
    if (!b.dry_run) { applyBtn.disabled = true; dropListStats(); }
  }

  screen('Import / export',
    h('section', { 'aria-labelledby': 'export-h' }, h('h2', { id: 'export-h' }, 'Export'),
      h('p', {}, 'Every popup, in the shape the import takes.'),
      h('button', { type: 'button', id: 'export', onclick: exportAll }, 'Export all popups'), exportOut),
    h('section', { 'aria-labelledby': 'import-h' }, h('h2', { id: 'import-h' }, 'Import'),
      mayCheck ? [
        h('p', {}, 'Popups are matched by name. Check first: the dry run changes nothing.'),
        mayApply ? null : roleNote(`You are signed in as ${session.me.operator}, an ${session.me.role}: you can check an import; applying it needs the publisher role.`),
        field('i-file', 'Export file', fileIn),
        field('i-text', 'Or paste the JSON', text),
        h('div', { class: 'actions' }, h('button', { type: 'button', id: 'import-dry', onclick: () => run(true) }, 'Check (dry run)'), mayApply ? applyBtn : null),
        out,
      ] : roleNote(`You are signed in as ${session.me.operator}, a ${session.me.role}: importing needs the publisher role (checking an import, the editor role).`)));
}
