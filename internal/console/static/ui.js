// The page's chrome, shared by every screen: the main area and its title, the toast, alerts,
// the confirmation dialog, the header's operator, and saving a file the API sent.
import { h } from './lib.js';
import { session, can } from './state.js';

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const whoEl = document.getElementById('whoami');
const toastEl = document.getElementById('toast');

// PAGE is the number of rows a list asks for at a time.
export const PAGE = 50;

// setKids replaces el's children, skipping the null and false of optional parts.
export const setKids = (el, ...children) => el.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));

// renderWho shows the operator and role in the header, and the Operators and Settings menu
// entries to admins only.
export function renderWho() {
  const me = session.me;
  whoEl.textContent = me?.operator ? `Signed in as ${me.operator} (${me.role})` : '';
  whoEl.hidden = !me?.operator;
  for (const [key, label] of [['operators', 'Operators'], ['settings', 'Settings']]) {
    const li = document.getElementById('nav-' + key);
    if (can('admin') && !li) nav.querySelector('ul').append(h('li', { id: 'nav-' + key }, h('a', { href: '#/' + key, 'data-nav': key }, label)));
    if (!can('admin') && li) li.remove();
  }
}

// roleNote is the notice that stands where a control the role may not use would be.
export function roleNote(text) {
  return h('div', { class: 'alert info', role: 'status', id: 'readonly-note' }, text);
}

export function toast(msg) {
  toastEl.textContent = msg;
  clearTimeout(toast.t);
  toast.t = setTimeout(() => { toastEl.textContent = ''; }, 6000);
}

// screen replaces the main content, sets the title and moves focus to the heading.
export function screen(title, ...children) {
  document.title = title + ' — Popup console';
  const h1 = h('h1', { tabindex: '-1', id: 'page-title' }, title);
  setKids(main, h1, ...children);
  h1.focus();
  return h1;
}

export function alertBox(msg, kind = 'error') {
  return h('div', { class: 'alert ' + kind, role: kind === 'error' ? 'alert' : 'status' }, msg);
}

// saveBlob hands a file to the browser's downloads under name, as a click on a link would.
export function saveBlob(blob, name) {
  const a = h('a', { href: URL.createObjectURL(blob), download: name }, name);
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
}

// confirmDialog opens the shared <dialog>; resolves true when confirmed. Focus starts on Cancel
// and goes back to the opener when the dialog closes. The answer is taken from the form's submit
// (or Esc), not from the close event: that event is queued, and one from a dialog just
// cancelled could otherwise answer the next one, opened quickly after.
const dlg = document.getElementById('confirm');
const dialog = { answer: null };
dlg.querySelector('form').addEventListener('submit', (ev) => dialog.answer?.(ev.submitter?.value === 'ok'));
dlg.addEventListener('cancel', () => dialog.answer?.(false));
dlg.addEventListener('close', () => { if (!dlg.open) dialog.answer?.(dlg.returnValue === 'ok'); });

// extra, when given, is shown below the text (the review of a publish: its diff table).
export function confirmDialog(title, text, okLabel, extra) {
  const opener = document.activeElement;
  document.getElementById('confirm-title').textContent = title;
  document.getElementById('confirm-text').textContent = text;
  document.getElementById('confirm-ok').textContent = okLabel;
  const body = document.getElementById('confirm-body');
  setKids(body, extra || null);
  // a long review scrolls inside the dialog: focusable and named, so the keyboard can scroll it
  if (extra) { body.tabIndex = 0; body.setAttribute('role', 'region'); body.setAttribute('aria-label', 'Details of the review'); } else { body.removeAttribute('tabindex'); body.removeAttribute('role'); body.removeAttribute('aria-label'); }
  dlg.classList.toggle('wide', !!extra);
  dialog.answer?.(false);
  return new Promise((resolve) => {
    dialog.answer = (ok) => {
      dialog.answer = null;
      if (dlg.open) dlg.close();
      if (opener && opener.isConnected) opener.focus();
      resolve(ok);
    };
    dlg.returnValue = 'cancel';
    dlg.showModal();
    document.getElementById('confirm-cancel').focus();
  });
}

// confirmLeave asks before unsaved edits of the popup form are dropped.
export const confirmLeave = () => confirmDialog('Leave with unsaved changes?', 'Your edits to this popup are not saved. Leave this screen and lose them?', 'Leave without saving');
