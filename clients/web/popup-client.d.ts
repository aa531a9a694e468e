// Types of popup-client.js (the popup service's browser SDK; docs/CLIENTS.md).

export interface PopupClientOptions {
  /** The public listener, e.g. "https://popup.example.com". */
  baseUrl: string;
  /** The logged-in user's id (1-64 of A-Za-z0-9_.:-); absent, null or "": an anonymous id
   * generated once and kept in storage ("popup-anon-uid"). */
  uid?: string | null;
  /** 1-4 dotted numbers, e.g. "8.10.0". */
  appVersion: string;
  lang?: string;
  region?: string;
  /** The gateway's X-Popup-Uid-Sig for the current uid, or a function returning a fresh one. */
  signature?: string | ((uid: string) => string | Promise<string>);
  /** URL schemes a link may open (default http, https). */
  linkSchemes?: string[];
  /** Opens a clicked link (default location.assign). */
  openLink?: (url: string) => void;
  /** Wait before a retry without Retry-After, in ms (default 500, growing with each send). */
  retryDelayMs?: number;
  /** The decision's budget in ms (default 1000): a later answer shows nothing and counts nothing. */
  budgetMs?: number;
  /** Labels the page translates (default { close: 'Close' }). */
  labels?: { close?: string };
  /** false: no default stylesheet (the page styles the popup-* classes itself). */
  css?: boolean;
  /** Where the anonymous id is kept (default localStorage; null: this page only). */
  storage?: Pick<Storage, 'getItem' | 'setItem'> | null;
  /** Called on each failure the SDK otherwise swallows (a refused, failed or late call). */
  onError?: (e: PopupError) => void;
}

export interface PopupError {
  /** What failed: "decide", "click", "close", "impression" or "convert". */
  op: string;
  /** The HTTP status; 0 without an answer (network, CORS, over budget). */
  status: number;
  /** The service's error code, "network" or "http_<status>". */
  code: string;
  message: string;
  cause?: unknown;
}

export interface PopupButton {
  text?: string;
  link_url?: string;
}

export interface PublicPopup {
  id: number;
  title?: string;
  content?: string;
  image_url?: string;
  /** The image's text alternative: the accessible name of an image-only popup. */
  image_alt?: string;
  link_url?: string;
  buttons?: PopupButton[];
  ext?: Record<string, unknown>;
}

export interface ActionResult {
  action: 'click' | 'close' | 'impression';
  /** The clicked button's index. */
  button?: number;
  /** The idempotency key every send of this action carried. */
  eventId: string;
  /** Whether the service took it (202). */
  accepted: boolean;
}

export interface Shown {
  popup: PublicPopup;
  decisionId: string;
  /** Settles with whether the impression was confirmed (counted). */
  confirmed: Promise<boolean>;
  /** Settles once the user's click or close is recorded (or given up). */
  done: Promise<ActionResult>;
}

export interface ActionInput {
  popupId: number;
  action: 'click' | 'close' | 'impression';
  decisionId?: string;
  button?: number;
  eventId?: string;
}

export interface ConversionResult {
  goal: string;
  eventId: string;
  accepted: boolean;
}

/** Where and for whom a decision is asked (docs/CONTRACT.md §2, "Placements, triggers and
 * rules"): all optional; none is a plain request for the homepage. */
export interface Where {
  /** The placement (1-64 of a-z0-9_-; default "home"). */
  placement?: string;
  /** An event that just happened (1-64 of A-Za-z0-9_.:-): only popups triggered by it show. */
  event?: string;
  /** The event's properties (at most 20; only with event). */
  properties?: Record<string, string | number | boolean>;
  /** The user's attributes the popups' rules read (at most 50; keys 1-64 of A-Za-z0-9_.-, values
   * at most 256 characters). */
  attrs?: Record<string, string | number | boolean>;
}

export interface PopupClient {
  /** Fetches the decision for where and shows the popup, if any, as a modal dialog in container,
   * then confirms its impression. A second call while one is under way or open joins it. */
  show(container: HTMLElement, where?: Where): Promise<Shown | null>;
  /** The decision alone (confirm mode): a popup it returns counts only once confirmed with
   * act({action: 'impression', ...}) within 30 s. */
  decide(where?: Where): Promise<{ popup: PublicPopup; decisionId: string } | null>;
  /** Records a click, close or impression, retried with one event id on a network failure or a 503. */
  act(a: ActionInput): Promise<ActionResult>;
  /** Reports a conversion of goal (docs/CONTRACT.md §14). */
  convert(goal: string, o?: { eventId?: string; value?: number }): Promise<ConversionResult>;
  /** Switches to the logged-in uid (null: back to the anonymous id). */
  identify(uid: string | null): void;
  /** The uid calls are made for. */
  readonly uid: string;
}

export function createPopupClient(opts: PopupClientOptions): PopupClient;
