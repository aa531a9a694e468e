"""Seed popups for a load test against an empty stack, through the admin API (docs/CONTRACT.md §3).

locustfile.py calls seed_if_empty() from the test_start event on the master (or the local
runner), never on a worker. Only the standard library is used, so that this also runs as a
script:

    python3 loadtest/popup_seed.py --admin-url http://127.0.0.1:8081 --token "$TOKEN" [--dry-run]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timedelta, timezone
from typing import Any

log = logging.getLogger("popup.seed")

DAY = 86400


def _ts(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def seed_popups(now: datetime | None = None) -> list[dict[str, Any]]:
    """A realistic campaign set: varied priorities, targeting, rollouts and cooldowns, plus the
    scheduled, expired and draft campaigns a real admin list always has. The targeting values
    match the default mixes of popup_scenario (platforms, app versions, regions, languages)."""
    now = now or datetime.now(timezone.utc)
    cdn = "https://cdn.example.com/popups"

    def content(title: str, text: str, image: str, link: str, buttons: list[tuple[str, str]], **ext: Any):
        return {"title": title, "content": text, "image_url": f"{cdn}/{image}" if image else "",
                "link_url": link, "buttons": [{"text": t, "link_url": u} for t, u in buttons], "ext": ext}

    return [
        {"name": "eu-privacy-update", "priority": 120,
         "targeting": {"regions": ["de", "gb"]},
         "max_impressions": 1, "click_cooldown_seconds": -1, "close_cooldown_seconds": -1,
         **content("We updated our privacy policy", "Here is what changed and why.", "privacy.png",
                   "app://settings/privacy", [("Read", "app://settings/privacy"), ("OK", "")], kind="notice")},
        {"name": "spring-sale", "priority": 100,
         "targeting": {"platforms": ["ios", "android"], "min_app_version": "8.10.0",
                       "regions": ["cn", "us", "gb"]},
         "reshow_after_seconds": DAY, "click_cooldown_seconds": 7 * DAY,
         "start_at": _ts(now - timedelta(days=2)), "end_at": _ts(now + timedelta(days=12)),
         **content("Spring sale", "Up to 50% off this week.", "spring.png", "app://sale/spring",
                   [("Shop now", "app://sale/spring"), ("Later", "")], theme="blossom")},
        {"name": "upgrade-app", "priority": 90,
         "targeting": {"platforms": ["ios", "android"], "max_app_version": "8.9.999"},
         "reshow_after_seconds": 3600, "click_cooldown_seconds": DAY, "close_cooldown_seconds": 6 * 3600,
         **content("A new version is out", "Update for faster search and fewer crashes.", "upgrade.png",
                   "app://store/update", [("Update", "app://store/update")], kind="upgrade")},
        {"name": "new-search-tour", "priority": 80,
         "targeting": {"rollout_percent": 30, "uids": ["qa-device-1", "qa-device-2"]},
         "reshow_after_seconds": 3600, "click_cooldown_seconds": -1, "max_impressions": 3,
         **content("Try the new search", "Find anything in one tap.", "search.png", "app://search",
                   [("Show me", "app://search/tour")])},
        {"name": "jp-golden-week", "priority": 70,
         "targeting": {"regions": ["jp"], "langs": ["ja"]},
         "start_at": _ts(now - timedelta(days=1)), "end_at": _ts(now + timedelta(days=14)),
         "reshow_after_seconds": 12 * 3600,
         **content("ゴールデンウィーク", "最大30%オフ", "gw.png", "app://sale/gw", [("見る", "app://sale/gw")])},
        {"name": "br-free-shipping", "priority": 65,
         "targeting": {"regions": ["br"], "langs": ["pt"]},
         "reshow_after_seconds": 12 * 3600, "click_cooldown_seconds": 3 * DAY,
         **content("Frete grátis", "Em compras acima de R$ 99.", "frete.png", "app://sale/frete",
                   [("Aproveitar", "app://sale/frete")])},
        {"name": "android-beta-invite", "priority": 60,
         "targeting": {"platforms": ["android"], "min_app_version": "8.12.0", "rollout_percent": 10},
         "click_cooldown_seconds": -1, "close_cooldown_seconds": 7 * DAY,
         **content("Join the beta", "Get new features first.", "beta.png", "https://example.com/beta",
                   [("Join", "https://example.com/beta")])},
        {"name": "web-newsletter", "priority": 50,
         "targeting": {"platforms": ["web"], "langs": ["en", "de"]},
         "reshow_after_seconds": 7 * DAY, "close_cooldown_seconds": 14 * DAY,
         **content("Stay in the loop", "One email a week, no spam.", "", "https://example.com/newsletter",
                   [("Subscribe", "https://example.com/newsletter")])},
        {"name": "daily-check-in", "priority": 10,
         "reshow_after_seconds": 900, "click_cooldown_seconds": DAY, "close_cooldown_seconds": 3600,
         **content("Daily check-in", "Collect today's points.", "checkin.png", "app://rewards/checkin",
                   [("Collect", "app://rewards/checkin")], kind="reminder")},
        {"name": "summer-preview", "priority": 150,
         "start_at": _ts(now + timedelta(days=30)), "end_at": _ts(now + timedelta(days=60)),
         **content("Summer is coming", "Early access starts soon.", "summer.png", "app://sale/summer",
                   [("Remind me", "app://sale/summer")])},
        {"name": "winter-sale-ended", "priority": 140,
         "start_at": _ts(now - timedelta(days=60)), "end_at": _ts(now - timedelta(days=30)),
         **content("Winter sale", "Last chance!", "winter.png", "app://sale/winter",
                   [("Shop", "app://sale/winter")])},
        {"name": "holiday-draft", "priority": 200, "status": "draft",
         **content("Happy holidays", "Draft: copy not final.", "", "app://home", [("OK", "")])},
    ]


class AdminError(Exception):
    pass


class Admin:
    """A minimal admin API client (bearer token, JSON)."""

    def __init__(self, base_url: str, token: str, timeout: float = 5.0):
        self.base = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def _call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                doc = json.loads(raw)
            except ValueError:
                doc = raw.decode(errors="replace")
            return e.code, doc

    def list(self) -> list[dict[str, Any]]:
        """Every popup that is not archived: the list comes in pages, followed by its next."""
        out: list[dict[str, Any]] = []
        path = "/admin/v1/popups?limit=1000"
        while True:
            status, doc = self._call("GET", path)
            if status != 200 or not isinstance(doc, dict):
                raise AdminError(f"GET {path}: {status} {doc}")
            out.extend(doc.get("popups") or [])
            nxt = doc.get("next")
            if not nxt:
                return out
            path = "/admin/v1/popups?limit=1000&cursor=" + urllib.parse.quote(str(nxt))

    def create(self, popup: dict[str, Any]) -> dict[str, Any]:
        status, doc = self._call("POST", "/admin/v1/popups", popup)
        if status != 201 or not isinstance(doc, dict):
            raise AdminError(f"POST /admin/v1/popups {popup.get('name')!r}: {status} {doc}")
        return doc


def public_config_version(host: str, timeout: float = 2.0) -> int | None:
    """config_version from the public /readyz, or None."""
    try:
        with urllib.request.urlopen(host.rstrip("/") + "/readyz", timeout=timeout) as resp:
            v = json.loads(resp.read()).get("config_version")
            return v if isinstance(v, int) else None
    except (OSError, ValueError, AttributeError):
        return None


def seed_if_empty(admin_url: str, token: str, public_url: str | None = None,
                  wait_seconds: float = 5.0) -> str:
    """Create the seed set when the admin API lists no popups. Returns what happened, one of
    "skipped: ...", "exists: N popups", "seeded: N popups". Raises AdminError when the admin API
    answered but refused (that is a broken run, not a missing admin API); an unreachable admin
    API or a missing token is a "skipped" (the caller logs it)."""
    if not token:
        return "skipped: no admin token (POPUP_ADMIN_TOKEN)"
    admin = Admin(admin_url, token)
    try:
        existing = admin.list()
    except OSError as e:  # connection refused, timeout, DNS
        return f"skipped: admin API at {admin_url} unreachable ({e})"
    if existing:
        return f"exists: {len(existing)} popups"
    before = public_config_version(public_url) if public_url else None
    created = [admin.create(p) for p in seed_popups()]
    # Every API instance serves an admin change within 2 s (docs/CONTRACT.md §1); wait until the target
    # serves it, so that the first requests of the run already see the seeded set.
    if public_url and before is not None:
        deadline = time.monotonic() + wait_seconds
        while time.monotonic() < deadline:
            v = public_config_version(public_url)
            if v is not None and v > before:
                break
            time.sleep(0.1)
        else:
            log.warning("target %s did not report a new config_version within %.0f s", public_url, wait_seconds)
    return f"seeded: {len(created)} popups (ids {', '.join(str(p.get('id')) for p in created)})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--admin-url", default=os.environ.get("POPUP_ADMIN_URL", "http://127.0.0.1:8081"))
    ap.add_argument("--token", default=os.environ.get("POPUP_ADMIN_TOKEN", ""))
    ap.add_argument("--target", default=os.environ.get("POPUP_TARGET"), help="public URL to wait on")
    ap.add_argument("--dry-run", action="store_true", help="print the seed set and exit")
    args = ap.parse_args(argv)
    if args.dry_run:
        json.dump(seed_popups(), sys.stdout, indent=1, ensure_ascii=False)
        print()
        return 0
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        print(seed_if_empty(args.admin_url, args.token, args.target))
    except AdminError as e:
        print(f"seeding failed: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
