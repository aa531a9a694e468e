// The popup form's Translations section, and for a saved popup its translation table as CSV.
import { h, uid, errorText } from '../../lib.js';
import { translationsCSV, putTranslationsCSV } from '../../api/popups.js';
import { setKids, toast, alertBox, saveBlob } from '../../ui.js';
import { field } from '../../form.js';

// translationsEditor: the popup's own content in other languages (docs/CONTRACT.md §13), beside
// the default content: a fieldset per language (its BCP 47 tag, title, content, optional image and
// link, one text per button of the default content), the strings still missing per language, a
// language to preview, and for a saved popup the translation table as CSV. ownContent reads the
// default content; onChange runs after every change.
export function translationsEditor({ ownContent, onChange }) {
  let langs = []; // {tag, title, content, image_url, link_url, buttons: [inputs], row}
  const box = h('div', { id: 'translations-list' });
  const missing = h('div', { id: 'missing-strings', 'aria-live': 'polite' });
  const newTag = h('input', { type: 'text', id: 'translation-new', name: 'translation-new', autocomplete: 'off', spellcheck: 'false', placeholder: 'e.g. pt-BR', 'aria-describedby': 'translation-new-help' });
  const addBtn = h('button', { type: 'button', class: 'secondary', id: 'translation-add', onclick: () => {
    const tag = newTag.value.trim();
    if (!tag) return newTag.focus();
    add(tag, {});
    newTag.value = '';
    renumber(); onChange();
    langs.at(-1).title.focus();
  } }, 'Add language');
  const previewLang = h('select', { id: 'preview-lang', name: 'preview-lang', onchange: () => onChange() });

  function add(tag, t) {
    const idp = uid('tr');
    const item = {
      tag: h('input', { type: 'text', name: 'translation-tag', value: tag, autocomplete: 'off', spellcheck: 'false' }),
      title: h('input', { type: 'text', name: 'translation-title', value: t.title || '' }),
      content: h('textarea', { name: 'translation-content', rows: 3 }),
      image_url: h('input', { type: 'url', name: 'translation-image', value: t.image_url || '', placeholder: 'empty: the default image' }),
      link_url: h('input', { type: 'text', name: 'translation-link', value: t.link_url || '', placeholder: 'empty: the default link' }),
      buttonsBox: h('div', { class: 'buttons-list' }),
      links: (t.buttons || []).map((b) => b.link_url || ''),
      texts: (t.buttons || []).map((b) => b.text || ''),
      legend: h('legend'),
    };
    item.content.value = t.content || '';
    item.rm = h('button', { type: 'button', class: 'secondary', onclick: () => { langs = langs.filter((x) => x !== item); item.row.remove(); renumber(); onChange(); newTag.focus(); } }, 'Remove language');
    item.row = h('fieldset', { class: 'translation' }, item.legend,
      field(idp + '-tag', 'Language tag', item.tag),
      field(idp + '-title', 'Title', item.title),
      field(idp + '-content', 'Content', item.content),
      field(idp + '-image', 'Image URL', item.image_url),
      field(idp + '-link', 'Link URL', item.link_url),
      h('div', { class: 'field' }, h('p', { class: 'label' }, 'Button texts'), item.buttonsBox),
      h('p', {}, item.rm));
    langs.push(item);
    box.append(item.row);
  }
  // syncButtons gives each language one text per button of the default content, keeping what
  // was typed (a click's button index names the same button in every language)
  function syncButtons(own) {
    for (const l of langs) {
      const typed = [...l.buttonsBox.querySelectorAll('input')].map((i) => i.value);
      const texts = typed.length ? typed : l.texts;
      if (typed.length === own.buttons.length && l.buttonsBox.children.length === own.buttons.length) continue;
      l.buttonsBox.replaceChildren(...own.buttons.map((b, i) => {
        const iid = uid('tr-btn');
        return h('div', { class: 'field inline' }, h('label', { for: iid }, `Button ${i + 1} (“${b.text || '…'}”)`),
          h('input', { type: 'text', id: iid, name: 'translation-button', value: texts[i] ?? '' }));
      }));
    }
  }
  function renumber() {
    const own = ownContent();
    syncButtons(own);
    langs.forEach((l) => {
      const tag = l.tag.value.trim();
      l.legend.textContent = `Language ${tag || '(no tag)'}`;
      const pre = `translations.${tag}.`;
      l.tag.dataset.field = `translations.${tag}`;
      for (const k of ['title', 'content', 'image_url', 'link_url']) l[k].dataset.field = pre + k;
      l.buttonsBox.dataset.field = pre + 'buttons';
      [...l.buttonsBox.querySelectorAll('input')].forEach((inp, i) => { inp.dataset.field = `${pre}buttons[${i}].text`; });
    });
    const want = ['default', ...langs.map((l) => l.tag.value.trim()).filter(Boolean)];
    if ([...previewLang.options].map((o) => o.value).join('\n') !== want.join('\n')) {
      const cur = previewLang.value;
      setKids(previewLang, want.map((v) => h('option', { value: v }, v === 'default' ? 'Default content' : v)));
      previewLang.value = want.includes(cur) ? cur : 'default';
    }
  }
  // missingStrings: per language, the strings the default content has and the language lacks
  function missingStrings(own, tr) {
    const out = [];
    for (const [tag, t] of Object.entries(tr)) {
      const gaps = [];
      if (own.title && !t.title) gaps.push('title');
      if (own.content && !t.content) gaps.push('content');
      own.buttons.forEach((b, i) => { if (!(t.buttons[i]?.text || '').trim()) gaps.push(`button ${i + 1}`); });
      if (gaps.length) out.push({ tag, gaps });
    }
    return out;
  }
  function read() {
    const out = {};
    for (const l of langs) {
      const tag = l.tag.value.trim();
      out[tag] = {
        title: l.title.value, content: l.content.value, image_url: l.image_url.value.trim(), link_url: l.link_url.value.trim(),
        buttons: [...l.buttonsBox.querySelectorAll('input')].map((inp, i) => ({ text: inp.value, link_url: l.links[i] || '' })),
      };
    }
    return out;
  }
  // refresh renumbers and lists the missing strings; it returns the content the preview shows:
  // the default, or the chosen language's over it (its empty links keep the default's)
  function refresh(own) {
    renumber();
    const tr = read();
    const gaps = missingStrings(own, tr);
    setKids(missing, langs.length === 0 ? null : gaps.length === 0
      ? h('p', { class: 'ok', id: 'missing-none' }, 'Every language has every string.')
      : h('div', {}, h('p', { class: 'label' }, 'Missing strings'),
        h('ul', { id: 'missing-list' }, gaps.map((g) => h('li', { 'data-lang': g.tag }, `${g.tag}: ${g.gaps.join(', ')}`)))));
    const t = tr[previewLang.value];
    if (!t) return own;
    return { ...own, title: t.title, content: t.content, image_url: t.image_url || own.image_url, link_url: t.link_url || own.link_url,
      buttons: own.buttons.map((b, i) => ({ text: t.buttons[i]?.text || '', link_url: t.buttons[i]?.link_url || b.link_url })) };
  }
  function load(tr) {
    langs = [];
    box.replaceChildren();
    for (const [tag, t] of Object.entries(tr || {})) add(tag, t);
  }
  const el = h('fieldset', { id: 'translations', 'data-field': 'translations' }, h('legend', {}, 'Translations'),
    h('p', { class: 'help' }, 'The content in other languages. The app gets the language of its request’s lang: the exact tag, then the tag without its region or script (pt-BR → pt), else the default content above. Each language has one text per button of the default content.'),
    box,
    h('div', { class: 'row' }, field('translation-new', 'New language (BCP 47 tag)', newTag), h('p', {}, addBtn)),
    h('p', { class: 'help', id: 'translation-new-help' }, 'A language, then optionally a script and a region: en, pt-BR, zh-Hans, es-419.'),
    missing);
  return { el, load, read, refresh, previewField: field('preview-lang', 'Preview language', previewLang) };
}

// translationTable: the stored popup's strings as a CSV table for translators, and the table
// brought back (PUT, If-Match the version on show, etag); then reopen({stored, etag}) shows the
// version it stored, and stale(what) answers a refusal because the popup changed meanwhile.
export function translationTable({ stored, etag, mayEdit, stale, reopen }) {
  const out = h('div', { id: 'translations-csv-out', 'aria-live': 'polite' });
  const file = h('input', { type: 'file', id: 'translations-file', name: 'translations-file', accept: '.csv,text/csv' });
  async function get() {
    const r = await translationsCSV(stored.id);
    if (!r.ok) return setKids(out, alertBox('Translations CSV: ' + errorText(r)));
    const name = r.filename || `popup-${stored.id}-translations.csv`;
    saveBlob(r.blob, name);
    setKids(out, alertBox(`Downloaded ${name}: one row per string, one column per language.`, 'info'));
  }
  async function put() {
    const f0 = file.files[0];
    if (!f0) return file.focus();
    const r = await putTranslationsCSV(stored.id, f0, etag);
    if (r.status === 412) return stale('Uploading the translations');
    if (!r.ok) {
      const fes = r.body?.error?.fields || [];
      return setKids(out, h('div', { class: 'alert error', role: 'alert', id: 'translations-csv-errors' },
        // the server's message already says the table was not applied: one sentence, each cell once below
        h('p', {}, fes.length ? 'The table was not applied; nothing changed. Fix these cells and upload it again:' : 'The table was not applied: ' + errorText(r)),
        fes.length ? h('ul', {}, fes.map((fe) => h('li', {}, `${fe.field}: ${fe.message}`))) : null));
    }
    toast(r.etag === etag ? 'The table changes nothing: nothing written.' : 'Translations uploaded.');
    reopen({ stored: r.body, etag: r.etag });
  }
  return h('section', { class: 'card', id: 'translations-table', 'aria-labelledby': 'translations-table-h' },
    h('h3', { id: 'translations-table-h' }, 'Translation table (CSV)'),
    h('p', { class: 'help' }, 'For translators: every string of the saved popup and its variants, one column per language. Upload it back whole: a problem names its row and column and nothing is applied.'),
    h('p', {}, h('button', { type: 'button', class: 'secondary', id: 'translations-download', onclick: get }, 'Download CSV')),
    mayEdit ? h('div', { class: 'row' }, field('translations-file', 'Upload a table', file),
      h('p', {}, h('button', { type: 'button', class: 'secondary', id: 'translations-upload', onclick: put }, 'Upload CSV'))) : null,
    out);
}
