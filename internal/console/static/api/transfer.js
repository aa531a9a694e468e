// Import and export of every popup in one JSON document.
import { api } from '../lib.js';

export const exportPopups = () => api('GET', '/admin/v1/export');
// importPopups creates or updates the popups of body; a dry run changes nothing.
export const importPopups = (body, dryRun) => api('POST', '/admin/v1/import?dry_run=' + dryRun, body);
