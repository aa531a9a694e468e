// The audit log: every resource's changes (GET /admin/v1/audit/changes) and a popup write's
// before and after (GET /admin/v1/audit).
import { api } from '../lib.js';

// listChanges reads a page of changes (qs: resource, name, actor, limit, before).
export const listChanges = (qs) => api('GET', '/admin/v1/audit/changes?' + qs);

// popupWrite reads the popup audit entry of id (its before and after): the one entry below id + 1.
export const popupWrite = (popupId, id) => api('GET', '/admin/v1/audit?' + new URLSearchParams({ popup_id: String(popupId), before: String(id + 1), limit: '1' }));
