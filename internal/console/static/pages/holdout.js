// The global holdout's results (#/holdout?phase=n): do the popups help at all?
import { h, notAvailable, errorText, fmtTime, zoneName, pct, interval, pValue } from '../lib.js';
import { holdoutResults } from '../api/holdout.js';
import { can, nav } from '../state.js';
import { screen, alertBox } from '../ui.js';
import { fmtNum, points, pointsInterval, intervalChart } from '../figures.js';

// holdoutScreen: one phase of the global holdout (docs/CONTRACT.md §15), the latest by default:
// for every goal, the users the holdout kept from the popups against the others, with what the
// popups add (difference and lift, with their intervals) in plain words first; whether the split
// matches the percentage; the phases, the setting's history. Every operator reads it; an admin
// changes the share in Settings.
export async function holdoutScreen(qs) {
  const seq = nav.seq;
  const phase = new URLSearchParams(qs || '').get('phase') || '';
  const r = await holdoutResults(phase);
  if (seq !== nav.seq) return;
  const title = 'Global holdout';
  const where = can('admin') ? h('a', { href: '#/settings' }, 'Settings') : 'Settings (an admin’s)';
  if (!r.ok) {
    if (r.body?.error?.code === 'holdout_missing') {
      return screen(title, h('div', { class: 'alert info', role: 'status', id: 'holdout-none' },
        'No holdout has run yet. A holdout keeps a share of all users from every popup (but service notices) so that comparing them with the others says whether the popups help at all; it is set in ', where, '.'));
    }
    return screen(title, alertBox('Holdout results: ' + errorText(r), r.status === 404 && !notAvailable(r) ? 'info' : 'error'));
  }
  const b = r.body;
  const groups = b.groups || [];
  const [held, others] = groups;
  const o = b.options || {};
  const srm = b.srm || {};
  const exposed = groups.reduce((n, g) => n + (g.exposed_users || 0), 0);

  const sel = h('select', { id: 'holdout-phase', name: 'phase' }, (b.phases || []).map((p) => h('option', { value: p.phase, selected: p.phase === b.phase },
    `Phase ${p.phase}: ${p.percent}%${p.running ? ' (running)' : ''}`)));
  sel.addEventListener('change', () => { location.hash = '#/holdout?phase=' + sel.value; });
  const picker = (b.phases || []).length > 1 ? h('form', { class: 'filters', 'aria-label': 'Phase of the holdout', novalidate: true },
    h('div', { class: 'field inline' }, h('label', { for: 'holdout-phase' }, 'Phase'), sel),
    h('p', { class: 'help' }, 'Another percentage starts a new phase, counted from zero.')) : null;
  const meta = h('p', { id: 'holdout-meta' }, `Phase ${b.phase}: ${b.percent}% of users held out, `,
    h('span', { class: 'badge ' + (b.running ? 'running' : 'ended') }, b.running ? 'running' : 'ended'),
    ` since ${fmtTime(b.started_at)} (set by ${b.started_by})`, b.ended_at ? `, until ${fmtTime(b.ended_at)} (${b.ended_by})` : '', ` (times in ${zoneName}). The share is set in `, where, '.');

  const dof = `${srm.df ?? '—'} degree${srm.df === 1 ? '' : 's'} of freedom`;
  const srmBox = srm.alarm
    ? h('div', { class: 'alert error srm-alarm', role: 'alert', id: 'srm' },
      h('p', {}, h('strong', {}, 'Sample-ratio mismatch: do not trust these results.')),
      h('p', {}, `The users held out are not ${b.percent}% of the users exposed (χ² ${fmtNum(srm.chi_square)}, ${dof}, p ${pValue(srm.p)}; the alarm is at p below ${o.srm_alpha ?? 0.001}). Users are lost or double-counted in one group.`))
    : h('div', { class: 'alert info', role: 'status', id: 'srm' }, exposed === 0
      ? 'Sample ratio: no data yet. Nobody has been exposed in this phase.'
      : `Sample ratio: OK. The users held out match the ${b.percent}% (χ² ${fmtNum(srm.chi_square)}, ${dof}, p ${pValue(srm.p)}).`);

  const goals = (others?.goals || []).map((g, k) => ({ key: g.goal, held: held.goals[k], others: g }));
  // the words and the interval they quote are the API's (effects: docs/CONTRACT.md §15 "Results")
  const effects = new Map((b.effects || []).map((e) => [e.goal, e]));
  const said = (g) => effects.get(g.key)?.summary || `${g.key}: not enough data yet.`;
  const td = (v, cls = 'num') => h('td', { class: cls }, v);
  const ci = (v) => td(v, 'num ci');
  const money = (v) => (v === null || v === undefined ? '—' : Number(v).toFixed(2));
  const tables = goals.map((g) => {
    const sum = g.others.mean_value !== null && g.others.mean_value !== undefined;
    const cols = ['Group', 'Exposed users', 'Converted users', 'Conversion rate', 'Rate 95% interval', 'Difference (points)', 'Difference interval (points)',
      'Lift', 'Lift interval', 'Sequential p', ...(sum ? ['Value per user', 'Value difference'] : [])];
    return h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-labelledby': 'holdout-goal-h-' + g.key },
      h('h3', { id: 'holdout-goal-h-' + g.key }, g.key),
      h('table', { id: 'holdout-goal-' + g.key, class: 'results' },
        h('caption', {}, `Goal ${g.key}: the others (not held out, shown a popup) against the users held out (95% intervals)`),
        h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, groups.map((grp, i) => {
          const x = i === 0 ? g.held : g.others;
          return h('tr', { 'data-group': grp.group },
            h('th', { scope: 'row' }, grp.group, i === 0 ? h('span', { class: 'badge' }, ' baseline') : null),
            td(fmtNum(grp.exposed_users)), td(fmtNum(x.converted_users)), td(pct(x.rate)), ci(interval(x.rate_ci)),
            td(points(x.difference, true)), ci(pointsInterval(x.difference_ci)), td(pct(x.lift, true)), ci(interval(x.lift_ci, true)), td(pValue(x.sequential_p)),
            ...(sum ? [td(money(x.mean_value)), td(money(x.mean_value_difference))] : []));
        }))));
  });
  const liftRows = goals.filter((g) => Array.isArray(g.others.lift_ci) && g.others.lift !== null).map((g) => ({ label: g.key, est: g.others.lift, lo: g.others.lift_ci[0], hi: g.others.lift_ci[1] }));

  screen(title, meta, picker,
    h('section', { class: 'card results-summary', 'aria-labelledby': 'holdout-summary-h' }, h('h2', { id: 'holdout-summary-h' }, 'Do the popups help?'),
      goals.length ? h('ul', { id: 'holdout-summary' }, goals.map((g) => h('li', { 'data-goal': g.key }, said(g))))
        : h('p', { id: 'holdout-summary' }, 'There are no goals yet: create one (Goals) and send conversions to compare the groups.'),
      h('table', { id: 'holdout-groups', class: 'results' }, h('caption', {}, `Groups of phase ${b.phase}`),
        h('thead', {}, h('tr', {}, ['Group', 'Share', 'Exposed users', 'Exposures'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, groups.map((g) => h('tr', { 'data-group': g.group }, h('th', { scope: 'row' }, g.group === 'holdout' ? 'held out' : 'others (not held out, shown a popup)'),
          td(g.percent + '%'), td(fmtNum(g.exposed_users)), td(fmtNum(g.exposures))))))),
    srmBox,
    liftRows.length ? intervalChart('holdout-lift', 'Lift of the popups on each goal (the others against the users held out), with its 95% interval; 0 is no effect', liftRows, true) : null,
    goals.length ? h('section', { id: 'holdout-goals', 'aria-labelledby': 'holdout-goals-h' }, h('h2', { id: 'holdout-goals-h' }, 'Goals'), ...tables) : null,
    h('p', { class: 'help' }, 'A user counts in a group from the first time the popups would have reached them in the phase (a user held out: the popup they would have been shown; the others: a popup shown). A conversion counts within the goal’s window after that; a user converts once per goal. “Confident” means the always-valid interval of the difference excludes 0, so it may be read at any time.'));
}
