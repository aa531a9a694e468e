// The popup form's Display rules section: when a user sees the popup again after an impression,
// a click or a close, the most impressions per user, and the exemptions from the team's pacing
// and from the global holdout.
import { h } from '../../lib.js';
import { field, numInput, numberOf, durationField } from '../../form.js';

export function rulesSection() {
  const dur = {
    reshow: durationField('f-reshow', 'reshow_after_seconds', 'Show again after', 'After an impression, hidden from that user this long. Empty: 1 day.', false),
    click: durationField('f-click', 'click_cooldown_seconds', 'After a click, hide for', 'Empty: 0, shown again at the next reshow.', true),
    close: durationField('f-close', 'close_cooldown_seconds', 'After a close, hide for', 'Empty: the same as “Show again after”.', true),
  };
  const maxImpressions = numInput('max_impressions');
  const exempt = h('input', { type: 'checkbox', id: 'f-exempt', name: 'exempt_from_caps', 'data-field': 'exempt_from_caps', 'aria-describedby': 'f-exempt-help' });
  const holdoutExempt = h('input', { type: 'checkbox', id: 'f-holdout-exempt', name: 'holdout_exempt', 'data-field': 'holdout_exempt', 'aria-describedby': 'f-holdout-exempt-help' });
  const el = h('fieldset', {}, h('legend', {}, 'Display rules'),
    dur.reshow.el, dur.click.el, dur.close.el,
    field('f-maximp', 'Maximum impressions per user', maxImpressions, '0: unlimited.'),
    h('div', { class: 'field' }, h('label', { class: 'check', for: 'f-exempt' }, exempt, ' Exempt from the team’s pacing'),
      h('p', { class: 'help', id: 'f-exempt-help' }, 'Shown even within the minimum gap after another popup and past the daily cap (Settings): for service notices and outage messages.')),
    h('div', { class: 'field' }, h('label', { class: 'check', for: 'f-holdout-exempt' }, holdoutExempt, ' Exempt from the global holdout'),
      h('p', { class: 'help', id: 'f-holdout-exempt-help' }, 'Shown to the users the global holdout keeps from every other popup (Settings, Holdout): only for service notices, since what they see is not measured.')));
  return {
    el,
    load(p) {
      dur.reshow.set(p.reshow_after_seconds); dur.click.set(p.click_cooldown_seconds); dur.close.set(p.close_cooldown_seconds);
      maxImpressions.value = p.max_impressions ?? '';
      exempt.checked = !!p.exempt_from_caps;
      holdoutExempt.checked = !!p.holdout_exempt;
    },
    // read gives the durations in seconds (adding to problems one that is no number), the most
    // impressions, and the two exemptions as checked
    read(problems) {
      const seconds = {};
      for (const [k, name] of [['reshow', 'reshow_after_seconds'], ['click', 'click_cooldown_seconds'], ['close', 'close_cooldown_seconds']]) {
        const d = dur[k].read();
        if (d.error) problems.push({ field: name, message: d.error });
        seconds[name] = d.seconds;
      }
      return { seconds, max_impressions: numberOf(maxImpressions), exempt_from_caps: exempt.checked, holdout_exempt: holdoutExempt.checked };
    },
  };
}
