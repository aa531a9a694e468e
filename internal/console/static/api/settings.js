// The team's settings (docs/CONTRACT.md §8): reporting time zone, pacing, global holdout.
import { api } from '../lib.js';

const SETTINGS = '/admin/v1/settings';

export const getSettings = () => api('GET', SETTINGS);
export const putSettings = (body) => api('PUT', SETTINGS, body);
