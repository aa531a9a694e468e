// The popup editor (#/popups/new, #/popups/:id): it loads the popup, puts together the form from
// its sections (each a module beside this one: basics, schedule, targeting, rules, content,
// translations, experiment), reads it back in the admin wire shape, and saves it, with the review
// before a publish and the answer to a stale write; below the form, the draft tried on a user, the
// results and the history.
import { h, errorText, fmtTime, newBucketSeed, diff, diffTable, merge3, zoneName, armsChanged, isLive, campaignState, stateWords, servesWhen } from '../../lib.js';
import { getPopup, createPopup, updatePopup, archivePopup } from '../../api/popups.js';
import { experimentResults, reassignment } from '../../api/experiments.js';
import { listGoals } from '../../api/goals.js';
import { session, can, nav, editor, reroute } from '../../state.js';
import { loadAudiences, dropListStats } from '../../cache.js';
import { setKids, toast, screen, alertBox, roleNote, confirmDialog } from '../../ui.js';
import { field } from '../../form.js';
import { readable } from '../../figures.js';
import { draftExplainSection } from '../explain.js';
import { basicsSection } from './basics.js';
import { scheduleSection } from './schedule.js';
import { targetingSection } from './targeting.js';
import { whereSection } from './where.js';
import { rulesSection } from './rules.js';
import { contentEditor } from './content.js';
import { translationsEditor, translationTable } from './translations.js';
import { experimentEditor, experimentHead } from './experiment.js';
import { formErrors } from './errors.js';
import { staleAlert } from './stale.js';
import { renderPreview, actionBar } from './preview.js';
import { resultsSection } from './results.js';
import { historySection } from './history.js';
import { phaseChoice, TRANSITIONS, experimentTransition, shippedWarning } from './review.js';
import { competitionWarning } from './competition.js';

// DEFAULTS is a new popup's form: the API's defaults (docs/CONTRACT.md §2), so that the pre-fill,
// an emptied field (omitted: the API's default) and the docs agree. An empty close cooldown is
// the reshow interval. The priority is the exception: the API's 0 loses to every popup that has
// one, so the form starts a new popup in the middle of the usual 0-100, and the publish review
// says which live popups would still win over it.
export const NEW_PRIORITY = 50;
const DEFAULTS = {
  name: '', status: 'draft', priority: NEW_PRIORITY, start_at: null, end_at: null,
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
  if (seq !== nav.seq) return;

  // seed: the popup's bucketing seed (docs/CONTRACT.md §2). A new draft (a duplicate too) draws
  // its own when the form opens and sends it with every preview and with the create, so a
  // preview buckets users as the saved popup will; a stored popup's is sent back unchanged.
  const seed = current ? current.bucket_seed : newBucketSeed();
  const errSummary = h('div', { id: 'form-errors', tabindex: '-1' });
  const previewBox = h('div', { class: 'preview', id: 'preview' });

  // mayEdit: the role may save this popup (a draft or a new one: editor; any other: publisher).
  // Otherwise the form is a read-only view. Without publish, the status stays what it is.
  const mayEdit = !current || current.status === 'draft' ? can('edit_drafts') : can('publish');
  const statuses = can('publish') ? ['draft', 'active', 'paused', 'archived'] : [mayEdit ? 'draft' : current.status];
  // the form's sections, in the order they show; each loads its part of a popup and reads it back
  const basics = basicsSection(statuses);
  const schedule = scheduleSection();
  const targeting = targetingSection({ audiences: audienceList, seed, isNew: !current });
  const where = whereSection();
  const rules = rulesSection();
  const content = contentEditor({ own: true, onChange: () => update() });
  const translations = translationsEditor({ ownContent: () => content.read([]), onChange: () => update() });
  const head = experimentHead({ stored: current, mayEdit, onTransition: (kind) => transition(kind) });
  const exp = experimentEditor({ stored: current?.experiment || null, goals: goalsR, head, ownContent: () => content.read([]), onChange: () => update() });

  // transition starts, stops or concludes the stored experiment, based on the version on show
  // (If-Match); the form's unsaved edits stay, re-applied onto the version it stores.
  async function transition(kind) {
    const r = await experimentTransition(kind, current, etag);
    if (!r) return;
    if (r.status === 412) return stale(TRANSITIONS[kind].doing);
    if (!r.ok) return errors.show(r);
    toast(TRANSITIONS[kind].done(r.body));
    editScreen(current.id, { stored: r.body, etag: r.etag, edits: body(), base: baseline });
  }

  // load puts a popup (stored, or in the form's own shape) into the form.
  function load(src) {
    const p = structuredClone(src);
    basics.load(p);
    schedule.load(p);
    rules.load(p);
    content.load(p);
    translations.load(p.translations);
    exp.load(p.experiment ?? null);
    targeting.load({ ...DEFAULTS.targeting, ...(p.targeting || {}) });
    where.load(p.targeting);
  }

  // read turns the form into the admin wire shape ({body}) and lists what the page itself can tell
  // is wrong ({problems}: a duration that is no number, a time that does not exist here, ext).
  function read() {
    const problems = [];
    const own = content.read(problems);
    const shown = rules.read(problems);
    const when = schedule.read(problems);
    const aim = targeting.read();
    const body = {
      ...basics.read(),
      ...when,
      targeting: aim.targeting,
      ...shown.seconds, max_impressions: shown.max_impressions,
      ...own,
    };
    // sent once the popup has any or the stored one had the field, so that a popup without them
    // saves on a server that does not know them
    const tr = translations.read();
    if (Object.keys(tr).length || current?.translations) body.translations = tr;
    if (shown.exempt_from_caps || current?.exempt_from_caps !== undefined) body.exempt_from_caps = shown.exempt_from_caps;
    if (shown.holdout_exempt || current?.holdout_exempt !== undefined) body.holdout_exempt = shown.holdout_exempt;
    if (seed) body.bucket_seed = seed;
    // targeting.audiences: sent once the popup names any audience or the stored one had the
    // field, so that a popup without audiences saves on a server that does not know them
    const aud = aim.audiences;
    if (aud.include.length || aud.exclude.length || current?.targeting?.audiences) body.targeting.audiences = aud;
    // placements, trigger and rules: likewise sent once set, or when the stored popup has them
    const w = where.read();
    if (w.placements.join() !== 'home' || current?.targeting?.placements) body.targeting.placements = w.placements;
    if (w.trigger || current?.targeting?.trigger !== undefined) body.targeting.trigger = w.trigger;
    if (w.rules.length || current?.targeting?.rules) body.targeting.rules = w.rules;
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
    schedule.refresh(b);
    const publishing = isLive(b.status) || (current && isLive(current.status));
    saveBtn.textContent = publishing ? 'Review and publish…' : (current ? 'Save draft' : 'Create draft');
  }

  const live = current && isLive(current.status);
  // Enter in a field never saves: the form has no submit button, and a submit does nothing.
  const form = h('form', { id: 'popup-form', novalidate: true, 'data-id': current?.id ?? 'new', 'data-revision': current?.revision ?? 0 },
    errSummary,
    basics.el,
    schedule.el,
    targeting.el,
    where.el,
    rules.el,
    h('fieldset', {}, h('legend', {}, 'Content'), content.el),
    translations.el,
    current ? translationTable({ stored: current, etag, mayEdit, stale, reopen: (next) => editScreen(current.id, next) }) : null,
    exp.el,
    actionBar(
      [mayEdit ? saveBtn : null,
        current?.status === 'draft' && can('publish') ? h('button', { type: 'button', class: 'secondary', id: 'publish', onclick: () => { basics.status.value = 'active'; update(); save(); } }, 'Publish…') : null],
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
  const errors = formErrors(form, errSummary);

  // stale: a write refused with 412. The operator's edits stay in the form; the newer stored
  // version is shown beside them, field by field, with a way to re-apply them onto it.
  async function stale(what) {
    errors.clear();
    const mine = body();
    const r = await getPopup(current.id);
    if (!r.ok) return setKids(errSummary, alertBox(`${what} refused: this popup was changed by someone else since you opened it, and it cannot be read now: ${errorText(r)}`));
    const kept = dirty();
    setKids(errSummary, staleAlert({ what, stored: current, newer: r.body, baseline, mine, kept,
      reapply: () => editScreen(current.id, { stored: r.body, etag: r.etag, edits: mine, base: baseline }),
      reload: () => editScreen(current.id, { stored: r.body, etag: r.etag }) }));
    errSummary.focus();
  }

  async function save() {
    const { body: b, problems } = read();
    if (problems.length) return errors.show(null, problems);
    if (current && !dirty()) { toast(`Nothing to save: the form is revision ${current.revision} as stored.`); return; }
    // an edit of the arms of an experiment that has run starts a new phase: the review says so
    // and offers to keep the assignment instead
    const se = current?.experiment;
    const newPhase = !!(se && b.experiment && se.phase_started_at && (se.status === 'running' || se.status === 'stopped') && armsChanged(baseline.experiment, b.experiment));
    const publishing = isLive(b.status) || (current && isLive(current.status));
    const shipped = current ? shippedWarning(current, b) : null;
    let keep = false;
    if (publishing || newPhase || shipped) {
      const rows = readable(diff(current ? baseline : null, b), zoneName);
      const choice = newPhase ? phaseChoice(se, ...await Promise.all([
        experimentResults(current.id),
        reassignment(current.id, b)])) : null;
      const title = shipped ? 'End the shipped experiment and save?' : (!publishing ? 'Save and start a new experiment phase?' : (!current ? 'Publish this new popup?' : (isLive(current.status) ? 'Publish these changes?' : 'Publish this draft?')));
      const when = servesWhen(b);
      const text = !publishing ? `What changes against the stored revision ${current.revision}:`
        : (current ? `${when} What changes against the stored revision ${current.revision}:` : `${when} What it holds:`);
      // a popup that will be served: would a live popup of higher priority win over it?
      const losing = b.status === 'active' && campaignState(b) !== 'ended' ? await competitionWarning(b, current?.id) : null;
      const review = h('div', {}, shipped, losing, choice?.el, diffTable(rows, publishing ? 'What publishing changes' : 'What saving changes'));
      if (!await confirmDialog(title, text, publishing ? 'Publish' : 'Save', review)) return;
      keep = !!choice?.keep();
    }
    const r = current
      ? await updatePopup(current.id, b, etag, { accept_reassignment: keep, end_experiment: !!shipped })
      : await createPopup(b);
    if (r.status === 412) return stale('Saving');
    if (!r.ok) return errors.show(r);
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
    if (!r.ok) return errors.show(r);
    toast(next === 'paused' ? 'Paused.' : 'Resumed.');
    editScreen(current.id, { stored: r.body, etag: r.etag, edits: body(), base: baseline });
  }

  async function archive() {
    if (!await confirmDialog('Archive this popup?', `“${current.name}” stops being served at once. Its history is kept.${dirty() ? ' Your unsaved edits are dropped.' : ''}`, 'Archive')) return;
    const r = await archivePopup(current.id, etag);
    if (r.status === 412) return stale('Archiving');
    if (!r.ok) return errors.show(r);
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
    current ? h('p', { class: 'muted', id: 'popup-meta' }, `Revision ${current.revision}, updated ${fmtTime(current.updated_at)} (times in ${zoneName}). This popup is `,
      h('span', { class: 'badge ' + stateWords(current)[0], id: 'popup-state' }, stateWords(current)[0]), stateWords(current)[1] ? `: ${stateWords(current)[1]}.` : '.',
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

