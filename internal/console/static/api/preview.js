// The preview (docs/CONTRACT.md §10): what a user would get now and why, for the live popups or
// with a draft beside them. Nothing is recorded.
import { api } from '../lib.js';

const PREVIEW = '/admin/v1/preview';

// explainUser asks for the live popups (qs: uid, platform, app_version, region, lang).
export const explainUser = (qs) => api('GET', PREVIEW + '?' + qs);
// explainDraft asks with a draft popup beside the live ones (body: the user's fields and popup).
export const explainDraft = (body) => api('POST', PREVIEW, body);
