// The popup form's Basics section: name, status and priority. statuses are the ones the role may
// choose; status is the select, which Publish… sets.
import { h } from '../../lib.js';
import { field, textInput, numInput, numberOf } from '../../form.js';

export function basicsSection(statuses) {
  const name = textInput('name', { required: true, autocomplete: 'off' });
  const status = h('select', { name: 'status', 'data-field': 'status' }, statuses.map((s) => h('option', { value: s }, s)));
  const priority = numInput('priority');
  const el = h('fieldset', {}, h('legend', {}, 'Basics'),
    field('f-name', 'Name', name, 'Unique among popups that are not archived.'),
    field('f-status', 'Status', status, 'Active or paused is live: saving it publishes, after a review of what changes.'),
    field('f-priority', 'Priority', priority, 'Higher wins; ties go to the lower id.'));
  return {
    el,
    status,
    load(p) { name.value = p.name ?? ''; status.value = p.status || 'draft'; priority.value = p.priority ?? ''; },
    read: () => ({ name: name.value, status: status.value, priority: numberOf(priority) }),
  };
}
