"""The homepage scenario's knobs: option definitions, weighted mixes, and per-uid device traits.

Pure Python (no locust import), so that loadtest/test_popup_loadtest.py can test it without
starting anything. locustfile.py registers OPTIONS with locust's argument parser: every knob is
then a command-line flag (--popup-uid-pool), an environment variable (POPUP_LOAD_UID_POOL) and a
key of loadtest/locust.conf (popup-uid-pool = 100000), in locust's usual precedence: command line,
then environment, then config file, then the default here. A master sends its values to its
workers, so only the master needs to be configured.
"""

from __future__ import annotations

import bisect
import json
import random
from urllib.parse import quote
from dataclasses import dataclass
from typing import Any, Callable, Sequence


def parse_bool(value: Any) -> bool:
    """Accept the usual spellings of a boolean in an environment variable or a config file."""
    if isinstance(value, bool):
        return value
    s = str(value).strip().lower()
    if s in ("1", "true", "yes", "on", "y", "t"):
        return True
    if s in ("0", "false", "no", "off", "n", "f", ""):
        return False
    raise ValueError(f"not a boolean: {value!r}")


def parse_probability(value: Any) -> float:
    p = float(value)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"probability must be between 0 and 1: {value!r}")
    return p


def parse_non_negative(value: Any) -> float:
    x = float(value)
    if x < 0:
        raise ValueError(f"must be >= 0: {value!r}")
    return x


def parse_positive_int(value: Any) -> int:
    n = int(value)
    if n < 1:
        raise ValueError(f"must be >= 1: {value!r}")
    return n


class WeightedMix:
    """A weighted choice among string values, parsed from "value:weight,value:weight".

    A missing weight means 1; weights are relative (they need not sum to 100). The value is
    everything before the last colon, so values may not contain a colon themselves (none of the
    API's platforms, versions, regions or languages do).
    """

    def __init__(self, spec: str):
        values: list[str] = []
        cumulative: list[float] = []
        total = 0.0
        for raw in str(spec).split(","):
            item = raw.strip()
            if not item:
                continue
            value, sep, weight = item.rpartition(":")
            if not sep:
                value, weight = item, "1"
            w = float(weight)
            if w < 0:
                raise ValueError(f"negative weight in {spec!r}")
            if w == 0:
                continue
            total += w
            values.append(value.strip())
            cumulative.append(total)
        if not values:
            raise ValueError(f"empty mix: {spec!r}")
        self.spec = str(spec)
        self.values = values
        self._cumulative = cumulative
        self._total = total

    def pick(self, u: float) -> str:
        """The value for a uniform number u in [0, 1)."""
        i = bisect.bisect_right(self._cumulative, u * self._total)
        return self.values[min(i, len(self.values) - 1)]

    def share(self, value: str) -> float:
        """The fraction of picks that give value (for docs and tests)."""
        prev = 0.0
        got = 0.0
        for v, c in zip(self.values, self._cumulative):
            if v == value:
                got += c - prev
            prev = c
        return got / self._total

    def __repr__(self) -> str:
        return f"WeightedMix({self.spec!r})"


def parse_mix(value: Any) -> str:
    WeightedMix(value)  # validate now, keep the string (it travels to workers as an option)
    return str(value)


@dataclass(frozen=True)
class Option:
    name: str  # the flag without dashes; the config-file key
    env: str
    default: Any
    type: Callable[[Any], Any]
    help: str
    secret: bool = False
    web_ui: bool = True

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")


# Every knob of the scenario, the seeding, the thresholds and the step shape.
OPTIONS: Sequence[Option] = (
    # who opens the homepage
    Option("popup-uid-pool", "POPUP_LOAD_UID_POOL", 100000, parse_positive_int,
           "number of distinct uids; every homepage open picks one at random"),
    Option("popup-uid-prefix", "POPUP_LOAD_UID_PREFIX", "lt-", str,
           "uids are PREFIX0 .. PREFIX(pool-1)"),
    Option("popup-new-user-share", "POPUP_LOAD_NEW_USER_SHARE", 0.05, parse_probability,
           "share of homepage opens by a brand-new uid (a first visit: an install, a new account), "
           "never seen before by the service; the rest pick a uid of the pool"),
    Option("popup-platforms", "POPUP_LOAD_PLATFORMS", "android:55,ios:35,web:10", parse_mix,
           "platform mix, value:weight,..."),
    Option("popup-app-versions", "POPUP_LOAD_APP_VERSIONS",
           "8.12.0:30,8.11.2:25,8.10.0:20,8.9.5:15,7.4.1:10", parse_mix,
           "app version mix, value:weight,..."),
    Option("popup-locales", "POPUP_LOAD_LOCALES",
           "cn/zh:35,us/en:25,gb/en:5,de/de:10,jp/ja:10,br/pt:10,/en:5", parse_mix,
           "region/lang mix, value:weight,...; an empty side is not sent"),
    # what the user does
    Option("popup-click-prob", "POPUP_LOAD_CLICK_PROB", 0.15, parse_probability,
           "probability that a shown popup is clicked"),
    Option("popup-close-prob", "POPUP_LOAD_CLOSE_PROB", 0.60, parse_probability,
           "probability that a shown popup is closed (the rest are ignored)"),
    Option("popup-retry-prob", "POPUP_LOAD_RETRY_PROB", 0.02, parse_probability,
           "probability that an action is sent twice with the same event_id (a client retry)"),
    Option("popup-action-delay-min", "POPUP_LOAD_ACTION_DELAY_MIN", 0.5, parse_non_negative,
           "seconds between seeing a popup and acting on it, lower bound"),
    Option("popup-action-delay-max", "POPUP_LOAD_ACTION_DELAY_MAX", 2.0, parse_non_negative,
           "seconds between seeing a popup and acting on it, upper bound"),
    Option("popup-wait-min", "POPUP_LOAD_WAIT_MIN", 1.0, parse_non_negative,
           "seconds between two homepage opens of one simulated user, lower bound"),
    Option("popup-wait-max", "POPUP_LOAD_WAIT_MAX", 3.0, parse_non_negative,
           "seconds between two homepage opens of one simulated user, upper bound"),
    Option("popup-degraded-ok", "POPUP_LOAD_DEGRADED_OK", False, parse_bool,
           "count an X-Popup-Degraded answer as a success (reported under its own name)"),
    Option("popup-timeout", "POPUP_LOAD_TIMEOUT", 5.0, parse_non_negative,
           "connect and read timeout of every request, seconds"),
    # seeding
    Option("popup-seed", "POPUP_LOAD_SEED", "auto", str,
           "auto: create the seed popups when the admin API lists none; off: never"),
    Option("popup-admin-url", "POPUP_ADMIN_URL", "http://127.0.0.1:8081", str,
           "admin listener used for seeding"),
    Option("popup-admin-token", "POPUP_ADMIN_TOKEN", "", str,
           "admin bearer token used for seeding", secret=True, web_ui=False),
    # pass/fail, checked on the master when it quits
    Option("popup-max-fail-ratio", "POPUP_LOAD_MAX_FAIL_RATIO", 0.01, parse_probability,
           "fail the run when more than this fraction of requests failed"),
    Option("popup-max-p95-ms", "POPUP_LOAD_MAX_P95_MS", 50.0, parse_non_negative,
           "fail the run when the aggregated p95 exceeds this (0 = no limit)"),
    Option("popup-max-p99-ms", "POPUP_LOAD_MAX_P99_MS", 100.0, parse_non_negative,
           "fail the run when the aggregated p99 exceeds this (0 = no limit)"),
    Option("popup-min-requests", "POPUP_LOAD_MIN_REQUESTS", 1, int,
           "fail the run when fewer requests were made (0 = no limit)"),
    # step shape (active only with POPUP_LOAD_SHAPE=step)
    Option("popup-step-users", "POPUP_LOAD_STEP_USERS", 100, parse_positive_int,
           "step shape: users added per step"),
    Option("popup-step-seconds", "POPUP_LOAD_STEP_SECONDS", 30.0, parse_non_negative,
           "step shape: length of one step"),
    Option("popup-step-count", "POPUP_LOAD_STEP_COUNT", 5, parse_positive_int,
           "step shape: number of steps; the run ends after the last"),
    Option("popup-step-spawn-rate", "POPUP_LOAD_STEP_SPAWN_RATE", 0.0, parse_non_negative,
           "step shape: users started per second (0 = a step's users within 2 s)"),
)


def options_dict(parsed: Any) -> dict[str, Any]:
    """The scenario's values from locust's parsed options (or any object with the attributes),
    falling back to the defaults for what is missing."""
    out = {}
    for o in OPTIONS:
        v = getattr(parsed, o.dest, None) if parsed is not None else None
        out[o.dest] = o.type(o.default) if v is None else o.type(v)
    return out


@dataclass(frozen=True)
class Device:
    uid: str
    platform: str
    app_version: str
    region: str
    lang: str
    path: str  # the GET /api/v1/popup path with this device's query string

    def query(self) -> dict[str, str]:
        q = {"uid": self.uid, "platform": self.platform, "app_version": self.app_version}
        if self.region:
            q["region"] = self.region
        if self.lang:
            q["lang"] = self.lang
        return q


_MASK64 = (1 << 64) - 1


def _mix64(x: int) -> int:
    """splitmix64's finaliser: a cheap, well-spread hash of an integer."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


class Population:
    """The simulated user base: uid i always has the same platform, app version and locale, on
    every worker and in every run, so targeting and cooldowns see consistent devices."""

    def __init__(self, pool: int, prefix: str, platforms: str, versions: str, locales: str):
        self.pool = pool
        self.prefix = prefix
        self.platforms = WeightedMix(platforms)
        self.versions = WeightedMix(versions)
        self.locales = WeightedMix(locales)
        # Every piece of a query string is quoted once here, not per request: the mixes are
        # small, and a uid is the quoted prefix plus digits.
        self._q_prefix = quote(prefix, safe="")
        self._q = {v: quote(v, safe="") for m in (self.platforms, self.versions) for v in m.values}
        self._q_locale = {}
        for v in self.locales.values:
            region, _, lang = v.partition("/")
            region, lang = region.strip(), lang.strip()
            tail = (f"&region={quote(region, safe='')}" if region else "") + (
                f"&lang={quote(lang, safe='')}" if lang else "")
            self._q_locale[v] = (region, lang, tail)

    @classmethod
    def from_options(cls, opts: dict[str, Any]) -> "Population":
        return cls(opts["popup_uid_pool"], opts["popup_uid_prefix"], opts["popup_platforms"],
                   opts["popup_app_versions"], opts["popup_locales"])

    def new_device(self) -> Device:
        """A device no run has used before: an index far beyond the pool (62 random bits), with
        the attributes device() gives that index."""
        return self.device(self.pool + random.getrandbits(62))

    def device(self, i: int) -> Device:
        h = _mix64(i)
        # three independent 21-bit slices of one hash
        platform = self.platforms.pick((h & 0x1FFFFF) / 0x200000)
        version = self.versions.pick(((h >> 21) & 0x1FFFFF) / 0x200000)
        region, lang, tail = self._q_locale[self.locales.pick(((h >> 42) & 0x1FFFFF) / 0x200000)]
        path = (f"/api/v1/popup?uid={self._q_prefix}{i}&platform={self._q[platform]}"
                f"&app_version={self._q[version]}{tail}")
        return Device(f"{self.prefix}{i}", platform, version, region, lang, path)


def check_decision(status: int, headers: Any, body: bytes, degraded_ok: bool) -> tuple[str | None, dict | None, bool]:
    """Validate a GET /api/v1/popup answer against the HTTP contract (docs/CONTRACT.md §3).

    Returns (error, decision, degraded): error is None when the answer is acceptable, else a
    short message that becomes the failure's name in locust's failure table (so it must not
    contain per-request data such as a uid); decision is the parsed JSON when it was JSON.
    """
    degraded = (headers.get("X-Popup-Degraded") or headers.get("x-popup-degraded")) == "1"
    if status != 200:
        return f"status {status}, want 200", None, degraded
    try:
        doc = json.loads(body)
    except ValueError:
        return "body is not JSON", None, degraded
    if not isinstance(doc, dict) or "popup" not in doc:
        return "no \"popup\" key", None, degraded
    if degraded:
        if doc.get("popup") is not None:
            return "degraded answer with a popup", doc, True
        return (None if degraded_ok else "degraded answer (X-Popup-Degraded: 1)"), doc, True
    p = doc["popup"]
    if not _is_int(doc.get("config_version")):
        return "config_version missing or not an integer", doc, False
    if p is None:
        return None, doc, False
    if not isinstance(p, dict):
        return "popup is neither null nor an object", doc, False
    if not _is_int(p.get("id")) or p["id"] <= 0:
        return "popup.id missing or not a positive integer", doc, False
    d = doc.get("decision_id")
    if not isinstance(d, str) or not d:
        return "decision_id missing with a popup", doc, False
    return None, doc, False


def check_action(status: int, body: bytes) -> str | None:
    """Validate a POST /api/v1/popups/{id}/actions answer: 202 {"status": "accepted"}."""
    if status != 202:
        return f"status {status}, want 202"
    try:
        doc = json.loads(body)
    except ValueError:
        return "body is not JSON"
    if not isinstance(doc, dict) or doc.get("status") != "accepted":
        return "status is not \"accepted\""
    return None


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def step_tick(run_time: float, opts: dict[str, Any]) -> tuple[int, float] | None:
    """The step shape: users and spawn rate at run_time seconds, None when done."""
    users = opts["popup_step_users"]
    seconds = max(opts["popup_step_seconds"], 1.0)
    count = opts["popup_step_count"]
    if run_time >= seconds * count:
        return None
    step = int(run_time // seconds)
    rate = opts["popup_step_spawn_rate"] or max(users / 2.0, 1.0)
    return users * (step + 1), float(rate)


@dataclass(frozen=True)
class Verdict:
    passed: bool
    lines: list[str]  # one per threshold: "ok   failure ratio 0.12% <= 1.00%" / "FAIL ..."

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "checks": self.lines}


def evaluate_thresholds(num_requests: int, num_failures: int, p95_ms: float, p99_ms: float,
                        opts: dict[str, Any], extra_failures: Sequence[str] = ()) -> Verdict:
    """Compare a run's aggregated figures with the configured thresholds."""
    lines: list[str] = []
    ok = True

    def check(good: bool, text: str) -> None:
        nonlocal ok
        ok = ok and good
        lines.append(("ok   " if good else "FAIL ") + text)

    min_req = opts["popup_min_requests"]
    if min_req > 0:
        check(num_requests >= min_req, f"requests {num_requests} >= {min_req}")
    ratio = num_failures / num_requests if num_requests else 0.0
    max_ratio = opts["popup_max_fail_ratio"]
    check(ratio <= max_ratio, f"failure ratio {ratio:.4%} ({num_failures}/{num_requests}) <= {max_ratio:.2%}")
    for name, got, limit in (("p95", p95_ms, opts["popup_max_p95_ms"]), ("p99", p99_ms, opts["popup_max_p99_ms"])):
        if limit > 0:
            check(num_requests == 0 or got <= limit, f"{name} {got:.0f} ms <= {limit:.0f} ms")
    for text in extra_failures:
        check(False, text)
    return Verdict(ok, lines)
