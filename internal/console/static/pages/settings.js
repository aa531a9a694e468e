// The team's settings (#/settings): reporting time zone, pacing, global holdout; admins change them.
import { h, notAvailable, errorText, zoneName } from '../lib.js';
import { getSettings, putSettings } from '../api/settings.js';
import { session, can, nav } from '../state.js';
import { dropListStats } from '../cache.js';
import { setKids, screen, alertBox, roleNote, confirmDialog } from '../ui.js';

// settingsScreen: the team's settings (docs/CONTRACT.md §8), changed by admins only; every other
// operator sees the values.
export async function settingsScreen() {
  const seq = nav.seq;
  const box = h('div', { id: 'settings-box' }, h('p', { class: 'muted' }, 'Loading…'));
  screen('Settings', box);
  const r = await getSettings();
  if (seq !== nav.seq) return;
  if (!r.ok) return setKids(box, alertBox('Settings: ' + errorText(r), notAvailable(r) ? 'info' : 'error'));
  const zone = r.body.reporting_time_zone || 'UTC';
  const pacingText = (b) => `${b.min_gap_seconds ? `at least ${b.min_gap_seconds} s between two popups` : 'no gap between popups'}, ${b.daily_cap ? `at most ${b.daily_cap} a day` : 'no daily cap'}`;
  const holdoutText = (b) => (b.holdout_percent ? `${b.holdout_percent}% of users see no popup but the exempt ones` : 'none');
  if (!can('admin')) {
    return setKids(box, roleNote(`You are signed in as ${session.me.operator}, a ${session.me.role}: changing the settings needs the admin role.`),
      h('p', {}, 'Reporting time zone: ', h('strong', { id: 'reporting-zone-shown' }, zone), '. Results and daily stats are counted in its days.'),
      h('p', {}, 'Pacing across campaigns: ', h('strong', { id: 'pacing-shown' }, pacingText(r.body)), '.'),
      h('p', {}, 'Global holdout: ', h('strong', { id: 'holdout-shown' }, holdoutText(r.body)), '. ', h('a', { href: '#/holdout' }, 'Its results')));
  }
  let heldNow = r.body.holdout_percent ?? 0; // the running percentage: another starts a new phase
  const held = h('input', { type: 'number', id: 'holdout-percent', name: 'holdout_percent', min: 0, max: 20, step: 1, value: heldNow, 'aria-describedby': 'holdout-percent-help' });
  const gap = h('input', { type: 'number', id: 'min-gap', name: 'min_gap_seconds', min: 0, max: 604800, value: r.body.min_gap_seconds ?? 0, 'aria-describedby': 'min-gap-help' });
  const cap = h('input', { type: 'number', id: 'daily-cap', name: 'daily_cap', min: 0, max: 1000, value: r.body.daily_cap ?? 0, 'aria-describedby': 'daily-cap-help' });
  const names = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  const input = h('input', { type: 'text', id: 'reporting-zone', name: 'reporting_time_zone', value: zone, list: 'zone-names', autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'reporting-zone-help' });
  const out = h('div', { id: 'settings-out', 'aria-live': 'polite' });
  const form = h('form', { class: 'card narrow', novalidate: true },
    h('div', { class: 'field' }, h('label', { for: 'reporting-zone' }, 'Reporting time zone'), input,
      h('datalist', { id: 'zone-names' }, ['UTC', ...names.filter((n) => n !== 'UTC')].map((n) => h('option', { value: n }))),
      h('p', { class: 'help', id: 'reporting-zone-help' }, `An IANA time zone name, e.g. America/Los_Angeles or Europe/Berlin. Results, their CSV and the list's “Today” count the days of this zone, for every operator. Your browser is in ${zoneName}.`)),
    h('fieldset', { id: 'pacing' }, h('legend', {}, 'Pacing across campaigns'),
      h('div', { class: 'field' }, h('label', { for: 'min-gap' }, 'Minimum gap between two popups (seconds)'), gap,
        h('p', { class: 'help', id: 'min-gap-help' }, 'After any popup is shown to a user, no other for this long. 0: no gap. The preview names it min_gap.')),
      h('div', { class: 'field' }, h('label', { for: 'daily-cap' }, 'Popups per user per day'), cap,
        h('p', { class: 'help', id: 'daily-cap-help' }, 'At most this many a UTC day, across all popups. 0: no cap. The preview names it daily_cap.')),
      h('p', { class: 'help' }, 'Popups marked “exempt from the team’s pacing” pass both. A change reaches every instance within 2 seconds.')),
    h('fieldset', { id: 'holdout' }, h('legend', {}, 'Global holdout'),
      h('div', { class: 'field' }, h('label', { for: 'holdout-percent' }, 'Users held out (percent, 0 to 20)'), held,
        h('p', { class: 'help', id: 'holdout-percent-help' }, 'This share of all users sees no popup but those marked “exempt from the global holdout”; comparing them with the others on the goals says whether the popups help at all (', h('a', { href: '#/holdout' }, 'Holdout results'), '). 0: no holdout. Another percentage starts a new phase, counted from zero; the users held out stay held out when it grows. Peers recommend 1–10%, kept for months.'))),
    h('button', { type: 'submit', id: 'settings-save' }, 'Save settings'), out);
  const inputs = { reporting_time_zone: [input, 'reporting-zone'], min_gap_seconds: [gap, 'min-gap'], daily_cap: [cap, 'daily-cap'], holdout_percent: [held, 'holdout-percent'] };
  const clear = () => {
    for (const [el, id] of Object.values(inputs)) {
      document.getElementById(id + '-err')?.remove();
      el.removeAttribute('aria-invalid');
      el.setAttribute('aria-describedby', id + '-help');
    }
  };
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clear();
    setKids(out);
    const whole = (el) => (el.value.trim() === '' ? 0 : Number(el.value));
    if (held.validity.badInput) { // not a number: never sent (an empty box would read as 0, the end of the holdout)
      held.closest('.field').append(h('p', { class: 'field-error', id: 'holdout-percent-err' }, 'must be a whole number from 0 to 20'));
      held.setAttribute('aria-invalid', 'true');
      held.setAttribute('aria-describedby', 'holdout-percent-help holdout-percent-err');
      return held.focus();
    }
    const body = { reporting_time_zone: input.value.trim(), min_gap_seconds: whole(gap), daily_cap: whole(cap), holdout_percent: whole(held) };
    if (body.holdout_percent !== heldNow && Number.isInteger(body.holdout_percent) && body.holdout_percent >= 0 && body.holdout_percent <= 20) {
      const text = body.holdout_percent === 0
        ? `This ends the holdout: the ${heldNow}% held out will see popups again. Its results are kept.`
        : (heldNow ? `This ends the current phase (${heldNow}%) and starts a new one with ${body.holdout_percent}%, counted from zero. The earlier phase's results are kept.`
          : `From now on ${body.holdout_percent}% of all users see no popup but the exempt ones.`);
      if (!await confirmDialog(heldNow ? 'Start a new holdout phase?' : 'Start the holdout?', text, 'Save and start')) return;
    }
    const w = await putSettings(body);
    if (!w.ok) {
      let first = null;
      for (const fe of w.body?.error?.fields || []) {
        const [el, id] = inputs[fe.field] || [];
        if (!el) continue;
        el.closest('.field').append(h('p', { class: 'field-error', id: id + '-err' }, fe.message));
        el.setAttribute('aria-invalid', 'true');
        el.setAttribute('aria-describedby', `${id}-help ${id}-err`);
        first = first || el;
      }
      if (first) return first.focus();
      return setKids(out, alertBox('Settings: ' + errorText(w)));
    }
    input.value = w.body.reporting_time_zone;
    gap.value = w.body.min_gap_seconds; cap.value = w.body.daily_cap; held.value = w.body.holdout_percent;
    setKids(out, alertBox(`Saved: results are counted in the days of ${w.body.reporting_time_zone}; ${pacingText(w.body)}; global holdout: ${holdoutText(w.body)}.`, 'info'));
    heldNow = w.body.holdout_percent;
    dropListStats();
  });
  setKids(box, h('p', {}, 'Settings of the whole team. Changes are logged with the operator.'), form);
}
