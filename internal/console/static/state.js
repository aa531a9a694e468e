// The console's shared state, in one place: who is signed in, the screen on show, and the
// editor's guard against leaving unsaved edits. Modules read and write these objects' fields
// (never a copy); the read caches are cache.js's.
import { whoAmI } from './api/operators.js';

// session.me: who is signed in and what the role allows (GET /admin/v1/me: {operator, role, can}),
// read once per sign-in. The console offers only the controls the role may use; the API enforces
// the roles either way. /me ships in the same binary as the console, so a failed /me is an error
// (route shows it) that grants nothing. signInNotice is what the sign-in screen says first.
export const session = { me: null, signInNotice: '' };

export const can = (what) => !!session.me?.can?.[what];

export async function loadMe() {
  const r = await whoAmI();
  if (r.ok) session.me = { operator: r.body.operator || '', role: r.body.role || '', can: { ...r.body.can } };
  return r;
}

// nav: seq counts navigations (a screen that loads asynchronously renders only if no navigation
// came after: it compares the seq it started with); shownHash is the hash of the screen on show;
// leaveGuard is set by the editor while it is open and tells whether the form holds unsaved
// edits; route shows the screen of the address (set by the shell, app.js).
export const nav = { seq: 0, shownHash: '', leaveGuard: null, route: () => {} };

export const unsaved = () => !!nav.leaveGuard?.();

// reroute shows the screen of the current address again.
export const reroute = () => nav.route();

// editor.pendingDuplicate: the form a "Duplicate as draft" hands to the new popup's screen.
export const editor = { pendingDuplicate: null };
