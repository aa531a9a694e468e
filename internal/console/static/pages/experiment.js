// An experiment's results (#/popups/:id/experiment?phase=n): the verdict and its actions first,
// the goals, then every count and interval for statisticians, and a row per day and arm.
import { h, notAvailable, errorText, fmtTime, zoneName, pct, interval, pValue } from '../lib.js';
import { getPopup } from '../api/popups.js';
import { experimentResults } from '../api/experiments.js';
import { can, nav, reroute } from '../state.js';
import { setKids, toast, screen, alertBox } from '../ui.js';
import { fmtInt, fmtNum, points, pointsInterval, intervalRows, intervalChart } from '../figures.js';
import { TRANSITIONS, experimentTransition } from './popup/review.js';

// goalsSection shows each goal's results per arm (docs/CONTRACT.md §14): converted users, the
// rate per exposed user and its comparison with the goal baseline, and a sum goal's mean value
// per user, as a table, and the rate and the difference with their intervals as charts; null when
// the results have no goal.
function goalsSection(b, arms, td, ci) {
  const keys = (arms[0]?.goals || []).map((g) => g.goal);
  if (!keys.length) return null;
  const base = b.goal_baseline;
  const money = (v) => (v === null || v === undefined ? '—' : Number(v).toFixed(2));
  const moneyIv = (iv) => (Array.isArray(iv) ? `[${money(iv[0])}, ${money(iv[1])}]` : '—');
  const tables = keys.map((key, k) => {
    const sum = arms.some((a) => a.goals[k].mean_value !== null && a.goals[k].mean_value !== undefined);
    // a goal with a value cap: the raw sum and the sum with each user's value capped, side by side
    const capped = arms.some((a) => a.goals[k].value_sum_capped !== null && a.goals[k].value_sum_capped !== undefined);
    const cols = ['Arm', 'Exposed users', 'Converted users', 'Conversion rate', 'Rate 95% interval', `Difference vs ${base} (points)`,
      'Difference interval (points)', `Lift vs ${base}`, 'Adjusted p', 'Sequential p', ...(sum ? ['Value per user', 'Value interval', `Value difference vs ${base}`, 'Value difference interval'] : []),
      ...(capped ? ['Value sum', 'Value sum, each user capped'] : [])];
    const primary = key === b.primary_goal;
    // the goal's charts, drawn as the click-through rate's: the rate, and the difference from the
    // baseline, each with its interval; the table above is their text equivalent
    const rateRows = intervalRows(arms, (a) => [a.goals[k].rate, a.goals[k].rate_ci]);
    const diffRows = intervalRows(arms, (a) => [a.goals[k].difference, a.goals[k].difference_ci]);
    const charts = rateRows.length || diffRows.length ? h('div', { class: 'charts', id: 'goal-charts-' + key },
      rateRows.length ? intervalChart(`chart-goal-${key}-rate`, `Goal ${key}: conversion rate by arm, with its 95% interval`, rateRows, false) : null,
      diffRows.length ? intervalChart(`chart-goal-${key}-diff`, `Goal ${key}: difference from the baseline (${base}), with its interval; 0 is no difference`, diffRows, true) : null) : null;
    return [h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-labelledby': 'goal-h-' + key },
      h('h3', { id: 'goal-h-' + key }, key, primary ? h('span', { class: 'badge running' }, ' primary goal: decides the verdict') : null),
      h('table', { id: 'goal-table-' + key, class: 'results' },
        h('caption', {}, `Goal ${key} by arm, against ${base} (95% intervals, Bonferroni-corrected over the comparisons)`),
        h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, arms.map((a) => {
          const g = a.goals[k];
          return h('tr', { 'data-arm': a.key },
            h('th', { scope: 'row' }, a.key, a.key === base ? h('span', { class: 'badge' }, ' baseline') : null),
            td(fmtNum(a.exposed_users)), td(fmtNum(g.converted_users)), td(pct(g.rate)), ci(interval(g.rate_ci)),
            td(points(g.difference, true)), ci(pointsInterval(g.difference_ci)), td(pct(g.lift, true)),
            td(pValue(g.p_adjusted)), td(pValue(g.sequential_p)),
            ...(sum ? [td(money(g.mean_value)), ci(moneyIv(g.mean_value_ci)), td(money(g.mean_value_difference)), ci(moneyIv(g.mean_value_difference_ci))] : []),
            ...(capped ? [td(money(g.value_sum)), td(money(g.value_sum_capped))] : []));
        })))), charts];
  });
  return h('section', { id: 'goals', 'aria-labelledby': 'goals-h' }, h('h2', { id: 'goals-h' }, 'Goals'),
    b.primary_goal ? h('p', { id: 'goals-primary' }, `The verdict is decided on goal ${b.primary_goal}, not on clicks.`) : null,
    ...tables.flat(),
    h('p', { class: 'help' }, `A user counts as converted once per goal, when a conversion came within the goal's window after their first exposure. Every arm is compared with ${base}; a control that shows nothing has conversions too, so its difference says whether the popup helps at all. Each goal's charts show the numbers of its table, which is their text equivalent.`));
}

// experimentScreen: an experiment's results for one phase (default the current one): the arms
// with their intervals, as a table and as an interval chart, the sample-ratio check, the verdict
// and why, and a row per UTC day and arm.
export async function experimentScreen(id, qs) {
  const seq = nav.seq;
  const phase = new URLSearchParams(qs || '').get('phase') || '';
  const [pr, rr] = await Promise.all([
    getPopup(id),
    experimentResults(id, phase),
  ]);
  if (seq !== nav.seq) return;
  const p = pr.ok ? pr.body : null;
  const back = h('p', {}, h('a', { href: '#/popups/' + id }, `← Popup #${id}${p ? ' ' + p.name : ''}`));
  const title = `Experiment results: ${p ? p.name : 'popup'} (#${id})`;
  const phases = Math.max(p?.experiment?.phase || 0, rr.ok ? rr.body.phase : 0, Number(phase) || 0);
  const sel = h('select', { id: 'phase-select', name: 'phase' },
    Array.from({ length: phases }, (_, i) => phases - i).map((n) => h('option', { value: n, selected: (rr.ok ? rr.body.phase : Number(phase)) === n }, `Phase ${n}${n === p?.experiment?.phase ? ' (current)' : ''}`)));
  sel.addEventListener('change', () => { location.hash = `#/popups/${id}/experiment?phase=${sel.value}`; });
  const picker = phases > 1 ? h('form', { class: 'filters', 'aria-label': 'Phase of the experiment', novalidate: true },
    h('div', { class: 'field inline' }, h('label', { for: 'phase-select' }, 'Phase'), sel),
    h('p', { class: 'help' }, 'A change of the arms starts a new phase: every user is assigned afresh and counted again.')) : null;
  if (!rr.ok) {
    const msg = rr.status === 404 && !notAvailable(rr) ? (p && !p.experiment ? 'This popup has no experiment.' : 'Results: ' + errorText(rr)) : 'Results: ' + errorText(rr);
    return screen(title, back, picker, alertBox(msg, rr.status === 404 ? 'info' : 'error'));
  }
  const b = rr.body;
  const o = b.options || {};
  const arms = b.arms || [];
  const srm = b.srm || {};
  const verdict = b.verdict || {};
  const baselineName = b.baseline === 'control' ? 'the control' : `variant ${b.baseline}`;
  const exposed = arms.reduce((n, a) => n + (a.exposed_users || 0), 0);

  const dof = `${srm.df ?? '—'} degree${srm.df === 1 ? '' : 's'} of freedom`;
  const srmBox = srm.alarm
    ? h('div', { class: 'alert error srm-alarm', role: 'alert', id: 'srm' },
      h('p', {}, h('strong', {}, 'Sample-ratio mismatch: do not trust these results.')),
      h('p', {}, `The exposed users of the arms do not match their weights (χ² ${fmtNum(srm.chi_square)}, ${dof}, p ${pValue(srm.p)}; the alarm is at p below ${o.srm_alpha ?? 0.001}). Users are lost or double-counted in some arm: look for a client that drops the popup, a filter, or a change of weights within the phase.`))
    : (exposed === 0
      ? h('div', { class: 'alert info', role: 'status', id: 'srm' }, 'Sample ratio: no data yet. Nobody has been exposed in this phase, so there is nothing to check.')
      : h('div', { class: 'alert info', role: 'status', id: 'srm' },
        `Sample ratio: OK. The exposed users match the weights (χ² ${fmtNum(srm.chi_square)}, ${dof}, p ${pValue(srm.p)}; an alarm below ${o.srm_alpha ?? 0.001}).`));
  // The verdict (the API's one reading of the results: docs/CONTRACT.md §10 "The verdict") says
  // everything about the decision: the summary, the winner, why, and what Conclude offers.
  const metric = verdict.metric && verdict.metric !== 'clicks' ? `goal ${verdict.metric}` : 'clicks';
  const verdictBox = h('div', { id: 'verdict', class: 'verdict-box ' + (verdict.winner ? 'winner' : 'none'), 'data-metric': verdict.metric || 'clicks' },
    h('p', { class: 'verdict' }, verdict.winner ? `Winner on ${metric}: ${verdict.winner === 'control' ? 'the control' : `variant “${verdict.winner}”`}` : `No winner on ${metric}`),
    h('p', { id: 'verdict-why' }, 'Why: ' + (verdict.why || verdict.reason || '')));

  // the plain summary first, with the decision's actions beside it; the statistician's table below
  const mayAct = p?.experiment && (p.status === 'draft' ? can('edit_drafts') : can('publish'));
  const st = p?.experiment?.status;
  const act = async (kind) => {
    const r = await experimentTransition(kind, p, pr.etag);
    if (!r) return;
    if (!r.ok) {
      const msg = r.status === 412 ? `${TRANSITIONS[kind].doing} refused: the popup was changed by someone else since this page loaded. Nothing was written; the page shows the newer version now.` : `${TRANSITIONS[kind].doing} failed: ${errorText(r)}`;
      toast(msg);
      return reroute();
    }
    toast(TRANSITIONS[kind].done(r.body));
    reroute();
  };
  const actions = mayAct && b.phase === p.experiment.phase && (st === 'running' || st === 'stopped') ? h('div', { class: 'actions', id: 'results-actions' },
    verdict.winner && verdict.winner !== 'control' ? h('button', { type: 'button', id: 'results-conclude', onclick: () => act('conclude') }, `Conclude and ship “${verdict.winner}”…`)
      : h('button', { type: 'button', id: 'results-conclude', class: 'secondary', onclick: () => act('conclude') }, 'Conclude and ship a variant…'),
    st === 'running' ? h('button', { type: 'button', class: 'secondary', id: 'results-stop', onclick: () => act('stop') }, 'Stop the experiment…') : null) : null;
  const earlier = phases > 1 && b.phase === p?.experiment?.phase ? h('div', { id: 'earlier-verdicts' }, h('p', { class: 'muted' }, 'Reading the earlier phases…')) : null;
  if (earlier) earlierVerdicts(id, b.phase, earlier);

  // the summary's table is the verdict's metric, against the verdict's baseline
  const onGoal = verdict.metric && verdict.metric !== 'clicks';
  const vbase = verdict.baseline || b.baseline;
  const gk = onGoal ? (arms[0]?.goals || []).findIndex((g) => g.goal === verdict.metric) : -1;
  const row = (a) => (gk >= 0 ? { users: a.goals[gk].converted_users, rate: a.goals[gk].rate, difference: a.goals[gk].difference, lift: a.goals[gk].lift }
    : { users: a.clicked_users, rate: a.ctr, difference: a.difference, lift: a.lift });
  const summaryRows = h('table', { id: 'summary-table', class: 'results', 'data-metric': onGoal ? verdict.metric : 'clicks' },
    h('caption', {}, `Each arm of phase ${b.phase} against ${vbase === 'control' ? 'the control' : `variant ${vbase}`}, on ${onGoal ? `goal ${verdict.metric}` : 'clicks'}`),
    h('thead', {}, h('tr', {}, ['Arm', 'Users', onGoal ? 'Converted' : 'Clicked', onGoal ? 'Conversion rate' : 'Click rate', `Difference (points)`, 'Lift'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, arms.map((a) => { const x = row(a); return h('tr', { 'data-arm': a.key, class: verdict.winner === a.key ? 'chosen' : '' },
      h('th', { scope: 'row' }, a.key, a.key === vbase ? h('span', { class: 'badge' }, ' baseline') : null),
      h('td', { class: 'num' }, fmtInt(a.exposed_users)), h('td', { class: 'num' }, fmtInt(x.users)), h('td', { class: 'num' }, pct(x.rate)),
      h('td', { class: 'num' }, points(x.difference, true)), h('td', { class: 'num' }, pct(x.lift, true))); })));

  const cols = ['Arm', 'Weight', 'Exposed users', 'Clicked users', 'CTR', 'CTR 95% interval', `Difference vs ${b.baseline} (points)`, 'Difference interval (points)',
    `Lift vs ${b.baseline}`, 'Lift interval', 'Adjusted p', 'Sequential p', 'Exposures', 'Clicks', 'Closes'];
  const td = (v, cls = 'num') => h('td', { class: cls }, v);
  const ci = (v) => td(v, 'num ci');
  const table = h('table', { id: 'arms-table', class: 'results' },
    h('caption', {}, `Arms of phase ${b.phase}: users, click-through rate and the comparison with the baseline, ${baselineName} (95% intervals, Bonferroni-corrected over the comparisons)`),
    h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, arms.map((a) => h('tr', { 'data-arm': a.key, class: verdict.winner === a.key ? 'chosen' : '' },
      h('th', { scope: 'row' }, a.key, a.key === b.baseline ? h('span', { class: 'badge' }, ' baseline') : null, verdict.winner === a.key ? h('span', { class: 'badge running' }, ' winner') : null),
      td(a.weight + '%'), td(fmtNum(a.exposed_users)), td(fmtNum(a.clicked_users)), td(pct(a.ctr)), ci(interval(a.ctr_ci)),
      td(points(a.difference, true)), ci(pointsInterval(a.difference_ci)), td(pct(a.lift, true)), ci(interval(a.lift_ci, true)),
      td(pValue(a.p_adjusted)), td(pValue(a.sequential_p)), td(fmtNum(a.exposures)), td(fmtNum(a.clicks)), td(fmtNum(a.closes))))));

  const ctrRows = intervalRows(arms, (a) => [a.ctr, a.ctr_ci]);
  const diffRows = intervalRows(arms, (a) => [a.difference, a.difference_ci]);
  const charts = h('div', { class: 'charts' },
    ctrRows.length ? intervalChart('chart-ctr', 'Click-through rate by arm, with its 95% interval', ctrRows, false) : null,
    diffRows.length ? intervalChart('chart-diff', `Difference from the baseline (${b.baseline}), with its interval; 0 is no difference`, diffRows, true) : null);

  // Days are the team's reporting zone's (the API's default); a day counted before days followed a
  // zone is a UTC day and says so on its row (docs/CONTRACT.md §10 "Results").
  const days = b.days || [];
  const dayZone = b.time_zone || 'UTC';
  const utcBefore = days.filter((d) => d.time_zone && d.time_zone !== dayZone).length;
  const dayTable = days.length ? h('table', { id: 'days-table' },
    h('caption', {}, `Per day of ${dayZone} (the team's reporting time zone) and arm: users first exposed or first clicking that day, so the days sum to the totals`),
    h('thead', {}, h('tr', {}, [`Day (${dayZone})`, 'Arm', 'Exposed users', 'Exposures', 'Clicked users', 'Clicks', 'Closes'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, days.map((d) => h('tr', { 'data-day': d.day, 'data-arm': d.arm, 'data-zone': d.time_zone || dayZone },
      h('th', { scope: 'row' }, d.day, d.time_zone && d.time_zone !== dayZone ? h('span', { class: 'badge' }, ` ${d.time_zone} day`) : null),
      h('td', {}, d.arm), td(fmtNum(d.exposed_users)), td(fmtNum(d.exposures)), td(fmtNum(d.clicked_users)), td(fmtNum(d.clicks)), td(fmtNum(d.closes))))))
    : h('p', { class: 'muted' }, 'No day has data yet.');
  const dayNote = utcBefore ? h('p', { class: 'help', id: 'days-utc-note' }, `Rows marked “UTC day” were counted before days followed the reporting time zone: they are UTC days and cannot be split into ${dayZone} days.`) : null;

  const goalsBox = goalsSection(b, arms, td, ci);

  screen(title, back,
    h('p', { id: 'experiment-meta' }, `Phase ${b.phase}, `, h('span', { class: 'badge ' + b.status }, b.status),
      `; first run ${fmtTime(b.phase_started_at)}, planned end ${fmtTime(b.planned_end_at)} (times in ${zoneName}).`),
    picker,
    h('section', { class: 'card results-summary', 'aria-labelledby': 'summary-h' }, h('h2', { id: 'summary-h' }, 'Summary'),
      h('p', { id: 'summary', class: 'summary' }, verdict.summary || ''), actions, earlier,
      h('div', { class: 'table-wrap' }, summaryRows)),
    srmBox, verdictBox, goalsBox,
    h('details', { id: 'statistics', class: 'statistics' }, h('summary', {}, 'For statisticians: intervals, p-values and every count'),
      h('section', { 'aria-labelledby': 'arms-h' }, h('h2', { id: 'arms-h' }, 'Arms'),
        // a wide table scrolls sideways: focusable, so the keyboard can scroll it too
        h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-labelledby': 'arms-h' }, table),
        h('p', { class: 'help' }, `A user counts once per arm: CTR is clicked users / exposed users (Wilson interval). Differences are in percentage points (5.00% against 4.00% is +1.00 points); lift is relative. The baseline is ${baselineName}; “—” where a number is not defined (a control that shows nothing has no CTR). Sequential p stays valid however often you look; adjusted p (Bonferroni) is the fixed-horizon test's, for after the planned end. Minimum sample: ${o.min_exposed ?? '?'} exposed users and ${o.min_clicks ?? '?'} clicks per arm; α ${o.alpha ?? '?'}. Assignment salt `, h('code', {}, b.salt || '—'), '.')),
      h('section', { 'aria-labelledby': 'chart-h' }, h('h2', { id: 'chart-h' }, 'Intervals'), charts,
        h('p', { class: 'help' }, 'The charts show the numbers of the Arms table, which is their text equivalent.'))),
    h('section', { 'aria-labelledby': 'days-h' }, h('h2', { id: 'days-h' }, 'Per day'), h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-labelledby': 'days-h' }, dayTable), dayNote));
}

// earlierVerdicts shows what each earlier phase of the experiment concluded, newest first: a
// new phase ends the current verdict, but what the earlier ones found stays readable.
async function earlierVerdicts(id, phase, box) {
  const rs = await Promise.all(Array.from({ length: phase - 1 }, (_, i) => phase - 1 - i).map((n) => experimentResults(id, n).then((r) => [n, r])));
  setKids(box, h('h3', {}, 'Earlier phases'), h('ul', {}, rs.map(([n, r]) => h('li', { 'data-phase': n },
    h('a', { href: `#/popups/${id}/experiment?phase=${n}` }, `Phase ${n}`), ': ',
    !r.ok ? 'cannot be read now' : (r.body.verdict?.winner ? `variant “${r.body.verdict.winner}” won` : 'no winner'),
    r.ok ? ` (${fmtInt((r.body.arms || []).reduce((k, a) => k + (a.exposed_users || 0), 0))} users)` : ''))));
}
