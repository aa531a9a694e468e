// The audit log's changes in words: who did what to which popup, experiment, audience, goal,
// setting, holdout phase, operator or privacy request, without codes, ids or field names.
import { h, fmtSpan } from '../lib.js';
import { fmtInt } from '../figures.js';

// RESOURCES are the picker's choices: the API's resource and its words.
export const RESOURCES = [['all', 'All'], ['popups', 'Popups'], ['experiments', 'Experiments'], ['audiences', 'Audiences'],
  ['goals', 'Goals'], ['settings', 'Settings and pacing'], ['holdout', 'Holdout'], ['operators', 'Operators'], ['privacy', 'Privacy requests']];

// SYSTEM names the actors that are not operators.
const SYSTEM = { '(configuration)': 'The service’s configuration', '(erasure)': 'The erasure job', '(migration)': 'An upgrade' };

// who is the actor in words: "Ana (editor)".
export const who = (e) => SYSTEM[e.actor] || (e.role ? `${e.actor} (${e.role})` : e.actor);

const quoted = (s) => `“${s}”`;
const capital = (s) => (s ? s[0].toUpperCase() + s.slice(1) : s);

// SETTINGS name the settings and say their values in words.
const SETTINGS = {
  reporting_time_zone: ['the reporting time zone', (v) => v],
  min_gap_seconds: ['the minimum gap between two popups', (v) => fmtSpan(Number(v))],
  daily_cap: ['the most popups a user sees a day', (v) => (Number(v) === 0 ? 'no limit' : fmtInt(Number(v)))],
};

const POPUP_DID = { create: 'created', update: 'changed', archive: 'archived', rollback: 'restored an earlier version of', import: 'imported' };
const AUDIENCE_DID = { create: 'created', update: 'renamed or described', replace: 'replaced the members of', add: 'added members to', remove: 'removed members from', delete: 'deleted' };
const GOAL_DID = { create: 'created', update: 'changed', delete: 'deleted' };

// members says an audience change's members: "50,000 members, +1,200 / −300".
function members(e) {
  if (!['replace', 'add', 'remove'].includes(e.action)) return '';
  const moves = [e.added ? '+' + fmtInt(e.added) : null, e.removed ? '−' + fmtInt(e.removed) : null].filter(Boolean);
  return `: ${fmtInt(e.size)} member${e.size === 1 ? '' : 's'}` + (moves.length ? ', ' + moves.join(' / ') : '');
}

// link is the subject's name, linked to its page when it has one.
const link = (href, name) => (href ? h('a', { href }, quoted(name)) : quoted(name));

// describe is a change in words, as nodes: the actor and what they did.
export function describe(e) {
  const did = what(e);
  return [h('strong', {}, who(e)), ' ', ...did];
}

function what(e) {
  const name = e.name || '';
  switch (e.resource) {
    case 'popups':
      return [(POPUP_DID[e.action] || 'changed') + ' popup ', link('#/popups/' + e.popup_id, name || 'without a name')];
    case 'experiments': {
      const exp = link('#/popups/' + e.popup_id + '/experiment', name || 'without a name');
      if (e.action === 'experiment_start') return ['started experiment ', exp];
      if (e.action === 'experiment_stop') return ['stopped experiment ', exp];
      if (e.action === 'experiment_conclude') return ['concluded experiment ', exp, e.after ? ` — variant ${capital(e.after)} wins` : ''];
      return ['changed the split of experiment ', exp, ', moving some users to another variant'];
    }
    case 'audiences':
      return [(AUDIENCE_DID[e.action] || 'changed') + ' audience ',
        e.name ? link(e.action === 'delete' ? '' : '#/audiences/' + e.subject, name) : 'that is now deleted', members(e)];
    case 'goals':
      return [(GOAL_DID[e.action] || 'changed') + ' goal ', quoted(name || e.subject)];
    case 'settings': {
      const [label, words] = SETTINGS[e.subject] || [(e.subject || '').replaceAll('_', ' '), (v) => v];
      return e.before == null ? [`set ${label} to ${words(e.after)}`] : [`changed ${label} from ${words(e.before)} to ${words(e.after)}`];
    }
    case 'holdout':
      return e.action === 'start'
        ? [`started holdout period ${e.subject}, keeping ${e.after}% of users from every popup`]
        : [`ended holdout period ${e.subject}, which kept ${e.before}% of users from every popup`];
    case 'operators':
      if (e.action === 'add') return ['added operator ', quoted(name), ` as ${e.after}`];
      if (e.action === 'remove') return ['removed operator ', quoted(name), e.before ? ` (${e.before})` : ''];
      if (e.action === 'role') return ['changed the role of operator ', quoted(name), ` from ${e.before} to ${e.after}`];
      return ['gave operator ', quoted(name), ' a new sign-in token'];
    case 'privacy':
      if (e.action === 'erasure') return ['asked to erase a user’s data'];
      if (e.action === 'erased') return [`erased a user’s data: ${fmtInt(e.removed ?? 0)} record${e.removed === 1 ? '' : 's'} removed`];
      return ['exported a user’s data'];
  }
  return ['made a change'];
}
