// The goals (#/goals): the conversions experiments and the holdout count besides clicks.
import { h, notAvailable, errorText, fmtTime } from '../lib.js';
import { listGoals, createGoal, deleteGoal } from '../api/goals.js';
import { session, can, nav } from '../state.js';
import { setKids, toast, screen, alertBox, roleNote, confirmDialog } from '../ui.js';
import { field, textInput, numInput, fieldErrorsIn } from '../form.js';

// GOAL_VALUES name what a goal's conversions carry (docs/CONTRACT.md §14).
const GOAL_VALUES = { none: 'Whether users converted', sum: 'A value that adds up (an amount)' };

// goalsScreen lists the goals experiments count conversions of; a publisher creates and deletes
// them (a goal a running experiment decides on is refused, and the answer says why).
export async function goalsScreen() {
  const seq = nav.seq;
  const results = h('div', { id: 'goal-results', 'aria-live': 'polite', 'aria-busy': 'true' }, h('p', { class: 'muted' }, 'Loading…'));
  let create = null;
  if (can('publish')) {
    const key = textInput('key', { required: true, autocomplete: 'off', pattern: '[a-z0-9_\\-]{1,32}' });
    const name = textInput('name', { required: true, autocomplete: 'off' });
    const windowHours = numInput('window_hours', { min: 1, max: 720, value: 72 });
    const value = h('select', { name: 'value', 'data-field': 'value' },
      Object.entries(GOAL_VALUES).map(([v, label]) => h('option', { value: v }, label)));
    const cap = numInput('value_cap', { min: 0, step: 'any', inputmode: 'decimal' });
    const errs = h('div', { id: 'goal-create-errors', tabindex: '-1' });
    const form = h('form', { class: 'card narrow', id: 'goal-create', novalidate: true, 'aria-labelledby': 'goal-create-h' },
      h('h2', { id: 'goal-create-h' }, 'New goal'), errs,
      field('new-goal-key', 'Key', key, 'What apps and backends send as the conversion’s goal: 1-32 of a-z, 0-9, _ and -, e.g. purchase. It never changes.'),
      field('new-goal-name', 'Name', name, 'Shown on the results, e.g. Purchase.'),
      field('new-goal-window', 'Window (hours)', windowHours, 'A conversion counts for an experiment when it comes within this long after the user first saw it: 1 to 720.'),
      field('new-goal-value', 'Conversions carry', value, null),
      field('new-goal-cap', 'Cap each user’s value at (optional)', cap, 'For a goal whose conversions carry a value: the results also show the sums with each user’s value counted up to this, so one huge order does not decide them. Empty: no cap.'),
      h('button', { type: 'submit', id: 'goal-create-submit' }, 'Create goal'));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      fieldErrorsIn(form, errs, null);
      const r = await createGoal({ key: key.value.trim(), name: name.value.trim(),
        window_hours: Number(windowHours.value), value: value.value,
        value_cap: cap.value.trim() === '' ? null : Number(cap.value) });
      if (!r.ok) return fieldErrorsIn(form, errs, r, 'The goal was not created');
      toast(`Created goal “${r.body.name}” (${r.body.key}).`);
      form.reset();
      goalsScreen();
    });
    create = form;
  }
  screen('Goals',
    h('p', {}, 'Conversions experiments count besides clicks: an app or a backend reports that a user reached a goal, and each arm’s results show how many of its users did.'),
    create || roleNote(`You are signed in as ${session.me.operator}, a ${session.me.role}: creating and deleting goals needs the publisher role.`),
    h('h2', { id: 'goal-list-h' }, 'All goals'),
    results);
  const r = await listGoals();
  if (seq !== nav.seq) return;
  results.setAttribute('aria-busy', 'false');
  if (!r.ok) return setKids(results, alertBox('Goals: ' + errorText(r), notAvailable(r) ? 'info' : 'error'));
  const goals = r.body.goals || [];
  if (!goals.length) return setKids(results, h('p', { id: 'goal-none' }, 'No goal yet.'));
  const cols = ['Key', 'Name', 'Window', 'Conversions carry', 'Value cap per user', 'Updated'].concat(can('publish') ? ['Actions'] : []);
  setKids(results, h('div', { class: 'table-wrap' }, h('table', { id: 'goal-table' },
    h('caption', { class: 'sr-only' }, `${goals.length} goal${goals.length === 1 ? '' : 's'}`),
    h('thead', {}, h('tr', {}, cols.map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, goals.map((g) => h('tr', { 'data-key': g.key },
      h('th', { scope: 'row' }, h('code', {}, g.key)),
      h('td', {}, g.name),
      h('td', { class: 'num' }, `${g.window_hours} h`),
      h('td', {}, GOAL_VALUES[g.value] || g.value),
      h('td', { class: 'num' }, g.value_cap === null || g.value_cap === undefined ? '—' : String(g.value_cap)),
      h('td', {}, fmtTime(g.updated_at)),
      can('publish') ? h('td', {}, deleteGoalButton(g)) : null))))));
}

function deleteGoalButton(g) {
  const btn = h('button', { type: 'button', class: 'secondary', id: 'goal-delete-' + g.key, 'aria-label': `Delete goal ${g.key}` }, 'Delete');
  btn.addEventListener('click', async () => {
    if (!await confirmDialog(`Delete goal ${g.key}?`, 'Conversions of it are no longer accepted; the counts already made stay.', 'Delete goal')) return;
    const r = await deleteGoal(g.key);
    if (!r.ok) return setKids(document.getElementById('goal-results'), alertBox(`Goal ${g.key} was not deleted: ` + errorText(r)));
    toast(`Deleted goal ${g.key}.`);
    goalsScreen();
  });
  return btn;
}
