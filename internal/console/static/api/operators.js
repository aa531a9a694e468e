// Operators and roles: who is signed in (GET /me: {operator, role, can}) and, for admins, all.
import { api } from '../lib.js';

export const whoAmI = () => api('GET', '/admin/v1/me');
export const listOperators = () => api('GET', '/admin/v1/operators');
