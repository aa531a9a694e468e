// The popup form's Targeting section: platforms, app versions, regions, languages, rollout, test
// uids, the audiences to include and exclude, and the bucketing seed.
import { h, errorText, splitLines } from '../../lib.js';
import { setKids } from '../../ui.js';
import { field, textInput, numInput, listInput, numberOf } from '../../form.js';
import { fmtInt } from '../../figures.js';

// targetingSection: audiences is the audience list (cache.js); seed is the popup's bucketing seed,
// shown read-only; isNew says whether it was drawn for a popup not saved yet.
export function targetingSection({ audiences: list, seed, isNew }) {
  const f = {
    min_app_version: textInput('min_app_version', { 'data-field': 'targeting.min_app_version', placeholder: 'e.g. 8.10.0' }),
    max_app_version: textInput('max_app_version', { 'data-field': 'targeting.max_app_version' }),
    regions: listInput('regions', 'targeting.regions'),
    langs: listInput('langs', 'targeting.langs'),
    rollout_percent: numInput('rollout_percent', { 'data-field': 'targeting.rollout_percent' }),
    uids: listInput('uids', 'targeting.uids'),
  };
  const audiences = audiencePicker(list);
  const seedIn = h('input', { type: 'text', name: 'bucket_seed', 'data-field': 'bucket_seed', readonly: true, class: 'mono', value: seed ?? '' });
  const platformBoxes = ['ios', 'android', 'web'].map((pl) => {
    const cid = 'platform-' + pl;
    return h('label', { class: 'check', for: cid }, h('input', { type: 'checkbox', id: cid, name: 'platforms', value: pl }), ' ' + pl);
  });
  const platformSet = h('fieldset', { 'data-field': 'targeting.platforms', id: 'platforms', 'aria-describedby': 'platforms-help' },
    h('legend', {}, 'Platforms'), platformBoxes, h('p', { class: 'help', id: 'platforms-help' }, 'None checked: every platform.'));
  const el = h('fieldset', {}, h('legend', {}, 'Targeting'),
    platformSet,
    field('f-minv', 'Minimum app version', f.min_app_version, 'Inclusive; empty: no minimum.'),
    field('f-maxv', 'Maximum app version', f.max_app_version, 'Inclusive; empty: no maximum.'),
    field('f-regions', 'Regions', f.regions, 'One per line, e.g. cn. Empty: every region.'),
    field('f-langs', 'Languages', f.langs, 'One per line, e.g. en. Empty: every language.'),
    field('f-rollout', 'Rollout percent', f.rollout_percent, '0 to 100 of users, stable per user.'),
    field('f-uids', 'Test uids', f.uids, 'One per line: these users get the popup whatever the rollout.'),
    audiences.el,
    h('details', { class: 'advanced' }, h('summary', {}, 'Advanced: bucketing seed'),
      field('f-seed', 'Bucketing seed', seedIn, isNew
        ? 'Drawn for this new popup: “Try the draft” below buckets users with it, and the popup keeps it when saved, so the preview is what saving does.'
        : 'Which users fall in the rollout percent is decided by this seed, fixed when the popup was created; it never changes.')));
  return {
    el,
    // load takes a whole targeting (every field present)
    load(t) {
      f.min_app_version.value = t.min_app_version || ''; f.max_app_version.value = t.max_app_version || '';
      f.regions.value = (t.regions || []).join('\n'); f.langs.value = (t.langs || []).join('\n');
      f.rollout_percent.value = t.rollout_percent ?? ''; f.uids.value = (t.uids || []).join('\n');
      for (const l of platformBoxes) { const c = l.querySelector('input'); c.checked = (t.platforms || []).includes(c.value); }
      audiences.load(t.audiences);
    },
    // read gives the targeting without its audiences, and the audiences ({include, exclude}) apart
    read: () => ({
      targeting: {
        platforms: platformBoxes.map((l) => l.querySelector('input')).filter((c) => c.checked).map((c) => c.value),
        min_app_version: f.min_app_version.value.trim(), max_app_version: f.max_app_version.value.trim(),
        regions: splitLines(f.regions.value), langs: splitLines(f.langs.value),
        rollout_percent: numberOf(f.rollout_percent), uids: splitLines(f.uids.value),
      },
      audiences: audiences.read(),
    }),
  };
}

// audiencePicker: the Audiences part of the popup form's targeting (targeting.audiences
// {include, exclude}: audience ids), a checkbox list per side fed by the audience list. An id the
// list does not know (a deleted audience, or a list that cannot be read now) stays on show,
// checked, so that saving never drops it unseen. The checked boxes carry the API's field names
// (targeting.audiences.include[0] …) in the order they are sent, so a field error lands on its box.
const AUDIENCE_SIDES = [
  ['include', 'Only users in these audiences', 'A user must be a member of at least one audience checked (at most 20). None checked: no such condition.'],
  ['exclude', 'Never users in these audiences', 'A member of any audience checked never gets this popup, whatever else matches (at most 20).'],
];

function audiencePicker(cache) {
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
