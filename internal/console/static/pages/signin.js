// The sign-in screen: the admin token, tried on the API before it is kept (in this tab only).
import { h, token, errorText } from '../lib.js';
import { listPopups } from '../api/popups.js';
import { session, reroute } from '../state.js';
import { screen, alertBox } from '../ui.js';

export function signInScreen() {
  const err = h('p', { id: 'token-error', class: 'field-error', hidden: true });
  const input = h('input', { id: 'token', name: 'token', type: 'password', autocomplete: 'off', required: true, 'aria-describedby': 'token-help' });
  const form = h('form', { class: 'card narrow', novalidate: true },
    h('div', { class: 'field' },
      h('label', { for: 'token' }, 'Admin token'),
      input,
      h('p', { id: 'token-help', class: 'help' }, 'The bearer token of the admin API (after make up: .local/admin-token). It is kept in this browser tab only and cleared by Sign out.'),
      err),
    h('button', { type: 'submit', id: 'signin' }, 'Sign in'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const t = input.value.trim();
    const fail = (msg) => {
      err.textContent = msg; err.hidden = false;
      input.setAttribute('aria-invalid', 'true');
      input.setAttribute('aria-describedby', 'token-help token-error');
      input.focus();
    };
    if (!t) return fail('Enter the admin token.');
    const r = await listPopups({ limit: 1 }, { token: t });
    if (r.status === 401) return fail('Wrong token: the admin API answered 401.');
    if (!r.ok) return fail(errorText(r));
    token.set(t);
    session.me = null; // read for this token
    session.signInNotice = '';
    reroute();
  });
  screen('Sign in', session.signInNotice ? alertBox(session.signInNotice, session.signInNotice === 'Signed out.' ? 'info' : 'error') : null, form);
}
