// The translators' table read in the page: what an uploaded CSV would make of a stored popup, so
// that the upload of a live popup is reviewed as the form's save is (the same diff), before the
// table is sent. The server applies the table itself (docs/CONTRACT.md §13) and stays the judge
// of every cell; this reading only shows what it changes.

// parseCSV reads RFC 4180 text into rows of cells (quoted cells may hold commas, quotes and line
// breaks); blank lines are skipped, as the server's reader does.
export function parseCSV(text) {
  const rows = [];
  let row = [];
  let cell = '';
  let quoted = false;
  const end = () => { row.push(cell); cell = ''; };
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c !== '"') cell += c;
      else if (text[i + 1] === '"') { cell += '"'; i++; } else quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === ',') end();
    else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      end(); rows.push(row); row = [];
    } else cell += c;
  }
  if (cell !== '' || row.length) { end(); rows.push(row); }
  return rows.filter((r) => !(r.length === 1 && r[0] === ''));
}

// canonicalTag spells a language tag as the API stores it: language lower case, script title
// case, region upper case (pt-br → pt-BR, zh-hans → zh-Hans).
export function canonicalTag(tag) {
  return tag.trim().split('-').map((p, i) => (i === 0 ? p.toLowerCase()
    : (p.length === 4 ? p[0].toUpperCase() + p.slice(1).toLowerCase() : p.toUpperCase()))).join('-');
}

// tableApplied is stored (the admin wire shape) with its translations' texts taken from the
// table text as the API applies it: one column per language, a creative (the popup's own content
// and each variant) translated into a language when any of its cells there is not empty, a
// language left out removed, every translation keeping its links. Null when the text is not a
// translation table at all (the server then says why).
export function tableApplied(stored, text) {
  const [head, ...body] = parseCSV(text.replace(/^\ufeff/, ''));
  if (!head || head[0] !== 'key' || head[1] !== 'default') return null;
  const columns = head.slice(2).map((t, i) => ({ tag: canonicalTag(t), at: i + 2 })).sort((a, b) => (a.tag < b.tag ? -1 : a.tag > b.tag ? 1 : 0));
  const byKey = new Map(body.map((r) => [r[0], r]));
  const next = structuredClone(stored);
  const creatives = [['', next], ...(next.experiment?.variants || []).map((v, i) => [`experiment.variants[${i}].`, v])];
  for (const [pre, c] of creatives) {
    const old = c.translations || {};
    const out = {};
    for (const { tag, at } of columns) {
      const cell = (key) => byKey.get(pre + key)?.[at] ?? '';
      const was = old[tag] || {};
      const t = {
        title: cell('title'), content: cell('content'), image_url: was.image_url || '', link_url: was.link_url || '',
        buttons: (c.buttons || []).map((b, i) => ({ text: cell(`buttons[${i}].text`), link_url: was.buttons?.[i]?.link_url || '' })),
      };
      if (t.title || t.content || t.buttons.some((b) => b.text)) out[tag] = t;
    }
    c.translations = out;
  }
  return next;
}
