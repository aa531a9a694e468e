// The reviews a popup's writes open before they are made: an experiment's start, stop or
// conclude, the choice of a new phase when an edit changes the arms, and the warning that an edit
// ends a concluded experiment. Shared by the editor, its history and the experiment results page.
import { h, uid, diff, isLive } from '../../lib.js';
import { experimentResults, transitionExperiment } from '../../api/experiments.js';
import { fmtInt } from '../../figures.js';
import { confirmDialog } from '../../ui.js';

// phaseChoice is the part of a review of a change that starts a new phase: the verdict of the
// phase it ends (results: its results answer), what each choice does, and how many of the
// users the phase counted keeping the assignment moves (moves: the reassignment answer,
// counted by the API user by user).
export function phaseChoice(e, results, moves) {
  const name = uid('phase');
  const w = results?.ok ? results.body.verdict?.winner : null;
  const verdict = !results?.ok ? `The results of phase ${e.phase} cannot be read now; they are kept.`
    : (w ? `Phase ${e.phase}'s verdict ends: it names ${w === 'control' ? 'the control' : `variant “${w}”`} the winner. It stays readable on the results page, and Conclude still offers it.`
      : `Phase ${e.phase} names no winner so far (${(results.body.verdict?.reason || 'no verdict').replace('_', ' ')}); its results are kept.`);
  const moved = moves?.ok ? `${fmtInt(moves.body.moved_users)} of the ${fmtInt(moves.body.exposed_users)} users counted so far move to another arm` : 'the users whose bucket now falls in another arm move to it';
  const el = h('fieldset', { id: 'phase-choice' },
    h('legend', {}, `This change starts phase ${e.phase + 1} of the experiment`),
    h('p', { id: 'phase-warning', class: 'alert warn' }, `The arms, weights, content or control change: in a new phase every user is assigned afresh and the results start again from zero (phase ${e.phase}'s results are kept).`),
    h('p', { id: 'phase-verdict', class: w ? 'alert warn' : 'muted' }, verdict),
    h('label', { class: 'check block' }, h('input', { type: 'radio', name, value: 'new', id: 'phase-new', checked: true }), ` Start phase ${e.phase + 1}: a new assignment, the results start again`),
    h('label', { class: 'check block' }, h('input', { type: 'radio', name, value: 'keep', id: 'phase-keep', 'aria-describedby': 'phase-keep-help' }), ' Keep current assignment (moves users; audited)'),
    h('p', { class: 'help', id: 'phase-keep-help' }, `Stays in phase ${e.phase}: ${moved}, and the results of phase ${e.phase} mix both versions. The audit log records the write as a reassignment.`));
  return { el, keep: () => el.querySelector('#phase-keep').checked };
}

// transitionReview is the review of a start or a stop (confirmDialog's arguments): what it does to
// whom, the arms it assigns, and, for a popup that is a draft, that nobody sees it until it is
// published.
function transitionReview(kind, p) {
  const e = p.experiment;
  const live = isLive(p.status);
  const reach = p.status === 'draft' ? 'This popup is a draft: nobody sees it, so nobody is assigned or counted until it is published.'
    : (p.status === 'paused' ? 'This popup is paused: nobody is assigned until it is resumed.' : 'Every instance applies it within 2 seconds.');
  if (kind === 'stop') {
    return ['Stop the experiment?', `Nobody is assigned any more: every user gets the popup's own content. The results are kept; it may start again in the same phase. ${live ? 'Every instance applies it within 2 seconds.' : ''}`, 'Stop the experiment', null];
  }
  const arms = [...e.variants.map((v) => [`variant “${v.key}”`, v.weight, v.title || '']), ...(e.control ? [[`control (${e.control.mode === 'fall_through' ? 'falls through to the next popup' : 'gets nothing'})`, e.control.weight, '']] : [])];
  const table = h('table', { id: 'start-arms' }, h('caption', {}, `The arms of phase ${e.phase}, over ${e.coverage_percent ?? 100}% of the popup's users`),
    h('thead', {}, h('tr', {}, ['Arm', 'Weight', 'Title'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, arms.map(([a, w, t]) => h('tr', {}, h('th', { scope: 'row' }, a), h('td', { class: 'num' }, `${w}%`), h('td', {}, t)))));
  return [e.status === 'stopped' ? 'Start the experiment again?' : 'Start the experiment?',
    `Users are assigned an arm for good and counted from now on. ${reach}`, e.status === 'stopped' ? 'Start again' : 'Start',
    h('div', {}, h('p', { class: p.status === 'draft' ? 'alert info' : 'muted', id: 'start-reach' }, reach), table)];
}

// TRANSITIONS name the experiment's transitions for the messages of the pages that make them.
export const TRANSITIONS = {
  start: { doing: 'Starting the experiment', done: () => 'Experiment started.' },
  stop: { doing: 'Stopping the experiment', done: () => 'Experiment stopped.' },
  conclude: { doing: 'Concluding the experiment', done: (p) => `Concluded: variant “${p?.experiment?.concluded_variant ?? ''}” is the popup's content now.` },
};

// experimentTransition reviews a start, stop or conclude of popup p's experiment (as a publish is
// reviewed) and, confirmed, makes it on the version etag names; null when cancelled.
export async function experimentTransition(kind, p, etag) {
  let payload;
  if (kind === 'conclude') {
    const review = await concludeReview(p);
    if (!await confirmDialog(...review.dialog)) return null;
    payload = { variant: review.chosen() };
  } else if (!await confirmDialog(...transitionReview(kind, p))) return null;
  return transitionExperiment(p.id, kind, payload, etag);
}

// concludeReview is the review of a conclude of popup p's experiment: the variant to ship, the
// winner of the latest phase whose results named one offered first, with that phase. Nothing is
// pre-selected when no phase named a variant: the page never suggests a loser.
async function concludeReview(p) {
  const e = p.experiment;
  let found = null;
  let latest = null; // the current phase's results
  for (let n = e.phase; n >= 1 && !found; n--) {
    const r = await experimentResults(p.id, n);
    if (!r.ok) break;
    latest = latest || r.body;
    const w = r.body.verdict?.winner;
    if (w && e.variants.some((v) => v.key === w)) found = { key: w, phase: n };
  }
  const reason = (latest?.verdict?.reason || 'no verdict').replace('_', ' ');
  const said = !latest ? 'The results cannot be read now: choose the variant yourself.'
    : (found && found.phase === e.phase ? `The results of phase ${e.phase} name variant “${found.key}” the winner.`
      : (found ? `Phase ${found.phase} named variant “${found.key}” the winner; the current phase ${e.phase} names none yet (${reason}).`
        : `The results of phase ${e.phase} name no winner (${reason}), nor does an earlier phase: choose the variant yourself.`));
  const name = uid('conclude');
  const pick = h('fieldset', { id: 'conclude-choice' }, h('legend', {}, 'The variant to ship'),
    h('p', { class: 'help', id: 'conclude-verdict' }, said),
    e.variants.map((v) => h('label', { class: 'check block' },
      h('input', { type: 'radio', name, value: v.key, required: true, checked: v.key === found?.key }), ` ${v.key}`, v.title ? ` “${v.title}”` : '',
      v.key === found?.key ? ` (the winner of phase ${found.phase})` : '')));
  const live = isLive(p.status) ? ' Every instance serves it within 2 seconds.' : '';
  return {
    dialog: ['Conclude the experiment?', `The chosen variant's content (title, content, image, link, buttons and ext) becomes the popup's own, for every user; the experiment ends and becomes read-only, its results kept.${live}`, 'Conclude and ship', pick],
    chosen: () => pick.querySelector('input:checked')?.value,
  };
}

// CONTENT_FIELDS are the popup's own content: what a conclude ships (docs/CONTRACT.md §10).
const CONTENT_FIELDS = new Set(['title', 'content', 'image_url', 'image_alt', 'link_url', 'buttons', 'ext']);

// shippedWarning: a write that changes the content a concluded experiment shipped ends the
// experiment (docs/CONTRACT.md §10); the review says so, and the write asks for it
// (end_experiment=true). Null when the write does not.
export function shippedWarning(stored, next) {
  const e = stored?.experiment;
  if (e?.status !== 'concluded' || !next?.experiment) return null;
  if (!diff(stored, next).some((r) => CONTENT_FIELDS.has(r.field.split(/[.[]/)[0]))) return null;
  return h('div', { class: 'alert warn', id: 'shipped-warning' },
    h('p', {}, `This changes the content that variant “${e.concluded_variant}” shipped when the experiment was concluded. `,
      'The concluded experiment is removed with this write, so the popup no longer says a variant shipped while the app shows other content. Its revisions stay in the history.'));
}
