// Form parts shared by the screens: a labelled field with its help, inputs that carry the API's
// field name (data-field), a duration with its unit, and field errors shown where they belong.
import { h, errorText, UNITS, NEVER, splitDuration, parseDuration } from './lib.js';
import { setKids } from './ui.js';

export function field(id, label, input, help) {
  input.id = id;
  const helpId = help ? id + '-help' : null;
  if (helpId) input.setAttribute('aria-describedby', helpId);
  return h('div', { class: 'field' },
    h('label', { for: id }, label), input,
    help ? h('p', { class: 'help', id: helpId }, help) : null);
}

// numberOf reads a number input: undefined when empty (the API's default), else the number.
export const numberOf = (el) => (el.value.trim() === '' ? undefined : Number(el.value));

export function textInput(name, attrs = {}) {
  return h('input', { type: 'text', name, 'data-field': name, ...attrs });
}

export function numInput(name, attrs = {}) {
  return h('input', { type: 'number', name, 'data-field': name, inputmode: 'numeric', ...attrs });
}

export function listInput(name, dataField) {
  return h('textarea', { name, 'data-field': dataField, rows: 3, spellcheck: 'false', class: 'list' });
}

// durationField: a number and its unit (and "never again" where the API takes -1).
export function durationField(id, name, label, help, never) {
  const num = h('input', { type: 'text', inputmode: 'decimal', name, id, 'data-field': name, autocomplete: 'off', class: 'dur', 'aria-describedby': id + '-help' });
  const unit = h('select', { id: id + '-unit', name: name + '-unit', 'aria-describedby': id + '-help' },
    UNITS.filter(([u]) => u !== 'seconds').map(([u]) => h('option', { value: u }, u)),
    never ? h('option', { value: NEVER }, 'never again') : null);
  const sync = () => { num.disabled = unit.value === NEVER; };
  unit.addEventListener('change', sync);
  const el = h('div', { class: 'field' },
    h('label', { for: id }, label),
    h('div', { class: 'dur-row' }, num, h('label', { for: id + '-unit', class: 'sr-only' }, label + ': unit'), unit),
    h('p', { class: 'help', id: id + '-help' }, help));
  return {
    el,
    set(sec) {
      const { n, unit: u } = splitDuration(sec);
      if (u === 'seconds' && !unit.querySelector('option[value=seconds]')) unit.prepend(h('option', { value: 'seconds' }, 'seconds'));
      num.value = n; unit.value = u; sync();
    },
    read: () => parseDuration(num.value, unit.value),
  };
}

// fieldErrorsIn shows the field errors of an API answer at the fields of form (by data-field),
// the rest in the summary box; it returns whether any field took one.
export function fieldErrorsIn(form, summary, r, what) {
  for (const el of form.querySelectorAll('.field-error')) el.remove();
  for (const el of form.querySelectorAll('[aria-invalid]')) {
    el.removeAttribute('aria-invalid');
    el.setAttribute('aria-describedby', (el.getAttribute('aria-describedby') || '').split(' ').filter((x) => x && !x.endsWith('-err')).join(' '));
  }
  if (!r) return setKids(summary);
  const fields = r.body?.error?.fields || [];
  const rest = [];
  let first = null;
  for (const fe of fields) {
    const el = form.querySelector(`[data-field="${CSS.escape(fe.field)}"]`);
    if (!el) { rest.push(fe); continue; }
    const errId = el.id + '-err';
    el.closest('.field').append(h('p', { class: 'field-error', id: errId }, fe.message));
    el.setAttribute('aria-invalid', 'true');
    el.setAttribute('aria-describedby', [el.getAttribute('aria-describedby'), errId].filter(Boolean).join(' '));
    first = first || el;
  }
  setKids(summary, h('div', { class: 'alert error', role: 'alert' },
    h('p', {}, `${what}: ${fields.length ? `${fields.length} field${fields.length > 1 ? 's need' : ' needs'} fixing.` : errorText(r)}`),
    rest.length ? h('ul', {}, rest.map((fe) => h('li', {}, `${fe.field}: ${fe.message}`))) : null));
  (first || summary).focus?.();
  return !!first;
}
