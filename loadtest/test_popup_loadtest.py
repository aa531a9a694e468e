"""Unit tests of the load-test helpers (no locust run, no network beyond a loopback fake).

    .venv/bin/python -m pytest -q -p no:cacheprovider loadtest/test_popup_loadtest.py

scripts/locust-smoke.sh runs them before its distributed run.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from collections import Counter
from datetime import datetime, timezone
from urllib.parse import urlencode
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import popup_scenario as sc  # noqa: E402
import popup_seed  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
UID_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
VERSION_RE = re.compile(r"^[0-9]{1,6}(\.[0-9]{1,6}){0,3}$")
CODE_RE = re.compile(r"^[A-Za-z0-9_-]{0,16}$")


def defaults():
    return sc.options_dict(None)


# --- mixes and the population -------------------------------------------------------------

def test_weighted_mix_parses_and_picks_by_weight():
    m = sc.WeightedMix("ios:45, android:45,web:10")
    assert m.values == ["ios", "android", "web"]
    assert m.pick(0.0) == "ios"
    assert m.pick(0.449) == "ios"
    assert m.pick(0.45) == "android"
    assert m.pick(0.95) == "web"
    assert m.pick(0.999999) == "web"
    assert m.share("web") == pytest.approx(0.10)


def test_weighted_mix_defaults_weight_and_skips_zero():
    m = sc.WeightedMix("a,b:0,c:3")
    assert m.values == ["a", "c"]
    assert m.share("a") == pytest.approx(0.25)


@pytest.mark.parametrize("spec", ["", " , ", "a:0", "a:-1", "a:x"])
def test_weighted_mix_rejects_bad_specs(spec):
    with pytest.raises(ValueError):
        sc.WeightedMix(spec)


def test_population_quotes_odd_values():
    p = sc.Population(10, "a b/", "ios", "1.0", "x&y/z z")
    d = p.device(3)
    assert d.uid == "a b/3"
    assert d.path == "/api/v1/popup?" + urlencode(d.query()).replace("+", "%20")


def test_population_is_stable_valid_and_follows_the_mix():
    o = defaults()
    p1, p2 = sc.Population.from_options(o), sc.Population.from_options(o)
    n = 20000
    devices = [p1.device(i) for i in range(n)]
    assert devices[:100] == [p2.device(i) for i in range(100)]  # same uid, same device, any process
    platforms = Counter(d.platform for d in devices)
    mix = sc.WeightedMix(o["popup_platforms"])
    for value in mix.values:
        assert platforms[value] / n == pytest.approx(mix.share(value), abs=0.02)
    for d in devices[:500]:
        q = d.query()
        assert UID_RE.match(q["uid"]) and q["uid"].startswith(o["popup_uid_prefix"])
        assert q["platform"] in ("ios", "android", "web")
        assert VERSION_RE.match(q["app_version"])
        assert CODE_RE.match(q.get("region", "")) and CODE_RE.match(q.get("lang", ""))
        assert d.path == "/api/v1/popup?" + urlencode(q)
    # an empty region in the locale mix ("/en") is not sent at all
    assert any("region" not in d.query() for d in devices)


# --- answer checks --------------------------------------------------------------------------

OK_POPUP = json.dumps({"popup": {"id": 3, "title": "t", "buttons": [], "ext": {}},
                       "decision_id": "d-1", "config_version": 7}).encode()
OK_NULL = b'{"popup":null,"config_version":7}'


@pytest.mark.parametrize("status,headers,body,degraded_ok,want_err,want_degraded", [
    (200, {}, OK_POPUP, False, None, False),
    (200, {}, OK_NULL, False, None, False),
    (200, {"X-Popup-Degraded": "1"}, b'{"popup":null}', False, "degraded", True),
    (200, {"X-Popup-Degraded": "1"}, b'{"popup":null}', True, None, True),
    (500, {}, b"oops", False, "status 500", False),
    (400, {}, b'{"error":{}}', False, "status 400", False),
    (200, {}, b"<html>", False, "not JSON", False),
    (200, {}, b'{"decision_id":"x"}', False, "no \"popup\"", False),
    (200, {}, b'{"popup":null}', False, "config_version", False),
    (200, {}, b'{"popup":[],"config_version":1}', False, "neither null", False),
    (200, {}, b'{"popup":{"id":"3"},"decision_id":"d","config_version":1}', False, "popup.id", False),
    (200, {}, b'{"popup":{"id":true},"decision_id":"d","config_version":1}', False, "popup.id", False),
    (200, {}, b'{"popup":{"id":3},"config_version":1}', False, "decision_id", False),
])
def test_check_decision(status, headers, body, degraded_ok, want_err, want_degraded):
    err, doc, degraded = sc.check_decision(status, headers, body, degraded_ok)
    assert degraded == want_degraded
    if want_err is None:
        assert err is None
    else:
        assert err is not None and want_err in err


def test_check_action():
    assert sc.check_action(202, b'{"status":"accepted"}') is None
    assert "503" in sc.check_action(503, b'{"error":{}}')
    assert sc.check_action(202, b"{}") is not None
    assert sc.check_action(202, b"nope") is not None


# --- thresholds and the step shape -----------------------------------------------------------

def test_thresholds():
    o = defaults()
    assert sc.evaluate_thresholds(1000, 10, 20, 40, o).passed  # exactly 1%: allowed
    v = sc.evaluate_thresholds(1000, 11, 20, 40, o)
    assert not v.passed and any(line.startswith("FAIL failure ratio") for line in v.lines)
    assert not sc.evaluate_thresholds(1000, 0, 51, 40, o).passed
    assert not sc.evaluate_thresholds(1000, 0, 20, 101, o).passed
    assert not sc.evaluate_thresholds(0, 0, 0, 0, o).passed  # no traffic
    assert not sc.evaluate_thresholds(1000, 0, 1, 1, o, ["seeding failed"]).passed
    off = dict(o, popup_max_p95_ms=0, popup_max_p99_ms=0, popup_min_requests=0)
    assert sc.evaluate_thresholds(1000, 0, 5000, 9000, off).passed


def test_step_tick():
    o = dict(defaults(), popup_step_users=50, popup_step_seconds=10, popup_step_count=3, popup_step_spawn_rate=0)
    assert sc.step_tick(0, o) == (50, 25.0)
    assert sc.step_tick(9.9, o) == (50, 25.0)
    assert sc.step_tick(10, o) == (100, 25.0)
    assert sc.step_tick(29.9, o) == (150, 25.0)
    assert sc.step_tick(30, o) is None


def test_options_parse_their_defaults_and_config_file_keys_exist():
    names = {o.name for o in sc.OPTIONS}
    assert len(names) == len(sc.OPTIONS)
    assert all(o.env.startswith("POPUP_") for o in sc.OPTIONS)
    keys = set()
    with open(os.path.join(HERE, "locust.conf"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                key, _, value = line.partition("=")
                keys.add(key.strip())
                opt = next((o for o in sc.OPTIONS if o.name == key.strip()), None)
                if opt:
                    opt.type(value.strip())  # every value in locust.conf parses
    assert {k for k in keys if k.startswith("popup-")} <= names
    assert sc.parse_bool("yes") and not sc.parse_bool("0")
    with pytest.raises(ValueError):
        sc.parse_probability("1.5")


# --- seeding ---------------------------------------------------------------------------------

def test_seed_set_is_realistic_and_well_formed():
    now = datetime(2026, 5, 1, tzinfo=timezone.utc)
    popups = popup_seed.seed_popups(now)
    assert 8 <= len(popups) <= 12
    assert len({p["name"] for p in popups}) == len(popups)
    assert len({p["priority"] for p in popups}) >= 8
    live = [p for p in popups if p.get("status", "active") == "active"
            and (p.get("start_at") is None or p["start_at"] <= "2026-05-01T00:00:00Z")
            and (p.get("end_at") is None or p["end_at"] > "2026-05-01T00:00:00Z")]
    assert len(live) >= 6
    # something for everyone: at least one live popup has no targeting limits
    assert any(not p.get("targeting") for p in live)
    assert any(p.get("targeting", {}).get("rollout_percent", 100) < 100 for p in live)
    assert any(p.get("click_cooldown_seconds") == -1 for p in live)
    assert any(p.get("max_impressions") for p in live)
    for p in popups:
        t = p.get("targeting", {})
        assert set(t.get("platforms", [])) <= {"ios", "android", "web"}
        for b in p["buttons"]:
            assert b["text"].strip()


class _FakeAdmin(BaseHTTPRequestHandler):
    popups: list = []
    token = "t0k"

    def log_message(self, *a):
        pass

    def _send(self, code, doc):
        raw = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self):
        if self.path == "/readyz":
            return self._send(200, {"status": "ready", "config_version": 1 + len(self.popups)})
        if self.headers.get("Authorization") != f"Bearer {self.token}":
            return self._send(401, {"error": {"code": "unauthorized", "message": "no"}})
        return self._send(200, {"popups": self.popups, "next": None})

    def do_POST(self):
        if self.headers.get("Authorization") != f"Bearer {self.token}":
            return self._send(401, {"error": {"code": "unauthorized", "message": "no"}})
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        body["id"] = len(self.popups) + 1
        self.popups.append(body)
        return self._send(201, body)


@pytest.fixture
def fake_admin():
    _FakeAdmin.popups = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _FakeAdmin)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_seed_if_empty_creates_once(fake_admin):
    out = popup_seed.seed_if_empty(fake_admin, "t0k", public_url=fake_admin, wait_seconds=1)
    assert out.startswith("seeded: 12")
    assert len(_FakeAdmin.popups) == 12
    assert popup_seed.seed_if_empty(fake_admin, "t0k").startswith("exists: 12")
    assert len(_FakeAdmin.popups) == 12


def test_seed_refused_or_unreachable(fake_admin):
    with pytest.raises(popup_seed.AdminError):
        popup_seed.seed_if_empty(fake_admin, "wrong")
    assert popup_seed.seed_if_empty(fake_admin, "").startswith("skipped")
    # a port nothing listens on
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    assert popup_seed.seed_if_empty(f"http://127.0.0.1:{port}", "t0k").startswith("skipped")


def test_readme_documents_every_variable():
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    for o in sc.OPTIONS:
        assert f"`--{o.name}`" in readme, o.name
        assert f"`{o.env}`" in readme, o.env


def test_new_devices_are_first_visits_outside_the_pool():
    p = sc.Population(1000, "lt-", "ios", "1.0", "us/en")
    pool = {p.device(i).uid for i in range(1000)}
    fresh = [p.new_device() for _ in range(200)]
    uids = {d.uid for d in fresh}
    assert len(uids) == 200, "every first visit is a new uid"
    assert not uids & pool
    for d in fresh:
        assert len(d.uid) <= 64 and d.path.startswith(f"/api/v1/popup?uid={d.uid}&")
