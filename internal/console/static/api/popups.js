// The popups of the admin API (docs/CONTRACT.md): the list, one popup and its writes, its
// history and rollback, its results and its translation table. Every function answers as lib.js's
// api does: {status, ok, body, etag}, never throwing.
import { api, download, upload } from '../lib.js';

const POPUPS = '/admin/v1/popups';

// popupPath is the address of one popup; its experiment lives below it (api/experiments.js).
export const popupPath = (id) => `${POPUPS}/${encodeURIComponent(id)}`;

// flagQuery turns {accept_reassignment: true, end_experiment: false} into "?accept_reassignment=true".
function flagQuery(flags) {
  const on = Object.entries(flags).filter(([, v]) => v).map(([k]) => k + '=true');
  return on.length ? '?' + on.join('&') : '';
}

// listPopups reads a page of the list (params: limit, sort, state, experiment, q, cursor);
// opts.token tries a token before the page keeps it (sign-in).
export const listPopups = (params, opts) => api('GET', POPUPS + '?' + new URLSearchParams(params), undefined, opts);
export const getPopup = (id) => api('GET', popupPath(id));
export const createPopup = (body) => api('POST', POPUPS, body);
// updatePopup writes the version etag names; flags: accept_reassignment, end_experiment.
export const updatePopup = (id, body, etag, flags = {}) => api('PUT', popupPath(id) + flagQuery(flags), body, { ifMatch: etag });
export const archivePopup = (id, etag) => api('DELETE', popupPath(id), undefined, { ifMatch: etag });

export const popupHistory = (id) => api('GET', `${popupPath(id)}/history`);
export const rollbackPopup = (id, revision, etag, endExperiment) =>
  api('POST', `${popupPath(id)}/rollback` + flagQuery({ end_experiment: endExperiment }), { revision }, { ifMatch: etag });

// popupStats reads the results over qs (URLSearchParams: from, to; empty: the API's default range).
export const popupStats = (id, qs) => api('GET', `${popupPath(id)}/stats` + (qs.toString() ? '?' + qs : ''));
export const popupStatsCSV = (id, qs) => download(`${popupPath(id)}/stats.csv?` + qs);

export const translationsCSV = (id) => download(`${popupPath(id)}/translations.csv`);
export const putTranslationsCSV = (id, file, etag) => upload('PUT', `${popupPath(id)}/translations.csv`, file, { contentType: 'text/csv', ifMatch: etag });
