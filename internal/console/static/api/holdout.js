// The global holdout's results (docs/CONTRACT.md §15).
import { api } from '../lib.js';

// holdoutResults reads one phase (phase empty: the latest).
export const holdoutResults = (phase) => api('GET', '/admin/v1/holdout/results' + (phase ? '?phase=' + encodeURIComponent(phase) : ''));
