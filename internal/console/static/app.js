// The operator console: a hash-routed page over the admin API (docs/CONTRACT.md). This is its
// shell: the routes table, sign-in and sign-out, and the guard that keeps unsaved edits from
// being left by accident. Each screen is a module of pages/; each API resource is wrapped once in
// api/; the shared state is state.js (session, navigation) and cache.js (read caches); the
// page's chrome is ui.js, form parts form.js, numbers and charts figures.js.
import { token, setUnauthorizedHandler, errorText } from './lib.js';
import { session, loadMe, nav, unsaved } from './state.js';
import { screen, alertBox, renderWho, confirmLeave } from './ui.js';
import { signInScreen } from './pages/signin.js';
import { listScreen } from './pages/popups.js';
import { editScreen } from './pages/popup/edit.js';
import { experimentScreen } from './pages/experiment.js';
import { audiencesScreen } from './pages/audiences.js';
import { audienceScreen } from './pages/audience.js';
import { goalsScreen } from './pages/goals.js';
import { holdoutScreen } from './pages/holdout.js';
import { explainScreen } from './pages/explain.js';
import { auditScreen } from './pages/audit.js';
import { importScreen } from './pages/import.js';
import { operatorsScreen } from './pages/operators.js';
import { settingsScreen } from './pages/settings.js';

const navEl = document.getElementById('nav');
const signoutBtn = document.getElementById('signout');

// routes: the address (#/…) of every screen, first match wins. A new page is one module of pages/
// and one row here (and, for a menu entry, one link in index.html).
const routes = [
  [/^#\/popups\/new$/, () => editScreen(null)],
  [/^#\/popups\/(\d+)$/, (m) => editScreen(Number(m[1]))],
  [/^#\/popups\/(\d+)\/experiment(?:\?(.*))?$/, (m) => experimentScreen(Number(m[1]), m[2])],
  [/^#\/popups(?:\?(.*))?$/, (m) => listScreen(m[1])],
  [/^#\/audiences$/, () => audiencesScreen()],
  [/^#\/goals$/, () => goalsScreen()],
  [/^#\/holdout(?:\?(.*))?$/, (m) => holdoutScreen(m[1])],
  [/^#\/audiences\/([^/?]+)$/, (m) => audienceScreen(decodeURIComponent(m[1]))],
  [/^#\/explain$/, () => explainScreen()],
  [/^#\/audit$/, () => auditScreen()],
  [/^#\/import$/, () => importScreen()],
  [/^#\/operators$/, () => operatorsScreen()],
  [/^#\/settings$/, () => settingsScreen()],
];

async function route() {
  const seq = ++nav.seq;
  nav.leaveGuard = null; // the editor sets it again once it is on show
  nav.shownHash = location.hash;
  const signedIn = !!token.get();
  navEl.hidden = !signedIn;
  signoutBtn.hidden = !signedIn;
  if (!signedIn) {
    session.me = null;
    renderWho();
    return signInScreen();
  }
  if (!session.me) {
    const r = await loadMe();
    if (seq !== nav.seq) return;
    if (!session.me) return screen('Popup console', alertBox('Who is signed in cannot be read now: ' + errorText(r)));
  }
  renderWho();
  const hash = location.hash || '#/popups';
  for (const a of navEl.querySelectorAll('a')) {
    if (hash.startsWith('#/' + a.dataset.nav)) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  for (const [re, f] of routes) {
    const m = hash.match(re);
    if (m) return f(m);
  }
  location.hash = '#/popups';
}
nav.route = route;

setUnauthorizedHandler(() => {
  token.clear();
  session.signInNotice = 'The admin API refused the token (401). Sign in again.';
  route();
});

// Leaving unsaved edits of the editor (another screen, sign-out, reload, closing the tab) asks first.
window.addEventListener('beforeunload', (ev) => {
  if (!unsaved()) return;
  ev.preventDefault();
  ev.returnValue = ''; // older browsers ask only when this is set
});

signoutBtn.addEventListener('click', async () => {
  if (unsaved() && !await confirmLeave()) return;
  nav.leaveGuard = null;
  token.clear();
  session.signInNotice = 'Signed out.';
  location.hash = '#/popups';
  route();
});

// In-app navigation (a menu link, Back) with unsaved edits: the address goes back to the editor
// until the operator has answered.
window.addEventListener('hashchange', async () => {
  if (!unsaved()) return route();
  const to = location.hash;
  history.replaceState(null, '', nav.shownHash || '#/popups');
  if (!await confirmLeave()) return;
  nav.leaveGuard = null;
  location.hash = to;
});

route();
