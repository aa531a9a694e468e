// The popup form's Targeting section: the audiences picked to include and exclude.
import { h, errorText } from '../../lib.js';
import { setKids } from '../../ui.js';
import { fmtInt } from '../../figures.js';

// audiencePicker: the Audiences part of the popup form's targeting (targeting.audiences
// {include, exclude}: audience ids), a checkbox list per side fed by the audience list. An id the
// list does not know (a deleted audience, or a list that cannot be read now) stays on show,
// checked, so that saving never drops it unseen. The checked boxes carry the API's field names
// (targeting.audiences.include[0] …) in the order they are sent, so a field error lands on its box.
const AUDIENCE_SIDES = [
  ['include', 'Only users in these audiences', 'A user must be a member of at least one audience checked (at most 20). None checked: no such condition.'],
  ['exclude', 'Never users in these audiences', 'A member of any audience checked never gets this popup, whatever else matches (at most 20).'],
];

export function audiencePicker(cache) {
  const sides = {};
  const els = AUDIENCE_SIDES.map(([side, legend, help]) => {
    const list = h('div', { class: 'audience-list', id: `aud-${side}-list` });
    const fs = h('fieldset', { id: 'aud-' + side, 'data-field': 'targeting.audiences.' + side, 'aria-describedby': `aud-${side}-help` },
      h('legend', {}, legend), h('p', { class: 'help', id: `aud-${side}-help` }, help), list);
    sides[side] = { fs, list };
    return fs;
  });
  const note = cache.available ? (cache.list.length ? null : h('p', { class: 'help', id: 'aud-none' }, 'No audience exists yet: ', h('a', { href: '#/audiences' }, 'create one on the Audiences page'), '.'))
    : h('p', { class: 'alert info', id: 'aud-unavailable' }, 'Audiences: ' + errorText(cache.r) + ' The audiences this popup already names are kept.');
  // keys: the original id of every box's value (an id is sent with the type it came with)
  const ids = new Map();
  function box(side, id, label) {
    const key = String(id);
    ids.set(key, id);
    const cid = `aud-${side}-${key.replace(/[^A-Za-z0-9_-]/g, '_')}`;
    return h('div', { class: 'field' }, h('label', { class: 'check', for: cid }, h('input', { type: 'checkbox', id: cid, name: 'aud-' + side, value: key }), ' ', label));
  }
  const el = h('div', { id: 'audience-targeting' }, h('p', { class: 'label' }, 'Audiences'), note, h('div', { class: 'audience-picks' }, els));
  return {
    el,
    load(aud) {
      for (const [side] of AUDIENCE_SIDES) {
        const want = (aud?.[side] || []).map(String);
        const known = cache.list.map((a) => box(side, a.id, [a.name || `audience #${a.id}`, h('span', { class: 'muted' }, ` (${fmtInt(a.size)} member${a.size === 1 ? '' : 's'})`)]));
        const unknown = (aud?.[side] || []).filter((id) => !cache.byId.has(String(id))).map((id) => box(side, id, `audience #${id} (not in the list: deleted, or the list cannot be read)`));
        setKids(sides[side].list, known, unknown);
        for (const c of sides[side].list.querySelectorAll('input')) c.checked = want.includes(c.value);
      }
      this.renumber();
    },
    renumber() {
      for (const [side] of AUDIENCE_SIDES) {
        let i = 0;
        for (const c of sides[side].list.querySelectorAll('input')) {
          if (c.checked) c.dataset.field = `targeting.audiences.${side}[${i++}]`;
          else delete c.dataset.field;
        }
      }
    },
    read() {
      this.renumber();
      const out = {};
      for (const [side] of AUDIENCE_SIDES) out[side] = [...sides[side].list.querySelectorAll('input:checked')].map((c) => ids.get(c.value));
      return out;
    },
  };
}
