"""Load shapes for loadtest/locustfile.py.

StepLoadShape: start with --popup-step-users users, add as many every --popup-step-seconds, for
--popup-step-count steps, then stop (the step options are POPUP_LOAD_STEP_* variables or
popup-step-* keys of locust.conf). Read the report's "Number of users" chart against response
times and failures to find where the service, or the load generators, saturate.

It is enabled by POPUP_LOAD_SHAPE=step (locustfile.py then imports it), or by naming this file
after the locustfile: locust -f loadtest/locustfile.py,loadtest/popup_shapes.py. With a shape,
--users, --spawn-rate and --run-time are ignored: the steps decide.
"""

from __future__ import annotations

from locust import LoadTestShape

import popup_scenario as sc


class StepLoadShape(LoadTestShape):
    def tick(self):
        env = getattr(getattr(self, "runner", None), "environment", None)
        opts = sc.options_dict(getattr(env, "parsed_options", None))
        return sc.step_tick(self.get_run_time(), opts)
