// popup-client.js: the popup service's browser SDK (docs/CLIENTS.md). A plain ES module, no
// build step, no dependencies: import it from where you serve it.
//
//   import { createPopupClient } from './popup-client.js';
//   const client = createPopupClient({ baseUrl: 'https://popup.example.com', uid, appVersion: '8.10.0' });
//   await client.show(document.body);
//
// It follows docs/CONTRACT.md: the GET is the impression; a degraded or failed answer shows
// nothing; a click or close echoes the decision_id, names the button, and is retried with the
// same event_id (applied once) on a network failure or a 503, after its Retry-After.

/** The budget of the decision GET: past it the page shows nothing. */
const DECISION_BUDGET_MS = 1000;
/** Sends of one action at most (the first and the retries). */
const MAX_SENDS = 4;
const SIG_HEADER = 'X-Popup-Uid-Sig';

/**
 * @typedef {Object} PopupClientOptions
 * @property {string} baseUrl the public listener, e.g. "https://popup.example.com"
 * @property {string} uid the user's id
 * @property {string} appVersion 1-4 dotted numbers
 * @property {string} [lang]
 * @property {string} [region]
 * @property {string | (() => string | Promise<string>)} [signature] the gateway's X-Popup-Uid-Sig
 *   for this uid, or a function returning a fresh one (when the service requires signatures)
 * @property {string[]} [linkSchemes] URL schemes a link may open (default http, https); add the
 *   deep-link schemes the server's POPUP_LINK_SCHEMES allows
 * @property {(url: string) => void} [openLink] opens a clicked link (default: location.assign)
 * @property {number} [retryDelayMs] wait before a retry without Retry-After (default 500)
 */

/**
 * @typedef {Object} PublicPopup
 * @property {number} id
 * @property {string} [title]
 * @property {string} [content]
 * @property {string} [image_url]
 * @property {string} [link_url]
 * @property {{text?: string, link_url?: string}[]} [buttons]
 * @property {Object} [ext]
 */

/**
 * @typedef {Object} ActionResult
 * @property {'click' | 'close'} action
 * @property {number} [button] the clicked button's index
 * @property {string} eventId the idempotency key every send of this action carried
 * @property {boolean} accepted whether the service took it (202)
 */

/**
 * @typedef {Object} Shown
 * @property {PublicPopup} popup
 * @property {string} decisionId
 * @property {Promise<ActionResult>} done settles once the user's click or close is recorded (or given up)
 */

/** @param {number} ms */
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A random event id: 32 hex digits. */
function newEventId() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

/**
 * @param {PopupClientOptions} opts
 */
export function createPopupClient(opts) {
  const base = opts.baseUrl.replace(/\/+$/, '');
  const schemes = (opts.linkSchemes || ['http', 'https']).map((s) => s.toLowerCase() + ':');
  const openLink = opts.openLink || ((url) => location.assign(url));

  /** @returns {Promise<Record<string, string>>} */
  async function headers() {
    const sig = typeof opts.signature === 'function' ? await opts.signature() : opts.signature;
    return sig ? { [SIG_HEADER]: sig } : {};
  }

  /**
   * The decision: the popup to show and its decision id, or null (none, degraded, failed, late).
   * @returns {Promise<{popup: PublicPopup, decisionId: string} | null>}
   */
  async function decide() {
    const q = new URLSearchParams({ uid: opts.uid, platform: 'web', app_version: opts.appVersion });
    if (opts.region) q.set('region', opts.region);
    if (opts.lang) q.set('lang', opts.lang);
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), DECISION_BUDGET_MS);
    try {
      const res = await fetch(`${base}/api/v1/popup?${q}`, { headers: await headers(), signal: ctl.signal, credentials: 'omit' });
      if (!res.ok || res.headers.get('X-Popup-Degraded')) return null;
      const body = await res.json();
      return body.popup ? { popup: body.popup, decisionId: body.decision_id } : null;
    } catch {
      return null; // offline, refused (CORS) or over budget: nothing now
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Records a click or close, retrying a network failure or a 503 with the same event id.
   * @param {{popupId: number, action: 'click' | 'close', decisionId?: string, button?: number, eventId?: string}} a
   * @returns {Promise<ActionResult>}
   */
  async function act(a) {
    const eventId = a.eventId || newEventId();
    const body = JSON.stringify({ uid: opts.uid, action: a.action, event_id: eventId, decision_id: a.decisionId, button: a.button });
    const result = { action: a.action, button: a.button, eventId, accepted: false };
    for (let send = 1; send <= MAX_SENDS; send++) {
      let wait = (opts.retryDelayMs ?? 500) * send;
      try {
        const res = await fetch(`${base}/api/v1/popups/${a.popupId}/actions`, {
          method: 'POST', body, keepalive: true, credentials: 'omit',
          headers: { 'Content-Type': 'application/json', ...(await headers()) },
        });
        if (res.status === 202) return { ...result, accepted: true };
        if (res.status !== 503) return result; // 4xx: a retry would get the same answer
        const after = Number(res.headers.get('Retry-After'));
        if (after > 0) wait = Math.min(after, 30) * 1000;
      } catch {
        // network failure: the action may or may not have arrived; the same event id makes a retry safe
      }
      if (send < MAX_SENDS) await sleep(wait);
    }
    return result;
  }

  /** @param {string | undefined} url */
  function allowedLink(url) {
    if (!url) return null;
    try {
      return schemes.includes(new URL(url).protocol) ? url : null;
    } catch {
      return null;
    }
  }

  /**
   * Fetches the decision and, when there is a popup, shows it as a modal dialog in container.
   * @param {HTMLElement} container
   * @returns {Promise<Shown | null>} null when there is nothing to show
   */
  async function show(container) {
    const d = await decide();
    if (!d) return null;
    const { popup, decisionId } = d;
    const doc = container.ownerDocument;
    const before = doc.activeElement;
    const el = (/** @type {string} */ tag, /** @type {string} */ cls, text = '') => {
      const e = doc.createElement(tag);
      e.className = 'popup-' + cls;
      e.textContent = text; // text, never HTML
      return e;
    };
    const backdrop = el('div', 'backdrop');
    const dialog = el('div', 'dialog');
    dialog.setAttribute('role', 'dialog');
    dialog.setAttribute('aria-modal', 'true');
    const id = 'popup-' + popup.id + '-' + decisionId.replace(/[^A-Za-z0-9_-]/g, '');
    const title = el('h2', 'title', popup.title || '');
    title.id = id + '-title';
    dialog.setAttribute('aria-labelledby', title.id);
    const content = el('p', 'content');
    content.id = id + '-content';
    // the popup's own link: its content opens it, a click without a button index
    const link = allowedLink(popup.link_url);
    if (link) {
      const a = el('a', 'link', popup.content || '');
      a.setAttribute('href', link);
      a.addEventListener('click', (e) => {
        e.preventDefault();
        finish({ action: 'click' }, link);
      });
      content.append(a);
    } else {
      content.textContent = popup.content || '';
    }
    dialog.setAttribute('aria-describedby', content.id);
    const close = el('button', 'close', '×');
    close.setAttribute('type', 'button');
    close.setAttribute('aria-label', 'Close');
    dialog.append(close, title);
    const img = allowedLink(popup.image_url);
    if (img && /^https?:/.test(img)) {
      const i = el('img', 'image');
      i.setAttribute('src', img);
      i.setAttribute('alt', '');
      dialog.append(i);
    }
    dialog.append(content);
    const buttons = el('div', 'buttons');
    (popup.buttons || []).forEach((b, i) => {
      const btn = el('button', 'button', b.text || '');
      btn.setAttribute('type', 'button');
      btn.addEventListener('click', () => finish({ action: 'click', button: i }, allowedLink(b.link_url)));
      buttons.append(btn);
    });
    dialog.append(buttons);
    backdrop.append(dialog);
    // CSSOM, not a style attribute or sheet: allowed under a page's strict CSP
    Object.assign(backdrop.style, { position: 'fixed', inset: '0', background: 'rgba(0,0,0,.5)', display: 'flex',
      alignItems: 'center', justifyContent: 'center', zIndex: '2147483647' });
    Object.assign(dialog.style, { background: '#fff', color: '#111', padding: '1.5rem', maxWidth: '28rem', borderRadius: '8px' });

    /** @type {(r: ActionResult) => void} */
    let resolve = () => {};
    const done = new Promise((r) => (resolve = r));
    let finished = false;
    /**
     * @param {{action: 'click' | 'close', button?: number}} a
     * @param {string | null} [link]
     */
    function finish(a, link) {
      if (finished) return;
      finished = true;
      backdrop.remove();
      doc.removeEventListener('keydown', onKey, true);
      if (before instanceof HTMLElement) before.focus();
      act({ popupId: popup.id, decisionId, ...a }).then(resolve);
      if (link) openLink(link);
    }
    /** @param {KeyboardEvent} e */
    function onKey(e) {
      if (e.key === 'Escape') {
        e.preventDefault();
        finish({ action: 'close' });
      } else if (e.key === 'Tab') {
        // the focus stays in the dialog: Tab from the last control goes to the first, and back
        const f = dialog.querySelectorAll('button, a[href]');
        const first = /** @type {HTMLElement} */ (f[0]);
        const last = /** @type {HTMLElement} */ (f[f.length - 1]);
        if (e.shiftKey ? doc.activeElement === first || !dialog.contains(doc.activeElement) : doc.activeElement === last) {
          e.preventDefault();
          (e.shiftKey ? last : first).focus();
        }
      }
    }
    close.addEventListener('click', () => finish({ action: 'close' }));
    doc.addEventListener('keydown', onKey, true);
    container.append(backdrop);
    close.focus();
    return { popup, decisionId, done };
  }

  return { show, decide, act };
}
