// The service's health (#/status), for every operator: what the alert rules watch, in words.
import { h, notAvailable, errorText, fmtTime } from '../lib.js';
import { getStatus } from '../api/status.js';
import { nav } from '../state.js';
import { setKids, screen, alertBox } from '../ui.js';

// STATE_WORDS names each section's state (docs/CONTRACT.md §16) for the badge.
const STATE_WORDS = {
  ok: 'OK',
  warning: 'Needs attention',
  down: 'Down',
  unchecked: 'Not checked yet',
  unavailable: 'Could not be read',
  off: 'Not in use',
};

// span says a number of seconds in the largest unit that keeps it readable.
export function span(sec) {
  const s = Math.round(sec);
  const n = (v, unit) => `${v} ${unit}${v === 1 ? '' : 's'}`;
  if (s < 90) return n(s, 'second');
  if (s < 90 * 60) return n(Math.round(s / 60), 'minute');
  if (s < 36 * 3600) return n(Math.round(s / 3600), 'hour');
  return n(Math.round(s / 86400), 'day');
}

const plural = (v, one, many) => `${v} ${v === 1 ? one : many}`;

// unread is the words of a section whose store could not be read.
const unread = (what, s) => (s.state === 'down' ? `${what} cannot be read: its store is down.` : `${what} could not be read now${s.error ? ` (${s.error})` : ''}.`);

// The sections, in the order an operator looks at them: a name and the words for its answer.
const SECTIONS = [
  ['mysql', 'MySQL', (s) => ({
    ok: 'Reachable.',
    down: 'Unreachable: changes in this console are refused, the workers stop writing events and erasures, and users the service has not seen recently get no popup.',
  })[s.state] || 'Not checked yet: the instance is starting.'],
  ['redis', 'Redis', (s) => ({
    ok: 'Reachable.',
    down: 'Unreachable: every homepage call on this instance is answered without a popup, and clicks and closes are refused until it is back.',
  })[s.state] || 'Not checked yet: the instance is starting.'],
  ['instance', 'This instance', (s) => (s.ready
    ? `Ready: serving config version ${s.config_version}.`
    : 'Not ready: it has no config yet, or is still loading the audiences its popups target. The load balancer sends it no traffic.')],
  ['queue', 'Event queue', (s) => {
    if (s.state !== 'ok' && s.state !== 'warning') return unread('The queue', s);
    const parts = [s.waiting ? `${plural(s.waiting, 'event waits', 'events wait')} to be written to MySQL, the oldest for ${span(s.oldest_age_seconds)}.` : 'No event waits to be written.'];
    if (s.processing) parts.push(`${plural(s.processing, 'event is', 'events are')} being written.`);
    if (s.oldest_age_seconds > s.limit_seconds) parts.push(`That is longer than ${span(s.limit_seconds)}: is a worker running? Results and stats lag by as much.`);
    if (s.dead_letters) parts.push(`${plural(s.dead_letters, 'event was', 'events were')} set aside (dead letters): MySQL refused them or no worker could read them, and they are missing from the results until someone looks at them.`);
    return parts.join(' ');
  }],
  ['retention', 'Action log retention', (s) => {
    if (s.state !== 'ok' && s.state !== 'warning') return unread('The action log', s);
    if (!s.oldest_day) return `Keeps ${plural(s.keep_days, 'day', 'days')}; the log has no day of its own yet.`;
    const parts = [`Keeps ${plural(s.keep_days, 'day', 'days')}: it holds ${plural(s.days_kept, 'day', 'days')}, from ${s.oldest_day} (UTC), and has days ready until ${s.newest_day}.`];
    if (s.overdue) parts.push('Days older than the retention are still kept: no worker has dropped them for over two hours.');
    if (s.days_ahead_missing) parts.push('Today has no day of its own: no worker has made the days ahead.');
    return parts.join(' ');
  }],
  ['audiences', 'Audiences on this instance', (s) => {
    if (s.state !== 'ok' && s.state !== 'warning') return unread('The audiences', s);
    const ids = s.fail_closed_popups || [];
    const held = s.held ? `${plural(s.held, 'audience is', 'audiences are')} loaded.` : 'No audience is loaded.';
    if (!ids.length) return held;
    return [held, ` ${plural(ids.length, 'popup targets', 'popups target')} an audience this instance has not loaded, and is answered as if no user were in it: `,
      ids.map((id, i) => [i ? ', ' : '', h('a', { href: `#/popups/${id}` }, `popup ${id}`)]), '.'];
  }],
  ['erasures', 'User erasures', (s) => {
    if (s.state !== 'ok' && s.state !== 'warning') return unread('The erasures', s);
    if (!s.pending) return 'No erasure is waiting.';
    const parts = [`${plural(s.pending, 'erasure waits', 'erasures wait')}, the oldest for ${span(s.oldest_age_seconds)}.`];
    if (s.overdue) parts.push(`That is past the promised ${span(s.promise_seconds)}: is a worker running, with the privacy key set?`);
    return parts.join(' ');
  }],
  ['redis_cluster', 'Redis Cluster coverage', (s) => {
    const nodes = s.full_coverage_nodes || [];
    switch (s.state) {
      case 'off': return 'Redis is not a cluster: nothing to check.';
      case 'unchecked': return 'Not checked yet.';
      case 'unavailable': return `The nodes' setting could not be read${s.error ? ` (${s.error})` : ''}.`;
      case 'warning': return `${plural(nodes.length, 'node has', 'nodes have')} cluster-require-full-coverage yes (${nodes.join(', ')}): while any master is down, ${nodes.length === 1 ? 'it refuses' : 'they refuse'} every query and every user's popup is degraded, not only that master's users. Set it to no on every node.`;
      default: return `Every node has cluster-require-full-coverage no${s.checked_at ? ` (checked ${fmtTime(s.checked_at)})` : ''}.`;
    }
  }],
];

// statusScreen: the service's health now, every section in words, with a refresh.
export async function statusScreen() {
  const seq = nav.seq;
  const box = h('div', { id: 'status-out', 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Loading…'));
  const refresh = h('button', { type: 'button', id: 'status-refresh', class: 'secondary' }, 'Check again');
  screen('Status',
    h('p', {}, 'The health of the service as this instance sees it: what the alert rules watch, read now. Instance and audience lines are this instance’s.'),
    refresh, box);
  const load = async () => {
    refresh.disabled = true;
    const r = await getStatus();
    refresh.disabled = false;
    if (seq !== nav.seq) return;
    if (!r.ok) return setKids(box, alertBox('Status: ' + errorText(r), notAvailable(r) ? 'info' : 'error'));
    const b = r.body;
    const attention = SECTIONS.filter(([key]) => !['ok', 'off'].includes(b[key]?.state)).map(([, name]) => name);
    setKids(box,
      b.state === 'ok'
        ? alertBox('Nothing needs attention.', 'info')
        : alertBox(`${plural(attention.length, 'thing needs', 'things need')} attention: ${attention.join(', ')}.`, 'warn'),
      h('div', { class: 'table-wrap' }, h('table', { id: 'status-table' },
        h('caption', {}, `Checked ${fmtTime(b.checked_at)}`),
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'What'), h('th', { scope: 'col' }, 'State'), h('th', { scope: 'col' }, 'Details'))),
        h('tbody', {}, SECTIONS.map(([key, name, words]) => {
          const s = b[key] || { state: 'unavailable' };
          return h('tr', { id: 'status-' + key, 'data-state': s.state },
            h('th', { scope: 'row' }, name),
            h('td', {}, h('span', { class: 'badge state-' + s.state }, STATE_WORDS[s.state] || s.state)),
            h('td', {}, words(s)));
        })))));
  };
  refresh.addEventListener('click', load);
  await load();
}
