// The operator's view of the service's health (docs/CONTRACT.md §16).
import { api } from '../lib.js';

export const getStatus = () => api('GET', '/admin/v1/status');
