// The console's read caches: the list's numbers, the audience list and the team's time zone,
// each read at most as often as it says, and dropped after a write that changes it.
import { isoDay, zoneName } from './lib.js';
import { allStats } from './api/stats.js';
import { listAudiences } from './api/audiences.js';
import { getSettings } from './api/settings.js';

const caches = {
  stats: { at: 0, byId: null, available: true },
  audiences: { at: 0, list: [], byId: new Map(), available: true, r: null },
  teamZone: null,
};

// loadListStats reads the last 14 days of every popup, in the days of the reporting time zone:
// the API's default range ends today in that zone, and its answer says which days it took.
export async function loadListStats() {
  if (Date.now() - caches.stats.at < 30000) return caches.stats;
  const r = await allStats();
  const byId = new Map();
  if (r.ok) for (const p of r.body?.popups || []) byId.set(p.popup_id, p);
  caches.stats = { at: Date.now(), byId, available: r.ok, dates: r.ok ? dayRange(r.body.from, r.body.to) : [], zone: r.body?.time_zone || 'UTC' };
  return caches.stats;
}

// dropListStats makes the next loadListStats read fresh numbers.
export const dropListStats = () => { caches.stats.at = 0; };

// dayRange lists the calendar dates from..to (YYYY-MM-DD, both included).
function dayRange(from, to) {
  const out = [];
  for (let d = new Date(from + 'T00:00:00Z'); isoDay(d) <= to && out.length < 400; d = new Date(d.getTime() + 86400000)) out.push(isoDay(d));
  return out;
}

// Audiences (issue 34): uploaded lists of user ids that popups target. The list and what a popup
// form offers come from GET /admin/v1/audiences, read at most every 30 seconds (fresh after a
// write of the audience pages).

// audiencesOf reads the list answer: {audiences: [...]} (or a bare array).
const audiencesOf = (body) => (Array.isArray(body) ? body : body?.audiences || []);

export async function loadAudiences(fresh = false) {
  if (!fresh && Date.now() - caches.audiences.at < 30000) return caches.audiences;
  const r = await listAudiences();
  const list = r.ok ? audiencesOf(r.body) : [];
  caches.audiences = { at: Date.now(), list, byId: new Map(list.map((a) => [String(a.id), a])), available: r.ok, r };
  return caches.audiences;
}

export const dropAudiences = () => { caches.audiences.at = 0; };

// audienceName names an audience by id for the operator: its name when the list knows it.
export const audienceName = (id) => caches.audiences.byId.get(String(id))?.name || `audience #${id}`;

// teamZone is the team's reporting time zone (GET /admin/v1/settings), read once per page load;
// the browser's when the settings cannot be read.
export function teamZone() {
  caches.teamZone = caches.teamZone || getSettings().then((r) => (r.ok && r.body.reporting_time_zone) || zoneName);
  return caches.teamZone;
}
