// The popup editor (#/popups/new, #/popups/:id): the form, its live preview, the review before a
// publish, the answers to a stale write, and the sections below it (try the draft, results,
// history).
import {
  h, uid, errorText, utcToLocalInput, localInputToUTC, fmtTime, newBucketSeed, diff, diffTable, splitLines, lineOf, merge3, flatten,
  zoneName, nonexistentLocal, armsChanged, isLive,
} from '../../lib.js';
import { getPopup, createPopup, updatePopup, archivePopup, translationsCSV, putTranslationsCSV } from '../../api/popups.js';
import { experimentResults, reassignment } from '../../api/experiments.js';
import { listGoals } from '../../api/goals.js';
import { session, can, loadMe, nav, editor, reroute } from '../../state.js';
import { loadAudiences, dropListStats } from '../../cache.js';
import { setKids, toast, screen, alertBox, roleNote, renderWho, confirmDialog, saveBlob } from '../../ui.js';
import { field, textInput, numInput, listInput, durationField } from '../../form.js';
import { draftExplainSection } from '../explain.js';
import { contentEditor } from './content.js';
import { translationsEditor } from './translations.js';
import { experimentEditor } from './experiment.js';
import { audiencePicker } from './targeting.js';
import { renderPreview } from './preview.js';
import { resultsSection } from './results.js';
import { historySection } from './history.js';
import { phaseChoice, TRANSITIONS, experimentTransition, shippedWarning } from './review.js';

// DEFAULTS is a new popup's form: the API's defaults (docs/CONTRACT.md §2), so that the pre-fill,
// an emptied field (omitted: the API's default) and the docs agree. An empty close cooldown is
// the reshow interval.
const DEFAULTS = {
  name: '', status: 'draft', priority: 0, start_at: null, end_at: null,
  targeting: { platforms: [], min_app_version: '', max_app_version: '', regions: [], langs: [], rollout_percent: 100, uids: [] },
  reshow_after_seconds: 86400, click_cooldown_seconds: 0, close_cooldown_seconds: null, max_impressions: 0,
  title: '', content: '', image_url: '', image_alt: '', link_url: '', buttons: [], ext: {},
};

// editScreen shows a popup's form (id null: a new one). carry, when given, holds the stored
// version already in hand ({stored, etag}, after Pause or a stale save) and the operator's unsaved
// edits with the reading of the version they started from ({edits, base}), re-applied onto it.
export async function editScreen(id, carry) {
  let current = null; // the stored popup, for an edit
  let etag = null;
  const seq = nav.seq;
  if (!id && !can('edit_drafts')) {
    return screen('New popup', roleNote(`You are signed in as ${session.me.operator}, a ${session.me.role}: creating popups needs the editor role (drafts) or the publisher role (live popups).`));
  }
  if (id && carry?.stored) {
    current = carry.stored; etag = carry.etag;
  } else if (id) {
    const r = await getPopup(id);
    if (seq !== nav.seq) return;
    if (!r.ok) return screen('Popup #' + id, alertBox(errorText(r)));
    current = r.body; etag = r.etag;
  }
  const [audienceList, goalsR] = await Promise.all([loadAudiences(), listGoals()]);
  const audiences = audiencePicker(audienceList);
  if (seq !== nav.seq) return;

  // seed: the popup's bucketing seed (docs/CONTRACT.md §2). A new draft (a duplicate too) draws
  // its own when the form opens and sends it with every preview and with the create, so a
  // preview buckets users as the saved popup will; a stored popup's is sent back unchanged.
  const seed = current ? current.bucket_seed : newBucketSeed();
  const seedIn = h('input', { type: 'text', name: 'bucket_seed', 'data-field': 'bucket_seed', readonly: true, class: 'mono', value: seed ?? '' });
  const errSummary = h('div', { id: 'form-errors', tabindex: '-1' });
  const previewBox = h('div', { class: 'preview', id: 'preview' });

  // mayEdit: the role may save this popup (a draft or a new one: editor; any other: publisher).
  // Otherwise the form is a read-only view. Without publish, the status stays what it is.
  const mayEdit = !current || current.status === 'draft' ? can('edit_drafts') : can('publish');
  const statuses = can('publish') ? ['draft', 'active', 'paused', 'archived'] : [mayEdit ? 'draft' : current.status];
  const f = {
    name: textInput('name', { required: true, autocomplete: 'off' }),
    status: h('select', { name: 'status', 'data-field': 'status' }, statuses.map((s) => h('option', { value: s }, s))),
    priority: numInput('priority'),
    start_at: h('input', { type: 'datetime-local', name: 'start_at', 'data-field': 'start_at' }),
    end_at: h('input', { type: 'datetime-local', name: 'end_at', 'data-field': 'end_at' }),
    min_app_version: textInput('min_app_version', { 'data-field': 'targeting.min_app_version', placeholder: 'e.g. 8.10.0' }),
    max_app_version: textInput('max_app_version', { 'data-field': 'targeting.max_app_version' }),
    regions: listInput('regions', 'targeting.regions'),
    langs: listInput('langs', 'targeting.langs'),
    rollout_percent: numInput('rollout_percent', { 'data-field': 'targeting.rollout_percent' }),
    uids: listInput('uids', 'targeting.uids'),
    max_impressions: numInput('max_impressions'),
  };
  const content = contentEditor({ own: true, onChange: () => update() });
  const translations = translationsEditor({ ownContent: () => content.read([]), onChange: () => update() });
  const exempt = h('input', { type: 'checkbox', id: 'f-exempt', name: 'exempt_from_caps', 'data-field': 'exempt_from_caps', 'aria-describedby': 'f-exempt-help' });
  const holdoutExempt = h('input', { type: 'checkbox', id: 'f-holdout-exempt', name: 'holdout_exempt', 'data-field': 'holdout_exempt', 'aria-describedby': 'f-holdout-exempt-help' });
  const exp = experimentEditor({ stored: current?.experiment || null, goals: goalsR, head: experimentHead(), ownContent: () => content.read([]), onChange: () => update() });
  const dur = {
    reshow: durationField('f-reshow', 'reshow_after_seconds', 'Show again after', 'After an impression, hidden from that user this long. Empty: 1 day.', false),
    click: durationField('f-click', 'click_cooldown_seconds', 'After a click, hide for', 'Empty: 0, shown again at the next reshow.', true),
    close: durationField('f-close', 'close_cooldown_seconds', 'After a close, hide for', 'Empty: the same as “Show again after”.', true),
  };
  const platformBoxes = ['ios', 'android', 'web'].map((pl) => {
    const cid = 'platform-' + pl;
    return h('label', { class: 'check', for: cid }, h('input', { type: 'checkbox', id: cid, name: 'platforms', value: pl }), ' ' + pl);
  });
  const platformSet = h('fieldset', { 'data-field': 'targeting.platforms', id: 'platforms', 'aria-describedby': 'platforms-help' },
    h('legend', {}, 'Platforms'), platformBoxes, h('p', { class: 'help', id: 'platforms-help' }, 'None checked: every platform.'));

  // experimentHead: the stored experiment's status and phase, its results, and the transitions the
  // role may use (as a PUT of this popup would need: docs/CONTRACT.md §10).
  function experimentHead() {
    const e = current?.experiment;
    if (!e) return null;
    const st = e.status;
    const btn = (kind, label, cls = 'secondary') => h('button', { type: 'button', class: cls, id: 'experiment-' + kind, onclick: () => transition(kind) }, label);
    return h('div', { class: 'experiment-head' },
      h('p', { id: 'experiment-status' }, 'Status: ', h('span', { class: 'badge ' + st }, st),
        ` · phase ${e.phase}`, e.phase_started_at ? `, first run ${fmtTime(e.phase_started_at)}` : ', not run yet',
        e.concluded_variant ? ` · variant “${e.concluded_variant}” shipped: the experiment is read-only` : ''),
      h('p', {}, h('a', { href: `#/popups/${current.id}/experiment`, id: 'experiment-results-link' }, 'Experiment results'),
        st === 'draft' ? h('span', { class: 'muted' }, ' (none until it runs)') : null),
      mayEdit && st !== 'concluded' ? h('div', { class: 'actions' },
        st === 'draft' || st === 'stopped' ? btn('start', st === 'stopped' ? 'Start again…' : 'Start the experiment…', '') : null,
        st === 'running' ? btn('stop', 'Stop the experiment…') : null,
        // the API concludes a running or stopped experiment only: a draft has no results to act on
        st === 'running' || st === 'stopped' ? btn('conclude', 'Conclude…') : null) : null);
  }

  // transition starts, stops or concludes the stored experiment, based on the version on show
  // (If-Match); the form's unsaved edits stay, re-applied onto the version it stores.
  async function transition(kind) {
    const r = await experimentTransition(kind, current, etag);
    if (!r) return;
    if (r.status === 412) return stale(TRANSITIONS[kind].doing);
    if (!r.ok) return showErrors(r);
    toast(TRANSITIONS[kind].done(r.body));
    editScreen(current.id, { stored: r.body, etag: r.etag, edits: body(), base: baseline });
  }

  // translationTable: the stored popup's strings as a CSV table for translators, and the table
  // brought back (PUT, If-Match the version on show); the form then shows the version it stored.
  function translationTable() {
    const out = h('div', { id: 'translations-csv-out', 'aria-live': 'polite' });
    const file = h('input', { type: 'file', id: 'translations-file', name: 'translations-file', accept: '.csv,text/csv' });
    async function get() {
      const r = await translationsCSV(current.id);
      if (!r.ok) return setKids(out, alertBox('Translations CSV: ' + errorText(r)));
      const name = r.filename || `popup-${current.id}-translations.csv`;
      saveBlob(r.blob, name);
      setKids(out, alertBox(`Downloaded ${name}: one row per string, one column per language.`, 'info'));
    }
    async function put() {
      const f0 = file.files[0];
      if (!f0) return file.focus();
      const r = await putTranslationsCSV(current.id, f0, etag);
      if (r.status === 412) return stale('Uploading the translations');
      if (!r.ok) {
        const fes = r.body?.error?.fields || [];
        return setKids(out, h('div', { class: 'alert error', role: 'alert', id: 'translations-csv-errors' },
          // the server's message already says the table was not applied: one sentence, each cell once below
          h('p', {}, fes.length ? 'The table was not applied; nothing changed. Fix these cells and upload it again:' : 'The table was not applied: ' + errorText(r)),
          fes.length ? h('ul', {}, fes.map((fe) => h('li', {}, `${fe.field}: ${fe.message}`))) : null));
      }
      toast(r.etag === etag ? 'The table changes nothing: nothing written.' : 'Translations uploaded.');
      editScreen(current.id, { stored: r.body, etag: r.etag });
    }
    return h('section', { class: 'card', id: 'translations-table', 'aria-labelledby': 'translations-table-h' },
      h('h3', { id: 'translations-table-h' }, 'Translation table (CSV)'),
      h('p', { class: 'help' }, 'For translators: every string of the saved popup and its variants, one column per language. Upload it back whole: a problem names its row and column and nothing is applied.'),
      h('p', {}, h('button', { type: 'button', class: 'secondary', id: 'translations-download', onclick: get }, 'Download CSV')),
      mayEdit ? h('div', { class: 'row' }, field('translations-file', 'Upload a table', file),
        h('p', {}, h('button', { type: 'button', class: 'secondary', id: 'translations-upload', onclick: put }, 'Upload CSV'))) : null,
      out);
  }

  // load puts a popup (stored, or in the form's own shape) into the form.
  function load(src) {
    const p = structuredClone(src);
    const t = { ...DEFAULTS.targeting, ...(p.targeting || {}) };
    f.name.value = p.name ?? ''; f.status.value = p.status || 'draft'; f.priority.value = p.priority ?? '';
    f.start_at.value = utcToLocalInput(p.start_at); f.end_at.value = utcToLocalInput(p.end_at);
    f.min_app_version.value = t.min_app_version || ''; f.max_app_version.value = t.max_app_version || '';
    f.regions.value = (t.regions || []).join('\n'); f.langs.value = (t.langs || []).join('\n');
    f.rollout_percent.value = t.rollout_percent ?? ''; f.uids.value = (t.uids || []).join('\n');
    dur.reshow.set(p.reshow_after_seconds); dur.click.set(p.click_cooldown_seconds); dur.close.set(p.close_cooldown_seconds);
    f.max_impressions.value = p.max_impressions ?? '';
    content.load(p);
    translations.load(p.translations);
    exempt.checked = !!p.exempt_from_caps;
    holdoutExempt.checked = !!p.holdout_exempt;
    exp.load(p.experiment ?? null);
    for (const l of platformBoxes) { const c = l.querySelector('input'); c.checked = (t.platforms || []).includes(c.value); }
    audiences.load(t.audiences);
  }

  // read turns the form into the admin wire shape ({body}) and lists what the page itself can tell
  // is wrong ({problems}: a duration that is no number, a time that does not exist here, ext).
  function read() {
    const num = (el) => (el.value.trim() === '' ? undefined : Number(el.value));
    const problems = [];
    const own = content.read(problems);
    const seconds = {};
    for (const [k, name] of [['reshow', 'reshow_after_seconds'], ['click', 'click_cooldown_seconds'], ['close', 'close_cooldown_seconds']]) {
      const d = dur[k].read();
      if (d.error) problems.push({ field: name, message: d.error });
      seconds[name] = d.seconds;
    }
    for (const k of ['start_at', 'end_at']) {
      const v = f[k].value;
      const instead = nonexistentLocal(v);
      if (instead) {
        problems.push({ field: k, message: `${v.replace('T', ' ')} does not exist in ${zoneName}: the clocks jump forward that night (the browser would take ${instead.replace('T', ' ')}). Enter a time before or after the jump.` });
      }
    }
    const body = {
      name: f.name.value, status: f.status.value, priority: num(f.priority),
      start_at: localInputToUTC(f.start_at.value), end_at: localInputToUTC(f.end_at.value),
      targeting: {
        platforms: platformBoxes.map((l) => l.querySelector('input')).filter((c) => c.checked).map((c) => c.value),
        min_app_version: f.min_app_version.value.trim(), max_app_version: f.max_app_version.value.trim(),
        regions: splitLines(f.regions.value), langs: splitLines(f.langs.value),
        rollout_percent: num(f.rollout_percent), uids: splitLines(f.uids.value),
      },
      ...seconds, max_impressions: num(f.max_impressions),
      ...own,
    };
    // sent once the popup has any or the stored one had the field, so that a popup without them
    // saves on a server that does not know them
    const tr = translations.read();
    if (Object.keys(tr).length || current?.translations) body.translations = tr;
    if (exempt.checked || current?.exempt_from_caps !== undefined) body.exempt_from_caps = exempt.checked;
    if (holdoutExempt.checked || current?.holdout_exempt !== undefined) body.holdout_exempt = holdoutExempt.checked;
    if (seed) body.bucket_seed = seed;
    // targeting.audiences: sent once the popup names any audience or the stored one had the
    // field, so that a popup without audiences saves on a server that does not know them
    const aud = audiences.read();
    if (aud.include.length || aud.exclude.length || current?.targeting?.audiences) body.targeting.audiences = aud;
    // experiment: sent while the form holds one, and as null to remove the stored one; a popup
    // that never had one is sent without it
    const e = exp.read(problems);
    if (e || current?.experiment) body.experiment = e;
    return { body, problems };
  }
  const body = () => read().body;

  // baseline: the form's reading of the stored version (or of a new popup's defaults); the form
  // holds unsaved edits while it reads otherwise.
  load(current || DEFAULTS);
  const baseline = body();
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  if (carry?.edits) load(merge3(carry.base, carry.edits, baseline));
  else if (!current && editor.pendingDuplicate) load(editor.pendingDuplicate);
  editor.pendingDuplicate = null;
  const dirty = () => mayEdit && !same(body(), baseline);

  const utcNote = h('p', { class: 'help', id: 'window-utc', 'aria-live': 'polite' });
  const saveBtn = h('button', { type: 'button', id: 'save', onclick: () => save() });
  // previewArm: which content the preview shows, the popup's own or a variant's (by index)
  const previewArm = h('select', { id: 'preview-arm', name: 'preview-arm', onchange: () => update() });
  const previewArmField = field('preview-arm', 'Content shown', previewArm);
  function update() {
    const b = body();
    const vs = b.experiment?.variants || [];
    const want = ['own', ...vs.map((v, i) => `${i}:${v.key}`)];
    if ([...previewArm.options].map((o) => o.value).join('\n') !== want.join('\n')) {
      const cur = previewArm.selectedIndex;
      setKids(previewArm, want.map((v, i) => h('option', { value: v }, i === 0 ? 'The popup’s own content' : `Variant ${i}: ${vs[i - 1].key || '(no key)'}`)));
      previewArm.selectedIndex = cur > 0 && cur < want.length ? cur : 0;
    }
    previewArmField.hidden = vs.length === 0;
    const arm = vs[previewArm.selectedIndex - 1];
    const shown = translations.refresh(b);
    renderPreview(previewBox, arm ? { ...b, ...arm } : shown);
    exp.refresh(b.experiment);
    utcNote.textContent = `Stored as UTC: start ${b.start_at || 'open'}, end ${b.end_at || 'open'}.`;
    const publishing = isLive(b.status) || (current && isLive(current.status));
    saveBtn.textContent = publishing ? 'Review and publish…' : (current ? 'Save draft' : 'Create draft');
  }

  const live = current && isLive(current.status);
  // Enter in a field never saves: the form has no submit button, and a submit does nothing.
  const form = h('form', { id: 'popup-form', novalidate: true, 'data-id': current?.id ?? 'new', 'data-revision': current?.revision ?? 0 },
    errSummary,
    h('fieldset', {}, h('legend', {}, 'Basics'),
      field('f-name', 'Name', f.name, 'Unique among popups that are not archived.'),
      field('f-status', 'Status', f.status, 'Active or paused is live: saving it publishes, after a review of what changes.'),
      field('f-priority', 'Priority', f.priority, 'Higher wins; ties go to the lower id.')),
    h('fieldset', {}, h('legend', {}, 'Schedule'),
      field('f-start', `Start (${zoneName})`, f.start_at, `Empty: starts at once. In your browser's time zone, ${zoneName}.`),
      field('f-end', `End (${zoneName})`, f.end_at, 'Empty: never ends.'),
      utcNote),
    h('fieldset', {}, h('legend', {}, 'Targeting'),
      platformSet,
      field('f-minv', 'Minimum app version', f.min_app_version, 'Inclusive; empty: no minimum.'),
      field('f-maxv', 'Maximum app version', f.max_app_version, 'Inclusive; empty: no maximum.'),
      field('f-regions', 'Regions', f.regions, 'One per line, e.g. cn. Empty: every region.'),
      field('f-langs', 'Languages', f.langs, 'One per line, e.g. en. Empty: every language.'),
      field('f-rollout', 'Rollout percent', f.rollout_percent, '0 to 100 of users, stable per user.'),
      field('f-uids', 'Test uids', f.uids, 'One per line: these users get the popup whatever the rollout.'),
      audiences.el,
      h('details', { class: 'advanced' }, h('summary', {}, 'Advanced: bucketing seed'),
        field('f-seed', 'Bucketing seed', seedIn, current
          ? 'Which users fall in the rollout percent is decided by this seed, fixed when the popup was created; it never changes.'
          : 'Drawn for this new popup: “Try the draft” below buckets users with it, and the popup keeps it when saved, so the preview is what saving does.'))),
    h('fieldset', {}, h('legend', {}, 'Display rules'),
      dur.reshow.el, dur.click.el, dur.close.el,
      field('f-maximp', 'Maximum impressions per user', f.max_impressions, '0: unlimited.'),
      h('div', { class: 'field' }, h('label', { class: 'check', for: 'f-exempt' }, exempt, ' Exempt from the team’s pacing'),
        h('p', { class: 'help', id: 'f-exempt-help' }, 'Shown even within the minimum gap after another popup and past the daily cap (Settings): for service notices and outage messages.')),
      h('div', { class: 'field' }, h('label', { class: 'check', for: 'f-holdout-exempt' }, holdoutExempt, ' Exempt from the global holdout'),
        h('p', { class: 'help', id: 'f-holdout-exempt-help' }, 'Shown to the users the global holdout keeps from every other popup (Settings, Holdout): only for service notices, since what they see is not measured.'))),
    h('fieldset', {}, h('legend', {}, 'Content'), content.el),
    translations.el,
    current ? translationTable() : null,
    exp.el,
    actionBar(
      [mayEdit ? saveBtn : null,
        current?.status === 'draft' && can('publish') ? h('button', { type: 'button', class: 'secondary', id: 'publish', onclick: () => { f.status.value = 'active'; update(); save(); } }, 'Publish…') : null],
      [current && can('edit_drafts') ? h('button', { type: 'button', class: 'secondary', id: 'duplicate', onclick: duplicate }, 'Duplicate as draft') : null,
        live && can('publish') ? h('button', { type: 'button', class: 'secondary', id: 'pause', onclick: togglePause }, current.status === 'paused' ? 'Resume' : 'Pause') : null,
        current && current.status !== 'archived' && can('publish') ? h('button', { type: 'button', class: 'danger', id: 'archive', onclick: archive }, 'Archive') : null]));
  if (!mayEdit) {
    // a read-only view: every field shows its value and takes no input; the buttons that add or
    // remove a button of the popup go
    for (const el of form.querySelectorAll('input, textarea')) {
      if (el.type === 'checkbox') el.disabled = true; else el.readOnly = true;
    }
    for (const el of form.querySelectorAll('select')) el.disabled = true;
    for (const el of form.querySelectorAll('button')) if (!el.closest('.actions')) el.remove();
  }
  const readOnlyNote = mayEdit ? null : roleNote(can('edit_drafts')
    ? `This popup is ${current.status}: changing it needs the publisher role, so a publisher must make the change. You are signed in as ${session.me.operator}, an editor: to work on a copy, use Duplicate as draft.`
    : `You are signed in as ${session.me.operator}, a ${session.me.role}: this popup is shown read-only. Changing it needs the ${current.status === 'draft' ? 'editor' : 'publisher'} role.`);
  form.addEventListener('input', update);
  form.addEventListener('change', update);
  form.addEventListener('submit', (ev) => ev.preventDefault());

  function clearErrors() {
    setKids(errSummary, );
    for (const el of form.querySelectorAll('[aria-invalid]')) {
      el.removeAttribute('aria-invalid');
      el.setAttribute('aria-describedby', (el.getAttribute('aria-describedby') || '').split(' ').filter((x) => !x.endsWith('-err')).join(' '));
    }
    for (const el of form.querySelectorAll('.field-error')) el.remove();
  }

  // target is the element of an API field name, or of the nearest enclosing one
  // ("experiment.variants[1].buttons[0].text", then "…buttons[0]", "…buttons", "experiment.variants[1]", …)
  function target(fieldName) {
    const candidates = [fieldName];
    for (let c = fieldName, up; (up = c.replace(/(\.[^.[]*|\[\d+\])$/, '')) !== c;) candidates.push(c = up);
    for (const c of candidates) {
      const el = form.querySelector(`[data-field="${CSS.escape(c)}"]`);
      if (el) return el;
    }
    return null;
  }

  // entryMessage names the entry of a list field an error is about ("targeting.uids[1]": the
  // second entry, as the form read it, on its line).
  function entryMessage(fe, el) {
    const m = fe.field.match(/\[(\d+)\]$/);
    if (!m || el.tagName !== 'TEXTAREA') return fe.message;
    const e = lineOf(el.value, Number(m[1]));
    return e ? `“${e.text}” (line ${e.line}): ${fe.message}` : fe.message;
  }

  function showErrors(r, localFields) {
    clearErrors();
    const fields = localFields || r.body?.error?.fields || [];
    const items = [];
    let first = null;
    for (const fe of fields) {
      const el = target(fe.field);
      if (el) {
        const message = entryMessage(fe, el);
        const errId = (el.id || uid('fld')) + '-err';
        if (!el.id) el.id = errId.slice(0, -4);
        const existing = document.getElementById(errId);
        if (existing) existing.textContent += ' ' + message;
        else (el.tagName === 'FIELDSET' ? el : el.closest('.field') || el.parentElement).append(h('p', { class: 'field-error', id: errId }, message));
        el.setAttribute('aria-invalid', 'true');
        if (!(el.getAttribute('aria-describedby') || '').includes(errId)) el.setAttribute('aria-describedby', [el.getAttribute('aria-describedby'), errId].filter(Boolean).join(' '));
        first = first || el;
        items.push(h('li', {}, h('a', { href: '#' + el.id, onclick: (ev) => { ev.preventDefault(); (el.tagName === 'FIELDSET' ? el.querySelector('input') : el).focus(); } }, `${fe.field}: ${message}`)));
      } else items.push(h('li', {}, `${fe.field}: ${fe.message}`));
    }
    const text = localFields ? 'Fix the fields below: nothing was sent.'
      : errorText(r) + (r.status === 403 ? ' Nothing was written; your edits are kept in the form.' : '');
    if (r?.status === 403) loadMe().then(renderWho); // the role may have changed since sign-in
    setKids(errSummary, h('div', { class: 'alert error', role: 'alert' },
      h('p', {}, fields.length && !localFields && r.status === 400 ? 'The popup was not saved: ' + fields.length + ' field' + (fields.length > 1 ? 's need' : ' needs') + ' fixing.' : text),
      items.length ? h('ul', {}, items) : null));
    (first && first.tagName !== 'FIELDSET' ? first : errSummary).focus();
  }

  // stale: a write refused with 412. The operator's edits stay in the form; the newer stored
  // version is shown beside them, field by field, with a way to re-apply them onto it.
  async function stale(what) {
    clearErrors();
    const mine = body();
    const r = await getPopup(current.id);
    if (!r.ok) return setKids(errSummary, alertBox(`${what} refused: this popup was changed by someone else since you opened it, and it cannot be read now: ${errorText(r)}`));
    const newer = r.body;
    const kept = dirty();
    const a = flatten(baseline); const b = flatten(newer); const c = flatten(mine);
    const show = (x) => (x === undefined ? '(none)' : (x === '' ? '(empty)' : x));
    const formKeys = new Set(Object.keys(baseline)); // what the form edits; the server's own fields are not compared
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b), ...Object.keys(c)])]
      .filter((k) => formKeys.has(k.split(/[.[]/)[0]) && (a[k] !== b[k] || a[k] !== c[k]));
    const table = h('table', { class: 'compare diff' },
      h('caption', {}, `Your form beside revision ${newer.revision}, saved by someone else since you opened revision ${current.revision}`),
      h('thead', {}, h('tr', {}, ['Field', `You started from (revision ${current.revision})`, `Stored now (revision ${newer.revision})`, 'Your form']
        .map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', {}, keys.map((k) => h('tr', { 'data-field': k }, h('th', { scope: 'row' }, k),
        h('td', {}, show(a[k])), h('td', { class: a[k] !== b[k] ? 'del' : '' }, show(b[k])), h('td', { class: a[k] !== c[k] ? 'ins' : '' }, show(c[k]))))));
    const reload = () => editScreen(current.id, { stored: newer, etag: r.etag });
    setKids(errSummary, h('div', { class: 'alert error', role: 'alert', id: 'stale' },
      h('p', {}, `${what} refused: this popup was changed by someone else since you opened it (now revision ${newer.revision}). Nothing was written.`),
      kept ? h('p', {}, 'Your edits are kept in the form. Compare them with the stored version, then re-apply them onto it (the fields you did not change take the newer values) and save again.') : null,
      kept ? table : null,
      h('div', { class: 'actions' },
        kept ? h('button', { type: 'button', id: 'reapply', onclick: () => editScreen(current.id, { stored: newer, etag: r.etag, edits: mine, base: baseline }) }, `Re-apply my edits onto revision ${newer.revision}`) : null,
        h('button', { type: 'button', class: kept ? 'secondary' : '', id: 'discard', onclick: reload }, kept ? `Discard my edits and load revision ${newer.revision}` : 'Reload the popup'))));
    errSummary.focus();
  }

  async function save() {
    const { body: b, problems } = read();
    if (problems.length) return showErrors(null, problems);
    if (current && !dirty()) { toast(`Nothing to save: the form is revision ${current.revision} as stored.`); return; }
    // an edit of the arms of an experiment that has run starts a new phase: the review says so
    // and offers to keep the assignment instead
    const se = current?.experiment;
    const newPhase = !!(se && b.experiment && se.phase_started_at && (se.status === 'running' || se.status === 'stopped') && armsChanged(baseline.experiment, b.experiment));
    const publishing = isLive(b.status) || (current && isLive(current.status));
    const shipped = current ? shippedWarning(current, b) : null;
    let keep = false;
    if (publishing || newPhase || shipped) {
      const rows = diff(current ? baseline : null, b);
      const choice = newPhase ? phaseChoice(se, ...await Promise.all([
        experimentResults(current.id),
        reassignment(current.id, b)])) : null;
      const title = shipped ? 'End the shipped experiment and save?' : (!publishing ? 'Save and start a new experiment phase?' : (!current ? 'Publish this new popup?' : (isLive(current.status) ? 'Publish these changes?' : 'Publish this draft?')));
      const text = !publishing ? `What changes against the stored revision ${current.revision}:`
        : (current ? `Every instance serves it within 2 seconds. What changes against the stored revision ${current.revision}:` : 'Every instance serves it within 2 seconds. What it holds:');
      const review = h('div', {}, shipped, choice?.el, diffTable(rows, publishing ? 'What publishing changes' : 'What saving changes'));
      if (!await confirmDialog(title, text, publishing ? 'Publish' : 'Save', review)) return;
      keep = !!choice?.keep();
    }
    const r = current
      ? await updatePopup(current.id, b, etag, { accept_reassignment: keep, end_experiment: !!shipped })
      : await createPopup(b);
    if (r.status === 412) return stale('Saving');
    if (!r.ok) return showErrors(r);
    const phaseNote = newPhase ? (keep ? ' The experiment keeps its phase: users reassigned (audited).' : ` The experiment is in phase ${r.body.experiment?.phase ?? se.phase + 1} now.`) : '';
    toast((current ? `Saved revision ${r.body.revision}.` : `Created popup #${r.body.id}.`) + phaseNote);
    dropListStats();
    nav.leaveGuard = null;
    if (current) editScreen(current.id, { stored: r.body, etag: r.etag }); else location.hash = '#/popups/' + r.body.id;
  }

  function duplicate() {
    const b = body();
    // the copy draws a seed of its own when its form opens: never the original's
    editor.pendingDuplicate = { ...b, name: b.name + ' (copy)', status: 'draft', ext: b.ext ?? {}, bucket_seed: undefined };
    nav.leaveGuard = null; // the edits go into the copy
    if (location.hash === '#/popups/new') reroute(); else location.hash = '#/popups/new';
    toast('Duplicated into a new draft: not saved yet.');
  }

  // Pause and Resume write the stored version with the other status; the form's unsaved edits
  // stay, re-applied onto the version the pause stored.
  async function togglePause() {
    const next = current.status === 'paused' ? 'active' : 'paused';
    const r = await updatePopup(current.id, { ...current, status: next }, etag);
    if (r.status === 412) return stale(next === 'paused' ? 'Pausing' : 'Resuming');
    if (!r.ok) return showErrors(r);
    toast(next === 'paused' ? 'Paused.' : 'Resumed.');
    editScreen(current.id, { stored: r.body, etag: r.etag, edits: body(), base: baseline });
  }

  async function archive() {
    if (!await confirmDialog('Archive this popup?', `“${current.name}” stops being served at once. Its history is kept.${dirty() ? ' Your unsaved edits are dropped.' : ''}`, 'Archive')) return;
    const r = await archivePopup(current.id, etag);
    if (r.status === 412) return stale('Archiving');
    if (!r.ok) return showErrors(r);
    toast('Archived.');
    nav.leaveGuard = null;
    editScreen(current.id, { stored: r.body, etag: r.etag });
  }

  const sizeGroup = h('fieldset', { class: 'device-pick' }, h('legend', {}, 'Preview on'),
    ['phone', 'web'].map((s) => h('label', { class: 'check' },
      h('input', { type: 'radio', name: 'device', value: s, checked: s === 'phone', onchange: () => { previewBox.dataset.device = s; } }), ' ' + (s === 'phone' ? 'Phone' : 'Web'))));
  previewBox.dataset.device = 'phone';

  const title = current ? `${current.name} (#${current.id})` : 'New popup';
  screen(title,
    readOnlyNote,
    current ? h('p', { class: 'muted', id: 'popup-meta' }, `Revision ${current.revision}, updated ${fmtTime(current.updated_at)} (times in ${zoneName}). Status: `, h('span', { class: 'badge ' + current.status }, current.status),
      // the experiment's results one Tab from the heading, not past every field of the form
      current.experiment ? [' · Experiment ', h('span', { class: 'badge ' + current.experiment.status }, current.experiment.status), ': ',
        h('a', { href: `#/popups/${current.id}/experiment`, id: 'experiment-results-top' }, 'results and decision')] : null) : null,
    h('div', { class: 'editor' },
      h('section', { 'aria-labelledby': 'form-h' }, h('h2', { id: 'form-h' }, 'Settings'), form),
      h('aside', { 'aria-labelledby': 'preview-h', class: 'preview-pane', id: 'preview-pane' }, h('h2', { id: 'preview-h' }, 'Live preview'), sizeGroup, previewArmField, translations.previewField, previewBox)),
    draftExplainSection(() => (current ? { ...body(), id: current.id } : body())),
    current ? resultsSection(current) : null,
    current ? historySection(current, { etag: () => etag, dirty, mayRollback: can('publish'), reopen: (r) => { nav.leaveGuard = null; editScreen(current.id, { stored: r.body, etag: r.etag }); } }) : null);
  update();
  nav.leaveGuard = dirty;
}

// actionBar is the popup form's sticky bar: the main actions, then the others. On a phone (the
// .phone-only controls show below 700 px) the others fold behind "More…", destructive ones out of
// the thumb's way, and "Preview" floats the live preview above the bar, beside the fields.
function actionBar(main, others) {
  const more = h('div', { class: 'more-actions', id: 'more-actions' }, others);
  const toggle = (btn, el, cls) => { const on = el.classList.toggle(cls); btn.setAttribute('aria-expanded', String(on)); };
  const moreBtn = h('button', { type: 'button', class: 'secondary phone-only', id: 'more-toggle', 'aria-expanded': 'false', 'aria-controls': 'more-actions',
    onclick: () => toggle(moreBtn, more, 'open') }, 'More…');
  const previewBtn = h('button', { type: 'button', class: 'secondary phone-only', id: 'preview-toggle', 'aria-expanded': 'false', 'aria-controls': 'preview-pane',
    onclick: () => toggle(previewBtn, document.getElementById('preview-pane'), 'floating') }, 'Preview');
  return h('div', { class: 'actions sticky' }, main, previewBtn, others.some(Boolean) ? [moreBtn, more] : null);
}
