// Numbers, charts and times as the results pages show them: counts, percentage points, interval
// charts with their text alternative, instants in the team's zone and diffs in words.
import { h, pct } from './lib.js';

export const fmtInt = (n) => (typeof n === 'number' ? n.toLocaleString('en-US') : (n ?? '—'));

export const fmtNum = (n) => (typeof n === 'number' && !isNaN(n) ? (Number.isInteger(n) ? String(n) : n.toFixed(2)) : '—');

// points shows a difference of rates in percentage points ("+8.25 points"); — when there is none.
export function points(x, signed = false) {
  if (typeof x !== 'number' || isNaN(x)) return '—';
  const s = (x * 100).toFixed(2) + ' points';
  return signed && x > 0 ? '+' + s : s;
}

export const pointsInterval = (ci) => (Array.isArray(ci) && typeof ci[0] === 'number' && typeof ci[1] === 'number' ? `[${points(ci[0], true)}, ${points(ci[1], true)}]` : '—');

// intervalRows are an intervalChart's rows: each arm whose estimate and interval, [est, ci] =
// pick(arm), are defined (a control that shows nothing has no click-through rate, the baseline no
// difference).
export function intervalRows(arms, pick) {
  return arms.map((a) => [a.key, ...pick(a)]).filter(([, est, ci]) => typeof est === 'number' && Array.isArray(ci))
    .map(([label, est, ci]) => ({ label, est, lo: ci[0], hi: ci[1] }));
}

// intervalChart draws estimates with their intervals, one row per arm, as an SVG whose text
// alternative lists the same numbers (zero: a difference, with its 0 line).
export function intervalChart(id, caption, rows, zero) {
  const w = 560, rowH = 30, left = 90, right = 20, top = 10;
  const hgt = top + rows.length * rowH + 26;
  let lo = Math.min(...rows.map((r) => r.lo), zero ? 0 : Infinity);
  let hi = Math.max(...rows.map((r) => r.hi), zero ? 0 : -Infinity);
  if (!zero) lo = Math.max(0, lo - (hi - lo) * 0.1);
  if (hi === lo) hi = lo + 0.01;
  const pad = (hi - lo) * 0.05;
  lo -= zero ? pad : 0; hi += pad;
  const x = (v) => left + ((v - lo) / (hi - lo)) * (w - left - right);
  const text = rows.map((r) => `${r.label}: ${pct(r.est, zero)} [${pct(r.lo, zero)}, ${pct(r.hi, zero)}]`).join('; ');
  const descId = id + '-desc';
  return h('figure', { class: 'interval-chart', id },
    h('svg:svg', { width: w, height: hgt, viewBox: `0 0 ${w} ${hgt}`, role: 'img', 'aria-labelledby': id + '-cap', 'aria-describedby': descId },
      zero ? h('svg:line', { x1: x(0), x2: x(0), y1: top - 4, y2: top + rows.length * rowH, class: 'zero' }) : null,
      zero ? h('svg:text', { x: x(0), y: top + rows.length * rowH + 12, 'text-anchor': 'middle', class: 'axis' }, '0') : null,
      rows.map((r, i) => {
        const y = top + i * rowH + rowH / 2;
        return h('svg:g', { 'data-arm': r.label },
          h('svg:text', { x: left - 8, y: y + 4, 'text-anchor': 'end' }, r.label),
          h('svg:line', { x1: x(r.lo), x2: x(r.hi), y1: y, y2: y, class: 'ci' }),
          h('svg:line', { x1: x(r.lo), x2: x(r.lo), y1: y - 6, y2: y + 6, class: 'ci' }),
          h('svg:line', { x1: x(r.hi), x2: x(r.hi), y1: y - 6, y2: y + 6, class: 'ci' }),
          h('svg:circle', { cx: x(r.est), cy: y, r: 4.5, class: 'est' }));
      }),
      h('svg:text', { x: left, y: hgt - 6, class: 'axis' }, pct(lo, zero)),
      h('svg:text', { x: w - right, y: hgt - 6, 'text-anchor': 'end', class: 'axis' }, pct(hi, zero))),
    h('figcaption', { id: id + '-cap' }, caption),
    h('p', { class: 'sr-only', id: descId }, text));
}

// teamTime shows an instant in zone, naming the zone: "27 Nov 2026, 12:20 (Asia/Shanghai)".
export function teamTime(s, zone) {
  const d = new Date(s);
  if (!s || isNaN(d)) return s || '—';
  return new Intl.DateTimeFormat('en-GB', { timeZone: zone, day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit' }).format(d) + ` (${zone})`;
}

// readable makes a diff's rows read as a person would: field paths in words
// (experiment.variants[0].weight: "experiment › variant 1 › weight") and instants in the team's zone.
const INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/;

export function readable(rows, zone) {
  const field = (f) => f.replace(/([a-z_]+)\[(\d+)\]/g, (_, k, i) => `${k.replace(/s$/, '')} ${Number(i) + 1}`).split('.').join(' › ').replaceAll('_', ' ');
  const value = (v) => (INSTANT.test(v) ? teamTime(v, zone) : v);
  return rows.map((r) => ({ field: field(r.field), before: value(r.before), after: value(r.after) }));
}
