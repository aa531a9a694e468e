// popup-client.js: the popup service's browser SDK, an ES module without dependencies; types in
// popup-client.d.ts, usage in docs/CLIENTS.md. Decisions are asked with confirm=1: a popup
// counts (the impression action) only once on screen; an answer dropped counts nothing.

const MAX_SENDS = 4;
const SIG = 'X-Popup-Uid-Sig';
const ID = /^[A-Za-z0-9_.:-]{1,64}$/;
const VERSION = /^\d{1,9}(\.\d{1,9}){0,3}$/;
const ANON_KEY = 'popup-anon-uid';
const CSS = `:where(.popup-backdrop){position:fixed;inset:0;display:flex;align-items:center;justify-content:center;z-index:2147483647;background:var(--popup-backdrop,rgba(0,0,0,.5))}
:where(.popup-dialog){background:var(--popup-bg,#fff);color:var(--popup-color,#111);padding:var(--popup-padding,1.5rem);max-width:var(--popup-max-width,28rem);border-radius:var(--popup-radius,8px);font:var(--popup-font,inherit)}
:where(.popup-image){max-width:100%;display:block}
:where(.popup-close){float:right}
:where(html.popup-open){overflow:hidden}`;

/** @param {number} ms */
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A random id: 32 hex digits. */
const newId = () => Array.from(crypto.getRandomValues(new Uint8Array(16)), (x) => x.toString(16).padStart(2, '0')).join('');

/** @param {string} what @param {unknown} v @param {RegExp} re @param {string} rule */
function check(what, v, re, rule) {
  if (typeof v !== 'string' || !re.test(v)) throw new TypeError(`popup-client: ${what} must be ${rule}, got ${JSON.stringify(v)}`);
  return v;
}

/** @type {WeakSet<Document>} */
const styled = new WeakSet();

/** @param {import('./popup-client').PopupClientOptions} opts */
export function createPopupClient(opts) {
  const base = String(opts.baseUrl || '').replace(/\/+$/, '');
  if (!/^https?:\/\//.test(base)) throw new TypeError('popup-client: baseUrl must be an http(s) URL');
  const appVersion = check('appVersion', opts.appVersion, VERSION, '1 to 4 dotted numbers like "8.10.0"');
  const storage = opts.storage === undefined ? globalThis.localStorage : opts.storage;
  const labels = { close: 'Close', ...opts.labels };
  const budget = opts.budgetMs ?? 1000;
  const schemes = (opts.linkSchemes || ['http', 'https']).map((s) => s.toLowerCase() + ':');
  const openLink = opts.openLink || ((url) => location.assign(url));
  const onError = opts.onError || (() => {});
  let uid = opts.uid == null || opts.uid === '' ? anonymous() : check('uid', opts.uid, ID, '1-64 characters of A-Za-z0-9_.:-');
  /** @type {Promise<any> | null} */
  let current = null;

  /** The anonymous id of this browser: generated once, kept in storage. */
  function anonymous() {
    let id = null;
    try {
      id = storage && storage.getItem(ANON_KEY);
    } catch {
      // storage refused (privacy mode): an id for this page only
    }
    if (!id || !ID.test(id)) {
      id = 'anon-' + newId();
      try {
        storage && storage.setItem(ANON_KEY, id);
      } catch {
        // as above
      }
    }
    return id;
  }

  /** @param {string} op @param {any} [res] @param {any} [body] @param {any} [cause] */
  function fail(op, res, body, cause) {
    const e = body && body.error;
    try {
      onError({ op, status: res ? res.status : 0, code: e ? e.code : cause ? 'network' : 'http_' + (res && res.status), message: e ? e.message : String(cause || ''), cause });
    } catch {
      // a hook's own error is not the SDK's
    }
  }

  /** @returns {Promise<Record<string, string>>} */
  async function headers() {
    const sig = typeof opts.signature === 'function' ? await opts.signature(uid) : opts.signature;
    return sig ? { [SIG]: sig } : {};
  }

  /** The decision for where, or null (none, degraded, failed, late); a popup counts once confirmed. Long: as a POST. @param {import('./popup-client').Where} [w] */
  async function decide(w = {}) {
    const p = { uid, platform: 'web', app_version: appVersion, confirm: '1', region: opts.region, lang: opts.lang, placement: w.placement, event: w.event };
    const q = new URLSearchParams();
    for (const k in p) if (p[k]) q.set(k, p[k]);
    for (const [pre, o] of [['prop.', w.properties], ['attr.', w.attrs]]) for (const k in o) q.set(pre + k, String(o[k]));
    const long = q.toString().length > 6000;
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), budget);
    try {
      const res = await fetch(long ? base + '/api/v1/decisions' : `${base}/api/v1/popup?${q}`, {
        headers: { ...(await headers()), ...(long && { 'Content-Type': 'application/json' }) }, signal: ctl.signal, credentials: 'omit',
        ...(long && { method: 'POST', body: JSON.stringify({ ...p, event_properties: w.properties, attrs: w.attrs }) }),
      });
      const body = await res.json().catch(() => null);
      if (!res.ok) return fail('decide', res, body), null;
      if (res.headers.get('X-Popup-Degraded') || !body || !body.popup) return null;
      return { popup: body.popup, decisionId: body.decision_id };
    } catch (err) {
      fail('decide', null, null, err); // offline, refused (CORS) or over budget: nothing now
      return null;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Posts payload, retrying a network failure or a 503 (same body: applied once). @param {string} op @param {string} path @param {object} payload */
  async function post(op, path, payload) {
    const body = JSON.stringify(payload);
    for (let send = 1; send <= MAX_SENDS; send++) {
      let wait = (opts.retryDelayMs ?? 500) * send;
      try {
        const res = await fetch(base + path, {
          method: 'POST', body, keepalive: true, credentials: 'omit',
          headers: { 'Content-Type': 'application/json', ...(await headers()) },
        });
        if (res.status === 202) return true;
        const err = await res.json().catch(() => null);
        if (res.status !== 503 || send === MAX_SENDS) return fail(op, res, err), false; // a 4xx would get the same answer again
        const after = Number(res.headers.get('Retry-After'));
        if (after > 0) wait = Math.min(after, 30) * 1000;
      } catch (err) {
        if (send === MAX_SENDS) fail(op, null, null, err);
      }
      if (send < MAX_SENDS) await sleep(wait);
    }
    return false;
  }

  /**
   * Records a click, close or impression.
   * @param {{popupId: number, action: 'click' | 'close' | 'impression', decisionId?: string, button?: number, eventId?: string}} a
   */
  async function act(a) {
    const eventId = a.eventId || newId();
    const accepted = await post(a.action, `/api/v1/popups/${a.popupId}/actions`,
      { uid, action: a.action, event_id: a.action === 'impression' ? undefined : eventId, decision_id: a.decisionId, button: a.button });
    return { action: a.action, button: a.button, eventId, accepted };
  }

  /** A conversion (docs/CONTRACT.md §14; a value needs the uid signature). @param {string} goal @param {{eventId?: string, value?: number}} [o] */
  async function convert(goal, o = {}) {
    const eventId = check('eventId', o.eventId || newId(), ID, '1-64 characters of A-Za-z0-9_.:-');
    if (o.value !== undefined && !Number.isFinite(o.value)) throw new TypeError('popup-client: value must be a finite number');
    const accepted = await post('convert', '/api/v1/conversions', { uid, goal, event_id: eventId, value: o.value });
    return { goal, eventId, accepted };
  }

  /** @param {string | undefined} url */
  function allowedLink(url) {
    try {
      return url && schemes.includes(new URL(url).protocol) ? url : null;
    } catch {
      return null;
    }
  }

  /**
   * Fetches the decision and, when there is a popup, shows it as a modal dialog in container and
   * confirms its impression. While a show() is under way or its dialog open, another show()
   * joins it: one dialog, one impression.
   * @param {HTMLElement} container
   * @param {import('./popup-client').Where} [where]
   */
  function show(container, where) {
    if (!current) current = display(container, where).then((s) => {
      if (s) s.done.then(() => (current = null));
      else current = null;
      return s;
    });
    return current;
  }

  /** @param {HTMLElement} container @param {import('./popup-client').Where} [where] */
  async function display(container, where) {
    const d = await decide(where);
    if (!d) return null;
    const { popup, decisionId } = d;
    const doc = container.ownerDocument;
    const html = doc.documentElement;
    if (opts.css !== false && !styled.has(doc)) {
      const sheet = new CSSStyleSheet(); // a constructed sheet: allowed under a strict CSP, overridable by the page
      sheet.replaceSync(CSS);
      doc.adoptedStyleSheets = [sheet, ...doc.adoptedStyleSheets];
      styled.add(doc);
    }
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
    const close = el('button', 'close', '×');
    close.type = 'button';
    close.setAttribute('aria-label', labels.close);
    dialog.append(close);
    if (popup.title) {
      const title = el('h2', 'title', popup.title);
      title.id = id + '-title';
      dialog.setAttribute('aria-labelledby', title.id);
      dialog.append(title);
    } else {
      dialog.setAttribute('aria-label', popup.image_alt || popup.content || labels.close);
    }
    // the popup's own link: its content and its image open it, a click without a button index
    const link = allowedLink(popup.link_url);
    const linked = (/** @type {HTMLElement} */ inner) => {
      if (!link) return inner;
      const a = el('a', 'link');
      a.href = link;
      a.append(inner);
      a.addEventListener('click', (e) => {
        e.preventDefault();
        finish({ action: 'click' }, link);
      });
      return a;
    };
    const img = allowedLink(popup.image_url);
    if (img && /^https?:/.test(img)) {
      const i = el('img', 'image');
      i.src = img;
      i.alt = popup.image_alt || '';
      dialog.append(popup.image_alt ? linked(i) : i);
    }
    if (popup.content) {
      const content = el('p', 'content');
      content.id = id + '-content';
      content.append(linked(doc.createTextNode(popup.content)));
      dialog.setAttribute('aria-describedby', content.id);
      dialog.append(content);
    }
    const buttons = el('div', 'buttons');
    (popup.buttons || []).forEach((b, i) => {
      const btn = el('button', 'button', b.text || '');
      btn.type = 'button';
      btn.addEventListener('click', () => finish({ action: 'click', button: i }, allowedLink(b.link_url)));
      buttons.append(btn);
    });
    if (buttons.childElementCount) dialog.append(buttons);
    backdrop.append(dialog);

    /** @type {(r: any) => void} */
    let resolve = () => {};
    const done = new Promise((r) => (resolve = r));
    let finished = false;
    // the rest of the page is inert and does not scroll while the dialog is open
    const inert = Array.from(doc.body.children).filter((e) => !e.inert && e !== container && !e.contains(container));
    /**
     * @param {{action: 'click' | 'close', button?: number}} a
     * @param {string | null} [to]
     */
    function finish(a, to) {
      if (finished) return;
      finished = true;
      backdrop.remove();
      inert.forEach((e) => (e.inert = false));
      html.classList.remove('popup-open');
      doc.removeEventListener('keydown', onKey, true);
      if (before instanceof HTMLElement) before.focus();
      confirmed.then(() => act({ popupId: popup.id, decisionId, ...a })).then(resolve);
      if (to) openLink(to);
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
    inert.forEach((e) => (e.inert = true));
    html.classList.add('popup-open');
    close.focus();
    // on screen: now it is an impression
    const confirmed = act({ popupId: popup.id, action: 'impression', decisionId });
    return { popup, decisionId, confirmed: confirmed.then((r) => r.accepted), done };
  }

  /**
   * Switches to the logged-in user's uid. The anonymous id's state (what it was shown, clicked,
   * closed) stays with the anonymous id on the service: the logged-in uid starts from its own.
   * The anonymous id stays in storage for a later logout (identify(null)).
   * @param {string | null} next
   */
  function identify(next) {
    uid = next == null || next === '' ? anonymous() : check('uid', next, ID, '1-64 characters of A-Za-z0-9_.:-');
  }

  return { show, decide, act, convert, identify, get uid() { return uid; } };
}
