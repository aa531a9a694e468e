"""The homepage scenario of the popup service (docs/CONTRACT.md §3), for locust.

A simulated user opens the app's homepage: GET /api/v1/popup for a uid drawn from a pool (or, for
a share of the opens, a brand-new uid: a first visit), with
that uid's platform, app version, region and language (stable per uid). When a popup comes back,
the user waits a moment and clicks it, closes it, or ignores it, with the configured
probabilities: POST /api/v1/popups/{id}/actions with a fresh event_id (uuid4) and the decision_id
of the impression; now and then the app retries an action with the same event_id. Then the user
thinks, and opens the homepage again (as another uid of the pool).

Every answer is checked (status and JSON shape); a degraded answer (X-Popup-Degraded: 1) is a
failure unless --popup-degraded-ok. Statistics are grouped by route, never by uid:
    GET  /api/v1/popup
    GET  /api/v1/popup (degraded)        only with --popup-degraded-ok
    POST /api/v1/popups/[id]/actions

Configuration: see loadtest/README.md. Every knob is a flag (--popup-uid-pool), an environment
variable (POPUP_LOAD_UID_POOL) and a key of loadtest/locust.conf; the master passes its values to
its workers. The step shape is chosen when this file is imported: POPUP_LOAD_SHAPE=step.

On the master (or a single local process) only:
  - test_start seeds a realistic popup set through the admin API when none exists;
  - quitting checks the thresholds (failure ratio, p95, p99, minimum requests), sets the process
    exit code (0 pass, 1 fail), logs a verdict and each worker's throughput and CPU, and writes
    <csv prefix>_summary.json next to locust's CSV files.
"""

from __future__ import annotations

import json
import logging
import os
import random
import resource
import socket
import time
import uuid

import gevent
from locust import FastHttpUser, events, task
from locust.runners import MasterRunner, WorkerRunner

import popup_scenario as sc
import popup_seed

log = logging.getLogger("popup.load")

GET_NAME = "/api/v1/popup"
DEGRADED_NAME = "/api/v1/popup (degraded)"
ACTION_NAME = "/api/v1/popups/[id]/actions"

_shape = os.environ.get("POPUP_LOAD_SHAPE", "").strip().lower()
if _shape == "step":
    from popup_shapes import StepLoadShape  # noqa: F401  (locust picks up the class)
elif _shape not in ("", "none", "off"):
    raise SystemExit(f"POPUP_LOAD_SHAPE={_shape!r}: want step or none")


@events.init_command_line_parser.add_listener
def _add_options(parser, **_kw):
    for o in sc.OPTIONS:
        parser.add_argument("--" + o.name, env_var=o.env, default=o.default, type=o.type,
                           help=f"{o.help} (env {o.env}, default {o.default!r})",
                           include_in_web_ui=o.web_ui, is_secret=o.secret)


class _Run:
    """Per-process state of the current test, rebuilt at every test_start."""

    opts: dict = sc.options_dict(None)
    population: sc.Population = sc.Population.from_options(opts)
    seed_error: str | None = None
    # this process's own throughput and CPU since test_start (reported to the master)
    requests = 0
    t0 = time.monotonic()
    cpu0 = 0.0
    # master: the latest report of each worker
    workers: dict = {}


def _cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _configure(environment) -> None:
    _Run.opts = sc.options_dict(environment.parsed_options)
    _Run.population = sc.Population.from_options(_Run.opts)


@events.test_start.add_listener
def _on_test_start(environment, **_kw):
    _configure(environment)
    _Run.requests, _Run.t0, _Run.cpu0 = 0, time.monotonic(), _cpu_seconds()
    _Run.workers = {}
    if isinstance(environment.runner, WorkerRunner):
        return
    # master or local runner: seed once per test
    _Run.seed_error = None
    mode = str(_Run.opts["popup_seed"]).strip().lower()
    if mode in ("off", "no", "false", "0", "never"):
        log.info("seeding off")
        return
    if mode != "auto":
        _Run.seed_error = f"POPUP_LOAD_SEED={mode!r}: want auto or off"
        log.error(_Run.seed_error)
        return
    try:
        outcome = popup_seed.seed_if_empty(_Run.opts["popup_admin_url"], _Run.opts["popup_admin_token"],
                                           public_url=environment.host)
    except popup_seed.AdminError as e:
        _Run.seed_error = f"seeding failed: {e}"
        log.error(_Run.seed_error)
        return
    (log.warning if outcome.startswith("skipped") else log.info)("seed: %s", outcome)


@events.request.add_listener
def _count_request(**_kw):
    _Run.requests += 1


def _own_report() -> dict:
    wall = time.monotonic() - _Run.t0
    return {"host": socket.gethostname(), "pid": os.getpid(), "requests": _Run.requests,
            "wall_s": round(wall, 3), "cpu_s": round(_cpu_seconds() - _Run.cpu0, 3)}


@events.report_to_master.add_listener
def _report_to_master(client_id, data, **_kw):
    data["popup_worker"] = _own_report()


@events.worker_report.add_listener
def _worker_report(client_id, data, **_kw):
    if "popup_worker" in data:
        _Run.workers[client_id] = data["popup_worker"]


def _worker_lines(reports: dict) -> list[str]:
    lines = []
    for cid, r in sorted(reports.items()):
        wall, cpu, n = r["wall_s"] or 1e-9, r["cpu_s"], r["requests"]
        lines.append(f"{r['host']}/{r['pid']}: {n} requests in {wall:.0f} s = {n / wall:.0f} req/s, "
                     f"CPU {cpu:.1f} s = {100 * cpu / wall:.0f}% of one core"
                     + (f", {n / cpu:.0f} requests per CPU-second" if cpu > 0 else ""))
    return lines


@events.quitting.add_listener
def _on_quitting(environment, **_kw):
    runner = environment.runner
    if runner is None or isinstance(runner, WorkerRunner):
        return
    opts = _Run.opts
    total = runner.stats.total
    p95 = total.get_response_time_percentile(0.95) or 0
    p99 = total.get_response_time_percentile(0.99) or 0
    extra = [_Run.seed_error] if _Run.seed_error else []
    verdict = sc.evaluate_thresholds(total.num_requests, total.num_failures, p95, p99, opts, extra)
    reports = dict(_Run.workers) if isinstance(runner, MasterRunner) else {"local": _own_report()}
    for line in verdict.lines:
        log.info("threshold %s", line)
    for line in _worker_lines(reports):
        log.info("load generator %s", line)
    log.info("verdict: %s", "PASS" if verdict.passed else "FAIL")
    environment.process_exit_code = 0 if verdict.passed else 1
    prefix = getattr(environment.parsed_options, "csv_prefix", None)
    if prefix:
        summary = {"verdict": verdict.to_dict(), "requests": total.num_requests,
                   "failures": total.num_failures, "rps": round(total.total_rps, 1),
                   "p50_ms": total.get_response_time_percentile(0.5) or 0, "p95_ms": p95, "p99_ms": p99,
                   "host": environment.host, "load_generators": reports,
                   "options": {k: v for k, v in opts.items() if k != "popup_admin_token"}}
        with open(prefix + "_summary.json", "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=1, default=str)
            f.write("\n")


class HomepageUser(FastHttpUser):
    """One simulated app user at a time: every homepage open is a uid drawn from the pool."""

    host = os.environ.get("POPUP_TARGET", "http://127.0.0.1:8080")  # --host / LOCUST_HOST win

    def __init__(self, environment):
        self.network_timeout = self.connection_timeout = _Run.opts["popup_timeout"]
        super().__init__(environment)

    def wait_time(self):
        o = _Run.opts
        return random.uniform(o["popup_wait_min"], max(o["popup_wait_min"], o["popup_wait_max"]))

    @task
    def open_homepage(self):
        o = _Run.opts
        pop = _Run.population
        if random.random() < o["popup_new_user_share"]:
            dev = pop.new_device()  # a first visit
        else:
            dev = pop.device(random.randrange(pop.pool))
        with self.client.get(dev.path, name=GET_NAME,
                             catch_response=True) as r:
            if r.status_code == 0:  # no HTTP answer: connection refused, reset, timeout
                r.failure(_net_error(r.error))
                return
            err, doc, degraded = sc.check_decision(r.status_code, r.headers, r.content, o["popup_degraded_ok"])
            if err:
                r.failure(err)
                return
            if degraded:
                r.request_meta["name"] = DEGRADED_NAME
            r.success()
        popup = doc.get("popup")
        if not popup:
            return
        roll = random.random()
        if roll < o["popup_click_prob"]:
            action = "click"
        elif roll < o["popup_click_prob"] + o["popup_close_prob"]:
            action = "close"
        else:
            return  # ignored: the user scrolled on
        lo, hi = o["popup_action_delay_min"], max(o["popup_action_delay_min"], o["popup_action_delay_max"])
        if hi > 0:
            gevent.sleep(random.uniform(lo, hi))
        body = {"uid": dev.uid, "action": action, "event_id": str(uuid.uuid4()),
                "decision_id": doc.get("decision_id", "")}
        self._act(popup["id"], body)
        if random.random() < o["popup_retry_prob"]:
            self._act(popup["id"], body)  # the app did not see the 202 and retries: applied once

    def _act(self, popup_id: int, body: dict) -> None:
        with self.client.post(f"/api/v1/popups/{popup_id}/actions", json=body, name=ACTION_NAME,
                              catch_response=True) as r:
            if r.status_code == 0:
                r.failure(_net_error(r.error))
                return
            err = sc.check_action(r.status_code, r.content)
            if err:
                r.failure(err)
            else:
                r.success()


def _net_error(e) -> str:
    # the class and message, never the URL (it holds the uid: one failure row per uid otherwise)
    return f"{type(e).__name__}: {e}"[:200] if e is not None else "no response"
