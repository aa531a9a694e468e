// The review's check that a publish does not silently lose: a sample of users the popup's
// targeting lets in, each tried through the draft preview (docs/CONTRACT.md §9 "Draft preview")
// as if the popup were saved and had started, counting those for whom a live popup of higher
// priority is chosen instead. Nothing is recorded.
import { h } from '../../lib.js';
import { explainDraft } from '../../api/preview.js';

// SAMPLE is how many users the check tries: enough to say "most" or "a few", few enough to ask
// for at once.
export const SAMPLE = 20;

// sampleUsers are SAMPLE users the targeting t lets in by its fields (platform, app version,
// region, language): its test uids when it lists some, else made-up ids (the rollout then keeps
// its share of them, as of real users).
export function sampleUsers(t = {}) {
  const pick = (list, i, none) => (list?.length ? list[i % list.length] : none);
  const uids = t.uids?.length ? t.uids : [];
  return Array.from({ length: uids.length ? Math.min(SAMPLE, uids.length) : SAMPLE }, (_, i) => ({
    uid: uids[i] || `sample-user-${i + 1}`,
    platform: pick(t.platforms, i, ['ios', 'android', 'web'][i % 3]),
    app_version: t.min_app_version || t.max_app_version || '1.0.0',
    region: pick(t.regions, i, ''),
    lang: pick(t.langs, i, ''),
  }));
}

// competitionWarning answers, for popup b (the wire shape; id: the stored popup's, or null for a
// new one), which live popups of higher priority win over it and for how many of the sample; null
// when none does (or the preview cannot answer: the review then says nothing it does not know).
// The made-up users are in no audience, so the popup's own included audiences are left out of
// the try: the count is of users in them.
export async function competitionWarning(b, id) {
  const aud = b.targeting?.audiences;
  const popup = { ...b, ext: b.ext ?? {}, status: 'active', start_at: null,
    targeting: { ...b.targeting, ...(aud ? { audiences: { ...aud, include: [] } } : {}) } };
  if (id) popup.id = id;
  const users = sampleUsers(b.targeting);
  const answers = await Promise.all(users.map((u) => explainDraft({ ...u, popup })));
  const self = id || 0;
  let reached = 0;
  const winners = new Map(); // id → {name, priority, n}
  for (const r of answers) {
    if (!r.ok) return null;
    const cands = r.body.candidates || [];
    const me = cands.find((c) => c.id === self);
    // a user it would be chosen for, or lose only to priority; any other reason (the targeting,
    // the rollout) says the user is not one of its users
    if (!me || !(me.eligible || me.reason === 'lower_priority')) continue;
    reached++;
    const chosen = cands.find((c) => c.eligible && !c.reason);
    if (me.reason !== 'lower_priority' || !chosen || chosen.id === self) continue;
    const w = winners.get(chosen.id) || { id: chosen.id, name: chosen.name, priority: chosen.priority, n: 0 };
    w.n++;
    winners.set(chosen.id, w);
  }
  if (!winners.size) return null;
  const list = [...winners.values()].sort((a, b2) => b2.n - a.n);
  const top = Math.max(...list.map((w) => w.priority ?? 0));
  return h('div', { class: 'alert warn', id: 'priority-warning' },
    h('p', {}, `A live popup of higher priority wins over this one for ${list.reduce((n, w) => n + w.n, 0)} of ${reached} sample users its targeting lets in${aud?.include?.length ? ' (taken to be in its audiences)' : ''}: they would not see this popup.`),
    h('ul', {}, list.map((w) => h('li', { 'data-id': w.id }, h('a', { href: '#/popups/' + w.id }, `“${w.name || 'popup #' + w.id}”`),
      ` (priority ${w.priority}) wins for ${w.n} of them.`))),
    h('p', {}, `To show this popup first, give it a priority above ${top} (this popup: ${b.priority ?? 0}).`));
}
