// Types of popup-client.js (the popup service's browser SDK; docs/CLIENTS.md).

export interface PopupClientOptions {
  /** The public listener, e.g. "https://popup.example.com". */
  baseUrl: string;
  uid: string;
  /** 1-4 dotted numbers. */
  appVersion: string;
  lang?: string;
  region?: string;
  /** The gateway's X-Popup-Uid-Sig for this uid, or a function returning a fresh one. */
  signature?: string | (() => string | Promise<string>);
  /** URL schemes a link may open (default http, https). */
  linkSchemes?: string[];
  /** Opens a clicked link (default location.assign). */
  openLink?: (url: string) => void;
  /** Wait before a retry without Retry-After, in ms (default 500, growing with each send). */
  retryDelayMs?: number;
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
  link_url?: string;
  buttons?: PopupButton[];
  ext?: Record<string, unknown>;
}

export interface ActionResult {
  action: 'click' | 'close';
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
  /** Settles once the user's click or close is recorded (or given up). */
  done: Promise<ActionResult>;
}

export interface ActionInput {
  popupId: number;
  action: 'click' | 'close';
  decisionId?: string;
  button?: number;
  eventId?: string;
}

export interface PopupClient {
  /** Fetches the decision and shows the popup, if any, as a modal dialog in container. */
  show(container: HTMLElement): Promise<Shown | null>;
  /** The decision alone: null when there is none, or the answer is degraded, failed or late. */
  decide(): Promise<{ popup: PublicPopup; decisionId: string } | null>;
  /** Records a click or close, retried with one event id on a network failure or a 503. */
  act(a: ActionInput): Promise<ActionResult>;
}

export function createPopupClient(opts: PopupClientOptions): PopupClient;
