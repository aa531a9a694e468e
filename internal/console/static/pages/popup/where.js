// The popup form's Where and when section (docs/CONTRACT.md §2, "Placements, triggers and
// rules"): the placement picker, the trigger editor (an event and conditions on its properties)
// and the rule builder (rules OR'ed, each a list of conditions AND'ed). Every input carries its
// API field name (targeting.rules[1].conditions[0].op) so that a refusal lands on it.
import { h, splitLines } from '../../lib.js';
import { setKids } from '../../ui.js';
import { field, listInput } from '../../form.js';

// OPS are the operators with their words; NUMERIC ones read a number (or, for gt…lte, a date).
const OPS = [['eq', 'is'], ['neq', 'is not'], ['in', 'is one of'], ['not_in', 'is none of'], ['contains', 'contains'],
  ['starts_with', 'starts with'], ['ends_with', 'ends with'], ['matches', 'matches (RE2)'], ['gt', '>'], ['gte', '≥'], ['lt', '<'],
  ['lte', '≤'], ['semver_eq', 'version ='], ['semver_gt', 'version >'], ['semver_gte', 'version ≥'], ['semver_lt', 'version <'],
  ['semver_lte', 'version ≤'], ['exists', 'is set'], ['not_exists', 'is not set']];
const WORDS = Object.fromEntries(OPS);
const NUMERIC = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/;

// valueOf reads a condition's value text as the API takes it for op: none for exists, a list for
// in (comma-separated), a number when it reads as one (not for the string and semver operators),
// true/false for eq and neq, else the text.
export function valueOf(op, text) {
  if (op === 'exists' || op === 'not_exists') return undefined;
  const one = (s) => {
    s = s.trim();
    if (['contains', 'starts_with', 'ends_with', 'matches'].includes(op) || op.startsWith('semver_')) return s;
    if ((op === 'eq' || op === 'neq' || op === 'in' || op === 'not_in') && (s === 'true' || s === 'false')) return s === 'true';
    return NUMERIC.test(s) ? Number(s) : s;
  };
  return op === 'in' || op === 'not_in' ? text.split(',').map(one).filter((v) => v !== '') : one(text);
}

// textOf is valueOf's inverse, for loading a stored condition.
const textOf = (v) => (v === undefined || v === null ? '' : Array.isArray(v) ? v.join(', ') : String(v));

// sayCondition is a condition in plain words: plan is one of pro, team.
export function sayCondition(c) {
  return `${c.attr} ${WORDS[c.op] || c.op}${c.value === undefined ? '' : ' ' + textOf(c.value)}`;
}

// summary is a popup's where-fields in plain words for the list: "checkout · on purchase_completed
// (amount ≥ 30) · plan is pro, or 1 more rule"; "" for a homepage popup without trigger or rules.
export function summary(t) {
  const parts = [];
  const pl = t?.placements || ['home'];
  if (pl.length !== 1 || pl[0] !== 'home') parts.push(pl.join(', '));
  if (t?.trigger) parts.push('on ' + t.trigger.event + (t.trigger.conditions?.length ? ` (${t.trigger.conditions.map(sayCondition).join(' and ')})` : ''));
  const rules = t?.rules || [];
  if (rules.length) parts.push(rules[0].conditions.map(sayCondition).join(' and ') + (rules.length > 1 ? `, or ${rules.length - 1} more rule${rules.length > 2 ? 's' : ''}` : ''));
  return parts.join(' · ');
}

// conditionList edits a list of conditions whose API fields start with path
// (targeting.trigger.conditions, targeting.rules[0].conditions); label names it for screen readers.
function conditionList(path, label) {
  const rows = h('div', { class: 'conditions' });
  let items = [];
  function row(c) {
    const item = { attr: h('input', { type: 'text', class: 'mono', autocomplete: 'off' }), op: h('select', {}, OPS.map(([v, w]) => h('option', { value: v }, w))),
      value: h('input', { type: 'text', autocomplete: 'off' }) };
    item.attr.value = c.attr || ''; item.op.value = c.op || 'eq'; item.value.value = textOf(c.value);
    const sync = () => { item.value.disabled = item.op.value === 'exists' || item.op.value === 'not_exists'; };
    item.op.addEventListener('change', sync); sync();
    item.remove = h('button', { type: 'button', class: 'secondary small', onclick: () => { items = items.filter((x) => x !== item); render(); } }, 'Remove');
    items.push(item);
  }
  function render() {
    setKids(rows, items.map((it, i) => {
      const at = `${path}[${i}]`, id = at.replace(/[^A-Za-z0-9]/g, '-');
      it.attr.id = id + '-attr'; it.attr.dataset.field = at + '.attr';
      it.op.id = id + '-op'; it.op.dataset.field = at + '.op';
      it.value.id = id + '-value'; it.value.dataset.field = at + '.value';
      it.remove.setAttribute('aria-label', `Remove condition ${i + 1} of ${label}`);
      return h('div', { class: 'condition', role: 'group', 'aria-label': `${label}: condition ${i + 1}` },
        h('label', { for: it.attr.id }, 'Attribute'), it.attr, h('label', { for: it.op.id }, 'Operator'), it.op,
        h('label', { for: it.value.id }, 'Value'), it.value, it.remove);
    }));
  }
  const add = h('button', { type: 'button', class: 'secondary small', onclick: () => { row({}); render(); items.at(-1).attr.focus(); } }, 'Add condition');
  add.setAttribute('aria-label', 'Add a condition to ' + label);
  return {
    el: h('div', {}, rows, add),
    load(cs) { items = []; (cs || []).forEach(row); render(); },
    read: () => items.map((it) => {
      const c = { attr: it.attr.value.trim(), op: it.op.value };
      const v = valueOf(c.op, it.value.value);
      if (v !== undefined) c.value = v;
      return c;
    }),
  };
}

export function whereSection() {
  const placements = listInput('placements', 'targeting.placements');
  placements.id = 'f-placements';
  const triggerOn = h('input', { type: 'checkbox', id: 'f-trigger-on', 'aria-controls': 'trigger-editor' });
  const event = h('input', { type: 'text', id: 'f-trigger-event', class: 'mono', 'data-field': 'targeting.trigger.event', autocomplete: 'off' });
  const triggerConds = conditionList('targeting.trigger.conditions', 'the trigger');
  const triggerBox = h('div', { id: 'trigger-editor' },
    field('f-trigger-event', 'Event', event, 'The event the app reports, e.g. purchase_completed.'),
    h('p', { class: 'label' }, 'Only when its properties meet all of these'), triggerConds.el);
  const syncTrigger = () => { triggerBox.hidden = !triggerOn.checked; };
  triggerOn.addEventListener('change', syncTrigger);
  const ruleList = h('div', { id: 'rule-list' });
  let rules = [];
  function renderRules() {
    setKids(ruleList, rules.map((r, i) => {
      r.path = `targeting.rules[${i}].conditions`;
      const conds = r.conds.read();
      r.conds = conditionList(r.path, `rule ${i + 1}`);
      r.conds.load(conds);
      return h('fieldset', { class: 'rule', 'data-field': r.path }, h('legend', {}, `Rule ${i + 1}${i ? ' (or)' : ''}: all of`), r.conds.el,
        h('button', { type: 'button', class: 'secondary small', 'aria-label': `Remove rule ${i + 1}`, onclick: () => { rules.splice(i, 1); renderRules(); } }, 'Remove rule'));
    }));
  }
  const newRule = (cs) => { const r = { conds: conditionList('', '') }; r.conds.load(cs); return r; };
  const addRule = h('button', { type: 'button', class: 'secondary', id: 'add-rule', onclick: () => { rules.push(newRule([{}])); renderRules(); } }, 'Add rule');
  const el = h('fieldset', { id: 'where' }, h('legend', {}, 'Where and when'),
    field('f-placements', 'Placements', placements, 'One per line (a-z, 0-9, _ and -), e.g. checkout. Empty: home, the homepage.'),
    h('div', { class: 'field' }, h('label', { class: 'check', for: 'f-trigger-on' }, triggerOn, ' Only when an event happens'),
      h('p', { class: 'help' }, 'Shown only on a request carrying the event; without one, the popup shows only on requests carrying none.')),
    triggerBox,
    h('p', { class: 'label' }, 'Attribute rules'),
    h('p', { class: 'help', id: 'rules-help' }, 'Any rule may hold; within a rule, every condition must. A missing or unreadable attribute makes its condition false. No rule: every user.'),
    ruleList, addRule);
  return {
    el,
    load(t) {
      const pl = t?.placements || [];
      placements.value = pl.length === 1 && pl[0] === 'home' ? '' : pl.join('\n');
      triggerOn.checked = !!t?.trigger; event.value = t?.trigger?.event || ''; triggerConds.load(t?.trigger?.conditions);
      syncTrigger();
      rules = (t?.rules || []).map((r) => newRule(r.conditions));
      renderRules();
    },
    // read gives {placements, trigger, rules} as the API answers them (no placement: ["home"]),
    // so that the form's reading of a stored popup compares equal to it
    read: () => ({
      placements: splitLines(placements.value).length ? splitLines(placements.value) : ['home'],
      trigger: triggerOn.checked ? { event: event.value.trim(), conditions: triggerConds.read() } : null,
      rules: rules.map((r) => ({ conditions: r.conds.read() })),
    }),
  };
}
