// One user's data (docs/CONTRACT.md §12): their state, their export, their erasure.
import { api, download } from '../lib.js';

const userPath = (uid) => '/admin/v1/users/' + encodeURIComponent(uid);

// erasurePath is where an erasure's status is read; the page names it while one is pending.
export const erasurePath = (id) => '/admin/v1/erasures/' + id;

export const userState = (uid) => api('GET', userPath(uid) + '/state');
export const exportUser = (uid) => download(userPath(uid) + '/export');
export const eraseUser = (uid) => api('DELETE', userPath(uid));
export const erasureStatus = (id) => api('GET', erasurePath(id));
