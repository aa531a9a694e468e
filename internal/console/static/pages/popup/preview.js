// The live preview, a popup drawn as the app shows it, and the editor's action bar, whose Preview
// button floats the preview on a phone.
import { h } from '../../lib.js';
import { setKids } from '../../ui.js';

// renderPreview draws the popup as the app shows it, in a phone or web frame.
export function renderPreview(box, p) {
  const img = p.image_url
    ? (/^https:\/\//i.test(p.image_url)
      ? h('img', { src: p.image_url, alt: p.image_alt || 'Popup image', class: 'pv-img', onerror: (ev) => ev.target.replaceWith(h('p', { class: 'pv-noimg' }, 'The image could not be loaded.')) })
      : h('p', { class: 'pv-noimg' }, 'Image not previewed: only https images are shown here.'))
    : null;
  const buttons = (p.buttons || []).filter((b) => b.text).map((b) => h('span', { class: 'pv-btn', title: b.link_url }, b.text));
  setKids(box, h('div', { class: 'frame', 'aria-label': 'Device preview', role: 'group' },
    h('div', { class: 'screen' },
      h('div', { class: 'pv-card' },
        h('span', { class: 'pv-close', 'aria-hidden': 'true' }, '×'),
        img,
        h('p', { class: 'pv-title', id: 'pv-title' }, p.title || '(no title)'),
        h('p', { class: 'pv-content' }, p.content || ''),
        buttons.length ? h('div', { class: 'pv-btns' }, buttons) : null))));
}

// actionBar is the popup form's sticky bar: the main actions, then the others. On a phone (the
// .phone-only controls show below 700 px) the others fold behind "More…", destructive ones out of
// the thumb's way, and "Preview" floats the live preview above the bar, beside the fields.
export function actionBar(main, others) {
  const more = h('div', { class: 'more-actions', id: 'more-actions' }, others);
  const toggle = (btn, el, cls) => { const on = el.classList.toggle(cls); btn.setAttribute('aria-expanded', String(on)); };
  const moreBtn = h('button', { type: 'button', class: 'secondary phone-only', id: 'more-toggle', 'aria-expanded': 'false', 'aria-controls': 'more-actions',
    onclick: () => toggle(moreBtn, more, 'open') }, 'More…');
  const previewBtn = h('button', { type: 'button', class: 'secondary phone-only', id: 'preview-toggle', 'aria-expanded': 'false', 'aria-controls': 'preview-pane',
    onclick: () => toggle(previewBtn, document.getElementById('preview-pane'), 'floating') }, 'Preview');
  return h('div', { class: 'actions sticky' }, main, previewBtn, others.some(Boolean) ? [moreBtn, more] : null);
}
