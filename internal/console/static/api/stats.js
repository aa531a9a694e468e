// Every popup's daily numbers (docs/CONTRACT.md §8), for the list.
import { api } from '../lib.js';

export const allStats = () => api('GET', '/admin/v1/stats?days=true');
