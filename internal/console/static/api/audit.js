// The audit log of popup and config writes.
import { api } from '../lib.js';

// listAudit reads a page of entries (qs: limit, popup_id, actor, before).
export const listAudit = (qs) => api('GET', '/admin/v1/audit?' + qs);
