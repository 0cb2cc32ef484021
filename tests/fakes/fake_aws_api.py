"""EKS and CloudFormation as boto3 sees them, answered from the fake cloud's state.

The fake eksctl (fake_cloud.py) runs in its own process and keeps its tiny
cloud in a JSON file; kary asks AWS about that cloud through boto3 in the
test's process.  `FakeAwsApi.attach(session)` answers three calls from that
file, as HTTP bodies parsed by botocore's own parser for the service (JSON for
EKS, XML for CloudFormation), with AWS's error shapes and pagination:

    eks DescribeCluster, eks ListClusters, cloudformation ListStacks

Everything else goes on to moto (the tests run under `mock_aws`): node groups
and Auto Scaling for the dead-man switch.  `answer_with` replaces any one
call's answer, faked or moto's, with raw bytes (empty, garbage, the wrong
shape) to test kary on odd output.

Why not moto for these three: the fake eksctl is another process and could
reach moto only through moto's server (flask), and moto's CloudFormation needs
cfn-lint, docker, sympy and some twenty packages more.  The handlers hook
botocore's `before-call` event for one operation each, as botocore's Stubber
does: the first answer there is the call's answer, and moto (which hooks the
later `before-send`) never sees the call.
"""

from __future__ import annotations

import fcntl
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any
from urllib.parse import unquote
from xml.sax.saxutils import escape

from botocore.awsrequest import AWSResponse, HeadersDict
from botocore.exceptions import NoCredentialsError
from botocore.parsers import create_parser

__all__ = ["FakeAwsApi"]

_CFN_XMLNS = "http://cloudformation.amazonaws.com/doc/2010-05-15/"
_CREATED = "2026-06-27T15:00:00.000Z"


class _Raw(BytesIO):
    """A response body as botocore reads it (`raw.stream()`)."""

    def stream(self, **kwargs: Any) -> Any:
        while chunk := self.read(65536):
            yield chunk


@dataclass(frozen=True)
class _Http:
    """One HTTP answer, before botocore parses it."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class _Request:
    """What the handlers need of a call: its region, path, query and form parameters."""

    region: str
    path: str
    query: dict[str, Any]
    form: dict[str, Any]


@dataclass
class FakeAwsApi:
    """The three calls above, from `state_path`; each call is logged to `log_path` as `boto3`."""

    state_path: Path
    log_path: Path
    page_size: int = 100
    odd: dict[tuple[str, str], tuple[int, bytes]] = field(default_factory=dict)

    def answer_with(self, service: str, operation: str, body: bytes, status: int = 200) -> None:
        """From now on, answer `service` `operation` (e.g. "eks", "DescribeCluster") with `body`."""
        self.odd[(service, operation)] = (status, body)

    def attach(self, session: Any) -> Any:
        """Hook `session` (a boto3 Session) up to this fake; returns it."""
        events = session.events
        events.register("before-parameter-build", self._log)
        answers: dict[tuple[str, str], Callable[[_Request], _Http]] = {
            ("eks", "DescribeCluster"): self._describe_cluster,
            ("eks", "ListClusters"): self._list_clusters,
            ("cloudformation", "ListStacks"): self._list_stacks,
        }
        for key in {*answers, *self.odd}:
            service, operation = key
            events.register(
                f"before-call.{service}.{operation}", self._handler(session, key, answers)
            )
        return session

    # -- plumbing ---------------------------------------------------------------

    def _handler(
        self,
        session: Any,
        key: tuple[str, str],
        answers: dict[tuple[str, str], Callable[[_Request], _Http]],
    ) -> Callable[..., tuple[AWSResponse, dict[str, Any]] | None]:
        def handle(
            model: Any, params: dict[str, Any], context: dict[str, Any], **kwargs: Any
        ) -> tuple[AWSResponse, dict[str, Any]] | None:
            # AWS would never see an unsigned call: fail where botocore signs.
            if session.get_credentials() is None:
                raise NoCredentialsError()
            if key in self.odd:
                status, body = self.odd[key]
                http = _Http(status, body)
            elif key in answers:
                body = params.get("body")
                request = _Request(
                    region=str(context.get("client_region")),
                    path=str(params.get("url_path", "")),
                    query=dict(params.get("query_string") or {}),
                    form=body if isinstance(body, dict) else {},
                )
                http = answers[key](request)
            else:
                return None
            # Parsed as botocore parses AWS's answers: odd bytes fail here as they would there.
            service = model.service_model
            protocol = getattr(service, "resolved_protocol", None) or service.protocol
            headers = HeadersDict(http.headers)
            raw = {"status_code": http.status, "headers": headers, "body": http.body}
            parsed = create_parser(protocol).parse(raw, model.output_shape)
            response = AWSResponse(str(params.get("url", "")), http.status, http.headers, None)
            return response, parsed

        return handle

    def _log(self, model: Any, params: dict[str, Any], **kwargs: Any) -> None:
        shown = [f"{key}={value}" for key, value in sorted(params.items())]
        argv = [model.service_model.service_name, model.name, *shown]
        with open(self.log_path, "a") as log:
            log.write(json.dumps({"prog": "boto3", "argv": argv}, default=str) + "\n")

    def _state(self) -> dict[str, Any]:
        if not self.state_path.exists():
            return {"eks": {}, "stacks": {}}
        with open(self.state_path) as handle:
            fcntl.flock(handle, fcntl.LOCK_SH)
            text = handle.read()
        state = json.loads(text) if text.strip() else {}
        return {"eks": state.get("eks", {}), "stacks": state.get("stacks", {})}

    def _page(self, items: list[Any], token: str | None) -> tuple[list[Any], str | None]:
        start = int(token or 0)
        end = start + self.page_size
        return items[start:end], (str(end) if end < len(items) else None)

    # -- EKS (rest-json) --------------------------------------------------------

    @staticmethod
    def _json(status: int, body: dict[str, Any], error: str = "") -> _Http:
        headers = {"Content-Type": "application/json"}
        if error:
            headers["x-amzn-ErrorType"] = error
        return _Http(status, json.dumps(body).encode(), headers)

    def _describe_cluster(self, request: _Request) -> _Http:
        name = unquote(request.path.rsplit("/", 1)[-1])
        region = request.region
        cluster = self._state()["eks"].get(name)
        if cluster is None or cluster["region"] != region:
            return self._json(
                404,
                {"message": f"No cluster found for name: {name}."},
                "ResourceNotFoundException",
            )
        body = {
            "cluster": {
                "name": name,
                "arn": f"arn:aws:eks:{region}:123456789012:cluster/{name}",
                "status": cluster["status"],
                "version": cluster["version"],
                "tags": cluster["tags"],
            }
        }
        return self._json(200, body)

    def _list_clusters(self, request: _Request) -> _Http:
        names = sorted(n for n, c in self._state()["eks"].items() if c["region"] == request.region)
        page, following = self._page(names, request.query.get("nextToken"))
        body: dict[str, Any] = {"clusters": page}
        if following:
            body["nextToken"] = following
        return self._json(200, body)

    # -- CloudFormation (query protocol: XML answers) ---------------------------

    def _list_stacks(self, request: _Request) -> _Http:
        region = request.region
        stacks = sorted(
            (n, s["status"]) for n, s in self._state()["stacks"].items() if s["region"] == region
        )
        page, following = self._page(stacks, request.form.get("NextToken"))
        members = "".join(
            "<member>"
            f"<StackId>arn:aws:cloudformation:{region}:123456789012:stack/{escape(n)}/1</StackId>"
            f"<StackName>{escape(n)}</StackName><CreationTime>{_CREATED}</CreationTime>"
            f"<StackStatus>{escape(status)}</StackStatus>"
            "</member>"
            for n, status in page
        )
        token = f"<NextToken>{following}</NextToken>" if following else ""
        body = (
            f'<ListStacksResponse xmlns="{_CFN_XMLNS}"><ListStacksResult>'
            f"<StackSummaries>{members}</StackSummaries>{token}</ListStacksResult>"
            "<ResponseMetadata><RequestId>fake</RequestId></ResponseMetadata>"
            "</ListStacksResponse>"
        )
        return _Http(200, body.encode(), {"Content-Type": "text/xml"})
