// Audiences (docs/CONTRACT.md, audiences): uploaded lists of user ids, their members and history.
import { api, download, upload } from '../lib.js';

const AUDIENCES = '/admin/v1/audiences';
const audiencePath = (id) => `${AUDIENCES}/${encodeURIComponent(id)}`;

export const listAudiences = () => api('GET', AUDIENCES);
export const getAudience = (id) => api('GET', audiencePath(id));
export const createAudience = (body) => api('POST', AUDIENCES, body);
// updateAudience writes the name and description on the version ifMatch names.
export const updateAudience = (id, body, ifMatch) => api('PUT', audiencePath(id), body, { ifMatch });
export const deleteAudience = (id) => api('DELETE', audiencePath(id));
export const audienceHistory = (id) => api('GET', `${audiencePath(id)}/history`);
export const isMember = (id, uid) => api('GET', `${audiencePath(id)}/members/${encodeURIComponent(uid)}`);
export const membersFile = (id) => download(`${audiencePath(id)}/members`);

// MEMBER_WRITES: the request of each way an uploaded file changes the members.
const MEMBER_WRITES = { replace: ['PUT', ''], add: ['POST', '/add'], remove: ['POST', '/remove'] };

// uploadMembers sends a member file (mode: replace, add or remove); uidColumn names the CSV column
// that holds the uids when the header has none named uid (null: not sent). opts as lib.js's upload.
export function uploadMembers(id, mode, file, uidColumn, opts) {
  const [method, suffix] = MEMBER_WRITES[mode];
  const column = uidColumn === null ? '' : '?uid_column=' + encodeURIComponent(uidColumn);
  return upload(method, `${audiencePath(id)}/members${suffix}${column}`, file, opts);
}
