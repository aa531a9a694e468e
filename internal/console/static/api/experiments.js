// A popup's experiment (docs/CONTRACT.md §10): its results by phase, its transitions and what an
// edit of its arms would move.
import { api } from '../lib.js';
import { popupPath } from './popups.js';

const experimentPath = (id) => `${popupPath(id)}/experiment`;

// experimentResults reads one phase's results (phase empty: the current one).
export const experimentResults = (id, phase) => api('GET', `${experimentPath(id)}/results` + (phase ? '?phase=' + encodeURIComponent(phase) : ''));
// transitionExperiment starts, stops or concludes (kind) on the version etag names.
export const transitionExperiment = (id, kind, payload, etag) => api('POST', `${experimentPath(id)}/${kind}`, payload, { ifMatch: etag });
// reassignment counts the users an edit to popup would move if it kept the assignment.
export const reassignment = (id, popup) => api('POST', `${experimentPath(id)}/reassignment`, { popup });
