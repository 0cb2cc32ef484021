"""The AWS APIs kary calls for EKS, through boto3: one session per region, one-line errors.

boto3 rather than the `aws` CLI: typed errors (a missing cluster is an error
code, not a phrase to look for in stderr), paginators, and tests against moto
or botocore's Stubber instead of a fake executable.  Every answer is checked
against the shape kary reads (experiments.tool_output), so an odd answer is one
line too.  eksctl stays for what no API does in one call: create and delete a
cluster with its CloudFormation stacks, and write the kubeconfig.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
)
from botocore.parsers import ResponseParserError

from experiments.errors import UserError
from experiments.tool_output import Shape, check_shape

__all__ = [
    "AwsApi",
    "AwsApiError",
    "SessionFactory",
    "default_session",
    "error_code",
]

SessionFactory = Callable[[str], Any]

# Like every CLI call (shell.py), every API call has a time limit: connect, read, and
# standard-mode retries of throttling and 5xx answers.
_CLIENT_CONFIG = Config(
    connect_timeout=15, read_timeout=60, retries={"max_attempts": 4, "mode": "standard"}
)

# An answer botocore cannot parse raises ResponseParserError (not a BotoCoreError), or,
# for well-formed XML of another shape, a KeyError from deep in its parser (a bad
# timestamp: ValueError).  Only the client call itself is guarded by these.
_UNREADABLE = (ResponseParserError, KeyError, ValueError)
_FAILED = (BotoCoreError, *_UNREADABLE)
_DENIED = {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation"}
_BAD_CREDENTIALS = {
    "AuthFailure",
    "ExpiredToken",
    "ExpiredTokenException",
    "InvalidClientTokenId",
    "RequestExpired",
    "SignatureDoesNotMatch",
    "UnrecognizedClientException",
}


class AwsApiError(UserError):
    """An AWS call failed in a way a retry from here will not fix; one line."""


def default_session(region: str) -> Any:
    return boto3.session.Session(region_name=region)


def error_code(err: ClientError) -> str:
    return str(err.response.get("Error", {}).get("Code", ""))


def _first_line(text: str) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else ""


def _call_text(service: str, operation: str, params: dict[str, Any]) -> str:
    shown = ", ".join(f"{key}={value!r}" for key, value in params.items())
    return f"{service}.{operation}({shown})"


class AwsApi:
    """boto3 clients for one region, made on first use; `call` and `pages` check every answer."""

    def __init__(self, region: str, session_factory: SessionFactory | None = None) -> None:
        self.region = region
        self.session_factory = session_factory or default_session
        self._session: Any = None
        self._clients: dict[str, Any] = {}

    @property
    def session(self) -> Any:
        if self._session is None:
            self._session = self.session_factory(self.region)
        return self._session

    def client(self, service: str) -> Any:
        if service not in self._clients:
            try:
                self._clients[service] = self.session.client(service, config=_CLIENT_CONFIG)
            except (*_FAILED, ClientError) as err:
                raise self._error(err, f"{service} client") from None
        return self._clients[service]

    def call(
        self,
        service: str,
        operation: str,
        expect: Shape,
        missing: tuple[str, ...] = (),
        **params: Any,
    ) -> Any:
        """client.operation(**params), checked to have shape `expect`.

        None when AWS answers with an error code in `missing` (e.g. the cluster
        does not exist); any other failure is an AwsApiError.
        """
        shown = _call_text(service, operation, params)
        try:
            answer = getattr(self.client(service), operation)(**params)
        except ClientError as err:
            if error_code(err) in missing:
                return None
            raise self._error(err, shown) from None
        except _FAILED as err:
            raise self._error(err, shown) from None
        return check_shape(shown, answer, expect)

    def pages(self, service: str, operation: str, expect: Shape, **params: Any) -> list[Any]:
        """Every page of a paginated call, each checked to have shape `expect`."""
        shown = _call_text(service, operation, params)
        try:
            paginator = self.client(service).get_paginator(operation)
            found = list(paginator.paginate(**params))
        except (*_FAILED, ClientError) as err:
            raise self._error(err, shown) from None
        return [check_shape(shown, page, expect) for page in found]

    def _error(self, err: Exception, shown: str) -> AwsApiError:
        where = f"in {self.region}"
        if isinstance(err, (NoCredentialsError, PartialCredentialsError)):
            return AwsApiError(
                "no AWS credentials found: run `aws configure`, set AWS_PROFILE, or export "
                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
            )
        if isinstance(err, NoRegionError):
            return AwsApiError(f"no AWS region for `{shown}`: set region in the cluster file")
        if isinstance(err, EndpointConnectionError):
            return AwsApiError(f"cannot reach AWS {where} for `{shown}`: {_first_line(str(err))}")
        if isinstance(err, ClientError):
            code = error_code(err)
            message = _first_line(err.response.get("Error", {}).get("Message", "")) or code
            if code in _DENIED:
                return AwsApiError(
                    f"not allowed to call `{shown}` {where} ({code}): the credentials need that "
                    "IAM permission"
                )
            if code in _BAD_CREDENTIALS:
                return AwsApiError(f"AWS refused the credentials ({code}): {message}")
            return AwsApiError(f"`{shown}` failed {where} ({code or 'no error code'}): {message}")
        if isinstance(err, _UNREADABLE):
            if isinstance(err, KeyError):
                reason = f"it has no {err.args[0]!r}" if err.args else "a part is missing"
            else:
                reason = _first_line(str(err)).split(". Further retries")[0].rstrip(":")
            return AwsApiError(f"`{shown}` answered something kary cannot read {where}: {reason}")
        return AwsApiError(
            f"`{shown}` failed {where}: {_first_line(str(err)) or type(err).__name__}"
        )
