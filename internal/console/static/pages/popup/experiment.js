// The popup form's Experiment section: the stored experiment's head (status, results, transitions)
// and the editor of its coverage, variants, control, planned end and primary goal.
import { h, uid, errorText, utcToLocalInput, localInputToUTC, fmtTime, zoneName, nonexistentLocal, armWeights } from '../../lib.js';
import { setKids } from '../../ui.js';
import { field, numInput } from '../../form.js';
import { contentEditor } from './content.js';

// experimentEditor: the Experiment section of the popup form (docs/CONTRACT.md §10): add or remove
// an experiment, its coverage, variants (key, weight and the content fields of contentEditor), an
// optional control, the planned end, and a live check that the weights sum to 100. stored is the
// stored popup's experiment (null for none); head, what editScreen shows above the fields (status,
// transitions, results link); ownContent, the popup's own content, which a new experiment's
// variants start from; goals, the answer of GET /admin/v1/goals, which the primary goal is
// picked from. Every save sends primary_goal (null for clicks), so what the form shows is what is
// stored; a goal the list does not hold (deleted, or a list that cannot be read) stays on show,
// selected, so that saving never drops it unseen.
const MAX_VARIANTS = 8;

export function experimentEditor({ stored, goals, head, ownContent, onChange }) {
  let on = false;
  let variants = []; // {key, weight, content, rm}
  const concluded = stored?.status === 'concluded';
  const running = stored?.status === 'running';
  const coverage = numInput('coverage_percent', { 'data-field': 'experiment.coverage_percent', min: 0, max: 100 });
  const variantsBox = h('div', { id: 'variants', 'data-field': 'experiment.variants' });
  const controlOn = h('input', { type: 'checkbox', id: 'exp-control', name: 'control', 'data-field': 'experiment.control' });
  const controlWeight = numInput('control_weight', { 'data-field': 'experiment.control.weight', min: 1, max: 99 });
  const controlMode = h('select', { name: 'control_mode', 'data-field': 'experiment.control.mode' },
    h('option', { value: 'none' }, 'Nothing: no popup (none)'),
    h('option', { value: 'fall_through' }, 'The next popup they may see (fall_through)'));
  const plannedEnd = h('input', { type: 'datetime-local', name: 'planned_end_at', 'data-field': 'experiment.planned_end_at' });
  const goalList = goals?.ok ? goals.body.goals || [] : [];
  const primaryGoal = h('select', { id: 'exp-primary-goal', name: 'primary_goal', 'data-field': 'experiment.primary_goal' });
  const goalsHelp = (
    !goals?.ok ? 'Goals: ' + errorText(goals) + ' The primary goal this experiment already has is kept.'
      : goalList.length ? `Every goal is reported in the results: ${goalList.map((g) => `${g.name} (${g.key})`).join(', ')}. The primary goal decides the verdict; changing it moves nobody.`
        : ['No goal exists yet: the verdict is decided on clicks. ', h('a', { href: '#/goals' }, 'Create a goal on the Goals page'), ' to decide on a purchase or a sign-up.']);
  function loadGoal(key) {
    const opts = [h('option', { value: '' }, 'Clicks (the click-through rate)'), ...goalList.map((g) => h('option', { value: g.key }, `${g.name} (${g.key})`))];
    if (key && !goalList.some((g) => g.key === key)) opts.push(h('option', { value: key }, `${key} (not in the list: deleted, or the list cannot be read)`));
    setKids(primaryGoal, opts);
    primaryGoal.value = key || '';
  }
  const sumOut = h('p', { id: 'weights-sum', class: 'weights-sum', 'aria-live': 'polite' });
  const addVariantBtn = h('button', { type: 'button', class: 'secondary', id: 'variant-add', onclick: () => { addVariant(blank(nextKey(), 0)); renumber(); onChange(); variants.at(-1).key.focus(); } }, 'Add variant');
  const controlBox = h('div', { class: 'row', id: 'control-fields' },
    field('exp-control-weight', 'Control weight (%)', controlWeight, '1 to 99.'),
    field('exp-control-mode', 'A control user gets', controlMode, 'Fall-through: the selection goes on as if this popup did not apply.'));
  controlOn.addEventListener('change', () => { controlBox.hidden = !controlOn.checked; });
  const removeBtn = h('button', { type: 'button', class: 'danger', id: 'experiment-remove', disabled: running, 'aria-describedby': 'experiment-remove-help', onclick: remove }, 'Remove the experiment');
  const fields = h('div', { id: 'experiment-fields' },
    field('exp-coverage', 'Coverage (% of the popup’s users)', coverage, 'In the experiment; the others see the popup’s own content and are not counted. Raising it moves nobody.'),
    variantsBox,
    h('p', {}, addVariantBtn),
    h('div', { class: 'field' }, h('label', { class: 'check', for: 'exp-control' }, controlOn, ' A control arm'),
      h('p', { class: 'help', id: 'exp-control-help' }, 'Users in the control are counted but shown nothing of this popup: whether the popup helps at all.')),
    controlBox,
    sumOut,
    field('exp-end', `Planned end (${zoneName})`, plannedEnd, `When you mean to read the result: from then on a fixed-horizon verdict is allowed. Empty: none. In your browser's time zone, ${zoneName}.`),
    field('exp-primary-goal', 'Primary goal: the verdict is decided on', primaryGoal, goalsHelp),
    h('p', {}, removeBtn),
    h('p', { class: 'help', id: 'experiment-remove-help' }, running ? 'A running experiment cannot be removed: stop it first.' : 'Its results stay readable by phase.'));
  const off = h('div', { id: 'experiment-off' });
  const fs = h('fieldset', { id: 'experiment', 'data-field': 'experiment' }, h('legend', {}, 'Experiment'), head, fields, off);

  const blank = (key, weight) => ({ key, weight, title: '', content: '', image_url: '', image_alt: '', link_url: '', buttons: [], ext: {} });
  function nextKey() {
    const used = new Set(variants.map((v) => v.key.value.trim()));
    return [...'abcdefghij'].find((k) => !used.has(k)) || '';
  }
  function addVariant(v) {
    const idp = uid('variant');
    const item = {
      key: h('input', { type: 'text', name: 'variant-key', autocomplete: 'off', spellcheck: 'false', value: v.key ?? '' }),
      weight: numInput('variant-weight', { min: 1, max: 100, value: v.weight ?? '' }),
      content: contentEditor({ idp, onChange }),
      legend: h('legend'),
    };
    item.content.load(v);
    item.rm = h('button', { type: 'button', class: 'secondary', onclick: () => { variants = variants.filter((x) => x !== item); item.row.remove(); renumber(); onChange(); addVariantBtn.focus(); } }, 'Remove variant');
    item.row = h('fieldset', { class: 'variant' }, item.legend,
      h('div', { class: 'row' },
        field(idp + '-key', 'Key', item.key, '1 to 16 of a-z, 0-9, _ and -; not “control”.'),
        field(idp + '-weight', 'Weight (%)', item.weight)),
      item.content.el, h('p', {}, item.rm));
    variants.push(item);
    variantsBox.append(item.row);
  }
  function renumber() {
    variants.forEach((v, i) => {
      v.legend.textContent = `Variant ${i + 1}`;
      v.key.dataset.field = `experiment.variants[${i}].key`;
      v.weight.dataset.field = `experiment.variants[${i}].weight`;
      v.content.setPrefix(`experiment.variants[${i}].`);
      v.rm.disabled = variants.length <= 1;
    });
    addVariantBtn.disabled = variants.length >= MAX_VARIANTS;
  }
  function render() {
    fields.hidden = !on;
    controlBox.hidden = !controlOn.checked;
    if (on) return setKids(off);
    if (stored) return setKids(off, h('p', { id: 'experiment-removed' }, 'The experiment is removed when you save. Once saved, a new one can be added.'));
    setKids(off,
      h('p', { class: 'help' }, 'Test up to 8 content variants of this popup, and optionally a control that gets nothing: each user is assigned one arm for good, and the results compare them.'),
      h('p', {}, h('button', { type: 'button', class: 'secondary', id: 'experiment-add', onclick: add }, 'Add an experiment')));
  }
  function add() {
    const own = ownContent();
    load({ coverage_percent: 100, variants: [{ ...own, key: 'a', weight: 50 }, { ...own, key: 'b', weight: 50 }], control: null, planned_end_at: null, primary_goal: null });
    onChange();
    variants[0].key.focus();
  }
  function remove() {
    on = false;
    render();
    onChange();
    (document.getElementById('experiment-add') || fs.querySelector('legend')).focus?.();
  }
  function load(e) {
    on = !!e;
    variants = [];
    variantsBox.replaceChildren();
    if (e) {
      coverage.value = e.coverage_percent ?? '';
      for (const v of e.variants || []) addVariant(v);
      controlOn.checked = !!e.control;
      controlWeight.value = e.control?.weight ?? '';
      controlMode.value = e.control?.mode || 'none';
      plannedEnd.value = utcToLocalInput(e.planned_end_at);
    }
    loadGoal(e?.primary_goal);
    renumber();
    render();
    if (concluded) {
      // read-only: only the removal is offered
      for (const el of fields.querySelectorAll('input, select, textarea, button')) if (el !== removeBtn) el.disabled = true;
    }
  }
  function read(problems) {
    if (!on) return null;
    const num = (el) => (el.value.trim() === '' ? undefined : Number(el.value));
    const instead = nonexistentLocal(plannedEnd.value);
    if (instead) problems.push({ field: 'experiment.planned_end_at', message: `${plannedEnd.value.replace('T', ' ')} does not exist in ${zoneName}: the clocks jump forward that night. Enter a time before or after the jump.` });
    const e = {
      coverage_percent: num(coverage),
      variants: variants.map((v) => ({ key: v.key.value.trim(), weight: num(v.weight), ...v.content.read(problems) })),
      control: controlOn.checked ? { weight: num(controlWeight), mode: controlMode.value } : null,
      planned_end_at: localInputToUTC(plannedEnd.value),
      primary_goal: primaryGoal.value || null,
    };
    // the API refuses weights that do not sum to 100: nothing is sent, no review opens
    const { sum } = armWeights(e);
    if (!concluded && sum !== 100) problems.push({ field: 'experiment.variants', message: `weights (the variants' and the control's) must sum to 100, not ${sum}` });
    return e;
  }
  // refresh shows whether the weights of the form's arms sum to 100
  function refresh(e) {
    if (!e) return;
    const { arms, sum } = armWeights(e);
    const ok = sum === 100 && arms >= 2;
    sumOut.className = 'weights-sum ' + (ok ? 'ok' : 'bad');
    sumOut.textContent = arms < 2 ? `One arm only (weights sum to ${sum}%): add a variant or a control; an experiment needs two arms.`
      : (sum === 100 ? `Weights sum to 100% over ${arms} arms.` : `Weights sum to ${sum}%: they must sum to 100%.`);
  }
  return { el: fs, load, read, refresh };
}

// experimentHead: the stored popup's experiment status and phase, its results, and the transitions
// the role may use (as a PUT of this popup would need: docs/CONTRACT.md §10); onTransition(kind)
// makes one. Null when the popup has no experiment.
export function experimentHead({ stored, mayEdit, onTransition }) {
  const e = stored?.experiment;
  if (!e) return null;
  const st = e.status;
  const btn = (kind, label, cls = 'secondary') => h('button', { type: 'button', class: cls, id: 'experiment-' + kind, onclick: () => onTransition(kind) }, label);
  return h('div', { class: 'experiment-head' },
    h('p', { id: 'experiment-status' }, 'Status: ', h('span', { class: 'badge ' + st }, st),
      ` · phase ${e.phase}`, e.phase_started_at ? `, first run ${fmtTime(e.phase_started_at)}` : ', not run yet',
      e.concluded_variant ? ` · variant “${e.concluded_variant}” shipped: the experiment is read-only` : ''),
    h('p', {}, h('a', { href: `#/popups/${stored.id}/experiment`, id: 'experiment-results-link' }, 'Experiment results'),
      st === 'draft' ? h('span', { class: 'muted' }, ' (none until it runs)') : null),
    mayEdit && st !== 'concluded' ? h('div', { class: 'actions' },
      st === 'draft' || st === 'stopped' ? btn('start', st === 'stopped' ? 'Start again…' : 'Start the experiment…', '') : null,
      st === 'running' ? btn('stop', 'Stop the experiment…') : null,
      // the API concludes a running or stopped experiment only: a draft has no results to act on
      st === 'running' || st === 'stopped' ? btn('conclude', 'Conclude…') : null) : null);
}
