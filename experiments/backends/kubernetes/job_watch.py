"""Wait for the Job the Flux Operator makes for a MiniCluster to turn Complete or Failed.

The Job is listed once, then watched from the list's resourceVersion in
windows of `window_s`.  A dropped connection, a 5xx or an odd line in the
stream lists again after a backoff, up to the policy's retries in a row (a
window that ran out quietly resets the count); a 410 (the resourceVersion is
too old) lists again at once; 401/403 stop at once.  If the operator makes no
Job within `start_timeout_s`, it is probably not running: that is an error
saying where to look, not a long wait for the cell's timeout.  `check` (the
pods' watch, pod_watch) runs before each window and after each event; with
it, a window is at most `check_every_s` long, so a stuck pod is seen in time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import urllib3
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from experiments.backends.base import BackendError
from experiments.backends.kubernetes.api import (
    ApiUnavailable,
    KubeApi,
    RetryPolicy,
    is_transient,
)
from experiments.backends.kubernetes.objects import JOB_LIST, WATCH_EVENT, dig, job_outcome
from experiments.model.operator import OPERATOR_NAMESPACE
from experiments.tool_output import ToolOutputError, read_json

__all__ = ["wait_for_job"]


def wait_for_job(
    api: KubeApi,
    ns: str,
    name: str,
    deadline: float,
    *,
    start_timeout_s: float,
    window_s: float,
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
    check: Callable[[], None] | None = None,
    check_every_s: float = 15.0,
) -> tuple[str, str] | None:
    """("Complete" | "Failed", reason) once Job `name` finishes; None when `deadline`
    (a time.monotonic() value) passes first."""
    selector = f"metadata.name={name}"
    resource_version: str | None = None
    failures = 0
    seen = False
    start_deadline = time.monotonic() + start_timeout_s

    def backoff(err: BaseException) -> int:
        """The failures in a row so far, after sleeping; ApiUnavailable past the retries."""
        count = failures + 1
        if count > policy.retries:
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ApiUnavailable(
                f"the Kubernetes API at {api.host} did not report Job {name} after "
                f"{policy.retries + 1} attempts: {reason}"
            )
        sleep(policy.delay(count))
        return count

    while True:
        if check is not None:
            check()
        now = time.monotonic()
        if now >= deadline:
            return None
        if not seen and now >= start_deadline:
            raise BackendError(
                f"the Flux Operator made no Job for MiniCluster {name} within "
                f"{start_timeout_s:g} s: is it running? "
                f"(kubectl -n {OPERATOR_NAMESPACE} get pods)"
            )
        # Until the Job is seen, the start deadline bounds a window too; after it,
        # only the cell's own deadline does (else every watch would be 1 s long).
        limit = min(window_s, deadline - now)
        if not seen:
            limit = min(limit, start_deadline - now + 1)
        if check is not None:
            limit = min(limit, check_every_s)
        window = max(1, int(limit))
        try:
            if resource_version is None:
                jobs = api.call(
                    f"list Job {name}",
                    api.batch.list_namespaced_job,
                    ns,
                    field_selector=selector,
                    expect=JOB_LIST,
                )
                for job in jobs.get("items") or []:
                    seen = True
                    if (outcome := job_outcome(job)) is not None:
                        return outcome
                resource_version = dig(jobs, "metadata", "resourceVersion")
            # With _preload_content=False the client hands back the raw HTTP response.
            response: Any = api.batch.list_namespaced_job(
                ns,
                field_selector=selector,
                resource_version=resource_version,
                watch=True,
                timeout_seconds=window,
                _request_timeout=window + policy.request_timeout_s,
                _preload_content=False,
            )
            try:
                # Each line is one event; read here (not by kubernetes.watch, whose
                # json.loads would raise on an odd line) so an odd line is one message.
                for line in iter_resp_lines(response):
                    if not line.strip():
                        continue
                    event = read_json(
                        api.asked(f"watch Job {name}"),
                        line,
                        WATCH_EVENT,
                        verb="streamed",
                        quote=False,
                    )
                    job = event.get("object") or {}
                    if event["type"] == "ERROR":
                        if job.get("code") == 410:  # too old a resourceVersion: list again
                            resource_version = None
                            break
                        raise ApiException(
                            status=job.get("code"),
                            reason=f"{job.get('reason')}: {job.get('message')}",
                        )
                    seen = True
                    resource_version = dig(job, "metadata", "resourceVersion") or resource_version
                    if event["type"] == "DELETED":
                        return "Failed", "the Job was deleted before it finished"
                    if (outcome := job_outcome(job)) is not None:
                        return outcome
                    if time.monotonic() >= deadline:
                        return None
                    if check is not None:
                        check()
            finally:
                response.close()
                response.release_conn()
            failures = 0  # a watch that ran out its window is healthy
        except ApiException as err:
            if err.status in (401, 403):
                raise api.refused(err, f"watch Job {name}") from None
            if err.status == 410:  # too old a resourceVersion: list again
                resource_version = None
                continue
            if not is_transient(err):
                raise
            failures = backoff(err)
            resource_version = None
        except (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError) as err:
            failures = backoff(err)
            resource_version = None
        except ToolOutputError as err:
            # An odd line (a proxy cut a line short, say): list again, as after a drop.
            failures = backoff(err)
            resource_version = None
