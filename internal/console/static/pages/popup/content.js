// The content fields of a popup, for its own content and for each experiment variant.
import { h, uid } from '../../lib.js';
import { field } from '../../form.js';

// contentEditor: the content fields of a popup (title, content, image, link, buttons, ext), for the
// popup's own content (own: the ids f-title … and buttons-list) and for each experiment variant
// (ids from idp). prefix is how the API names the fields in its errors ('' or
// 'experiment.variants[1].'); onChange runs when a button row is added or removed.
export function contentEditor({ own, idp, prefix = '', onChange }) {
  const id = (k) => (own ? { title: 'f-title', content: 'f-content', image_url: 'f-image', image_alt: 'f-image-alt', link_url: 'f-link', ext: 'f-ext' }[k] : `${idp}-${k}`);
  const f = {
    title: h('input', { type: 'text', name: 'title' }),
    content: h('textarea', { name: 'content', rows: own ? 4 : 3 }),
    image_url: h('input', { type: 'url', name: 'image_url', placeholder: 'https://…' }),
    image_alt: h('input', { type: 'text', name: 'image_alt', maxlength: '300' }),
    link_url: h('input', { type: 'text', name: 'link_url' }),
    ext: h('textarea', { name: 'ext', rows: own ? 4 : 2, class: 'mono', spellcheck: 'false' }),
  };
  const buttonsBox = h('div', { id: own ? 'buttons-list' : `${idp}-buttons`, class: 'buttons-list' });
  let pre = prefix;
  // a variant's translations are not edited in the form (the translations table carries them):
  // they go back as they came
  let translations = {};

  function buttonRow(b = { text: '', link_url: '' }) {
    const row = h('fieldset', { class: 'button-row' });
    const text = h('input', { type: 'text', name: 'button-text', value: b.text });
    const link = h('input', { type: 'text', name: 'button-link', value: b.link_url });
    row.append(h('legend', {}, 'Button'),
      (() => { const i = uid('btn-text'); text.id = i; return h('div', { class: 'field inline' }, h('label', { for: i }, 'Text'), text); })(),
      (() => { const i = uid('btn-link'); link.id = i; return h('div', { class: 'field inline' }, h('label', { for: i }, 'Link URL'), link); })(),
      h('button', { type: 'button', class: 'secondary', onclick: () => { row.remove(); renumber(); onChange(); } }, 'Remove button'));
    return row;
  }
  function renumber() {
    for (const [k, el] of Object.entries(f)) el.dataset.field = pre + k;
    [...buttonsBox.children].forEach((row, i) => {
      row.querySelector('legend').textContent = 'Button ' + (i + 1);
      row.querySelector('[name=button-text]').dataset.field = `${pre}buttons[${i}].text`;
      row.querySelector('[name=button-link]').dataset.field = `${pre}buttons[${i}].link_url`;
    });
  }
  const addLabel = own ? 'Add button' : 'Add button to this variant';
  const el = [
    field(id('title'), 'Title', f.title),
    field(id('content'), 'Content', f.content),
    field(id('image_url'), 'Image URL', f.image_url, own ? 'The preview shows https images only.' : null),
    field(id('link_url'), 'Link URL', f.link_url),
    h('div', { class: 'field' }, h('p', { class: 'label' }, 'Buttons'), buttonsBox,
      h('button', { type: 'button', class: 'secondary', onclick: () => { buttonsBox.append(buttonRow()); renumber(); onChange(); buttonsBox.lastChild.querySelector('input').focus(); } }, addLabel)),
    field(id('image_alt'), 'Image description (alt text)', f.image_alt, own ? 'What a screen reader says for the image; required in effect for a popup that is only an image.' : null),
    field(id('ext'), 'Extra data (ext, a JSON object)', f.ext, own ? 'Passed to the app as it is.' : null),
  ];
  renumber();
  return {
    el,
    setPrefix(p) { pre = p; renumber(); },
    load(p) {
      f.title.value = p.title || ''; f.content.value = p.content || ''; f.image_url.value = p.image_url || ''; f.image_alt.value = p.image_alt || ''; f.link_url.value = p.link_url || '';
      f.ext.value = p.ext === undefined ? '' : JSON.stringify(p.ext ?? {}, null, 2);
      buttonsBox.replaceChildren(...(p.buttons || []).map((b) => buttonRow(b)));
      translations = structuredClone(p.translations || {});
      renumber();
    },
    // read gives the content in the admin wire shape, adding to problems what the page can tell is wrong
    read(problems) {
      let ext;
      try { ext = f.ext.value.trim() === '' ? {} : JSON.parse(f.ext.value); } catch { ext = undefined; }
      if (ext === undefined || typeof ext !== 'object' || ext === null || Array.isArray(ext)) {
        problems.push({ field: pre + 'ext', message: 'must be a JSON object, e.g. {"campaign": "winter"}' });
      }
      return {
        title: f.title.value, content: f.content.value, image_url: f.image_url.value.trim(), image_alt: f.image_alt.value, link_url: f.link_url.value.trim(),
        buttons: [...buttonsBox.children].map((row) => ({ text: row.querySelector('[name=button-text]').value, link_url: row.querySelector('[name=button-link]').value.trim() })),
        ext,
        ...(own ? {} : { translations }),
      };
    },
  };
}
