"""The Kubernetes API as the kubernetes backend needs it: one client, bounded retries.

Every call goes through `KubeApi.call`: transient failures (5xx, 429, a
dropped or refused connection) are retried with exponential backoff up to
`retries` times; 401/403 become a UserError at once (nothing a retry fixes).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import urllib3
import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from experiments.errors import UserError
from experiments.tool_output import Shape, ToolOutputError, read_json

__all__ = [
    "ApiUnavailable",
    "KubeApi",
    "RetryPolicy",
    "api_message",
    "connect",
    "is_transient",
]

_TRANSIENT_STATUS = {429, 500, 502, 503, 504}


class ApiUnavailable(Exception):
    """The API did not answer (or kept failing) after every retry; one line."""


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try: `retries` extra attempts, backoff doubling from `backoff_s`."""

    retries: int = 5
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    request_timeout_s: float = 30.0

    def delay(self, attempt: int) -> float:
        return float(min(self.backoff_s * 2 ** (attempt - 1), self.max_backoff_s))


def _reason(err: BaseException) -> str:
    if isinstance(err, ApiException):
        return f"{err.status} {err.reason}".strip()
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


def api_message(err: ApiException) -> str:
    """The API server's own one-line message from an error body, else the status line."""
    try:
        body = yaml.safe_load(err.body) if err.body else None
    except yaml.YAMLError:
        body = None
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return f"{err.status} {err.reason}"


def is_transient(err: BaseException) -> bool:
    if isinstance(err, ApiException):
        return err.status in _TRANSIENT_STATUS
    return isinstance(err, (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError))


class KubeApi:
    """Typed API objects over one ApiClient, and the retrying `call`."""

    def __init__(
        self,
        api_client: client.ApiClient,
        policy: RetryPolicy,
        context: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.api_client = api_client
        self.policy = policy
        self.context = context
        self.sleep = sleep
        self.core = client.CoreV1Api(api_client)
        self.batch = client.BatchV1Api(api_client)
        self.apps = client.AppsV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.version = client.VersionApi(api_client)
        self.authz = client.AuthorizationV1Api(api_client)

    @property
    def host(self) -> str:
        return str(self.api_client.configuration.host)

    def refused(self, err: ApiException, doing: str) -> UserError:
        return UserError(
            f"the Kubernetes API at {self.host} refused to {doing} ({_reason(err)}): check the "
            "credentials and permissions of your kubeconfig context"
            + (f" {self.context!r}" if self.context else "")
        )

    def call(
        self, doing: str, fn: Callable[..., Any], *args: Any, expect: Shape = dict, **kwargs: Any
    ) -> Any:
        """fn(*args, **kwargs)'s answer as plain JSON of shape `expect`, retried when transient.

        The client's typed models are skipped on purpose: they refuse objects
        missing fields the API spec calls required, which real servers and
        operators do leave out; kary reads the few fields it needs from the JSON,
        checked by experiments.tool_output (an empty, non-JSON or wrong-shape answer
        is ApiUnavailable, one line).  ApiException is raised for errors that are
        neither transient nor auth.
        """
        data = self._call(doing, fn, args, kwargs)
        try:
            return read_json(self.asked(doing), data, expect, verb="answered", quote=False)
        except ToolOutputError as err:
            raise ApiUnavailable(str(err)) from None

    def call_or_none(self, doing: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Like `call`, None when it fails: for an answer that only fills a provenance
        field, whose loss (no RBAC to list nodes, say) must not fail the cell."""
        try:
            return self.call(doing, fn, *args, **kwargs)
        except (ApiException, ApiUnavailable, UserError):
            return None

    def asked(self, doing: str) -> str:
        """How an odd answer names its source: `the Kubernetes API at URL, asked to DOING,`."""
        return f"the Kubernetes API at {self.host}, asked to {doing},"

    def call_text(self, doing: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
        """Like `call`, for answers that are text (pod logs)."""
        return self._call(doing, fn, args, kwargs).decode("utf-8", errors="replace")

    def _call(
        self, doing: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> bytes:
        kwargs.setdefault("_request_timeout", self.policy.request_timeout_s)
        kwargs["_preload_content"] = False
        attempt = 0
        while True:
            try:
                response = fn(*args, **kwargs)
                try:
                    return bytes(response.data or b"")
                finally:
                    response.release_conn()
            except ApiException as err:
                if err.status in (401, 403):
                    raise self.refused(err, doing) from None
                if not is_transient(err):
                    raise
                last: BaseException = err
            except (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError) as err:
                last = err
            attempt += 1
            if attempt > self.policy.retries:
                raise ApiUnavailable(
                    f"the Kubernetes API at {self.host} did not {doing} after "
                    f"{self.policy.retries + 1} attempts: {_reason(last)}"
                )
            self.sleep(self.policy.delay(attempt))

    def close(self) -> None:
        self.api_client.close()


def connect(context: str | None, policy: RetryPolicy) -> KubeApi:
    """A KubeApi for the kubeconfig context (default: the current one), checked to answer."""
    configuration = client.Configuration()
    # Read $KUBECONFIG now: the kubernetes package only looks at it when first imported.
    config_file = os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    try:
        config.load_kube_config(
            config_file=config_file, context=context, client_configuration=configuration
        )
    except (ConfigException, OSError, TypeError, ValueError) as err:
        raise UserError(
            f"no usable kubeconfig ({_reason(err)}): point KUBECONFIG at your cluster, e.g. "
            "`eksctl utils write-kubeconfig --cluster NAME` or `gcloud container clusters "
            "get-credentials NAME`, or create one with `kary cluster up FILE`"
        ) from None
    if context is None:
        try:
            _, active = config.list_kube_config_contexts(config_file=config_file)
            context = active.get("name") if active else None
        except (ConfigException, OSError):
            context = None
    # urllib3 retries on its own too; keep that to one so a dead API fails fast here.
    configuration.retries = 1
    api_client = client.ApiClient(configuration)
    return KubeApi(api_client, policy, context)
