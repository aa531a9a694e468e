// Goals (docs/CONTRACT.md §14): the conversions experiments and the holdout count.
import { api } from '../lib.js';

const GOALS = '/admin/v1/goals';

export const listGoals = () => api('GET', GOALS);
export const createGoal = (body) => api('POST', GOALS, body);
export const deleteGoal = (key) => api('DELETE', `${GOALS}/${encodeURIComponent(key)}`);
