// The popup form's Schedule section: start and end in the browser's time zone, and what they are
// stored as in UTC.
import { h, utcToLocalInput, localInputToUTC, zoneName, nonexistentLocal } from '../../lib.js';
import { field } from '../../form.js';

export function scheduleSection() {
  const f = {
    start_at: h('input', { type: 'datetime-local', name: 'start_at', 'data-field': 'start_at' }),
    end_at: h('input', { type: 'datetime-local', name: 'end_at', 'data-field': 'end_at' }),
  };
  const utcNote = h('p', { class: 'help', id: 'window-utc', 'aria-live': 'polite' });
  const el = h('fieldset', {}, h('legend', {}, 'Schedule'),
    field('f-start', `Start (${zoneName})`, f.start_at, `Empty: starts at once. In your browser's time zone, ${zoneName}.`),
    field('f-end', `End (${zoneName})`, f.end_at, 'Empty: never ends.'),
    utcNote);
  return {
    el,
    load(p) { f.start_at.value = utcToLocalInput(p.start_at); f.end_at.value = utcToLocalInput(p.end_at); },
    // read adds to problems a time that does not exist in the browser's zone
    read(problems) {
      for (const k of ['start_at', 'end_at']) {
        const v = f[k].value;
        const instead = nonexistentLocal(v);
        if (instead) {
          problems.push({ field: k, message: `${v.replace('T', ' ')} does not exist in ${zoneName}: the clocks jump forward that night (the browser would take ${instead.replace('T', ' ')}). Enter a time before or after the jump.` });
        }
      }
      return { start_at: localInputToUTC(f.start_at.value), end_at: localInputToUTC(f.end_at.value) };
    },
    refresh(b) { utcNote.textContent = `Stored as UTC: start ${b.start_at || 'open'}, end ${b.end_at || 'open'}.`; },
  };
}
