// The popup form's errors: each at its field (by the API's field name, or the nearest enclosing
// one), all listed in the summary above the form with links to them.
import { h, uid, errorText, lineOf } from '../../lib.js';
import { loadMe } from '../../state.js';
import { setKids, renderWho } from '../../ui.js';

// formErrors shows errors in form: show(r) those of an API answer r, show(null, problems) those
// the page found itself ([{field, message}], nothing sent); clear() removes them.
export function formErrors(form, summary) {
  function clear() {
    setKids(summary);
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

  function show(r, localFields) {
    clear();
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
    setKids(summary, h('div', { class: 'alert error', role: 'alert' },
      h('p', {}, fields.length && !localFields && r.status === 400 ? 'The popup was not saved: ' + fields.length + ' field' + (fields.length > 1 ? 's need' : ' needs') + ' fixing.' : text),
      items.length ? h('ul', {}, items) : null));
    (first && first.tagName !== 'FIELDSET' ? first : summary).focus();
  }
  return { clear, show };
}
