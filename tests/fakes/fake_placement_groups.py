"""EC2 placement groups as boto3 sees them, for tests (moto 5 does not implement them).

`FakePlacementGroups.attach(session)` answers CreatePlacementGroup,
DescribePlacementGroups (filters `group-name` and `tag:KEY`) and
DeletePlacementGroup from a dict, with EC2's error codes, through botocore's
`before-call` event as its Stubber does.  `fail` makes one operation answer
an error code from then on.  `deleted` names the groups deleted, in order, so a
test can tell a group made and deleted from one never made.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from botocore.awsrequest import AWSResponse

__all__ = ["FakePlacementGroups"]


@dataclass
class FakePlacementGroups:
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    failing: dict[str, str] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)

    def add(self, name: str, strategy: str = "cluster", state: str = "available") -> None:
        """A group someone else made (no kary tag)."""
        self.groups[name] = {"GroupName": name, "Strategy": strategy, "State": state, "Tags": []}

    def fail(self, operation: str, code: str) -> None:
        self.failing[operation] = code

    def tags(self, name: str) -> dict[str, str]:
        return {t["Key"]: t["Value"] for t in self.groups[name]["Tags"]}

    def attach(self, session: Any) -> Any:
        for operation, answer in (
            ("CreatePlacementGroup", self._create),
            ("DescribePlacementGroups", self._describe),
            ("DeletePlacementGroup", self._delete),
        ):
            session.events.register(
                f"before-call.ec2.{operation}", self._handler(operation, answer)
            )
        return session

    def _handler(self, operation: str, answer: Any) -> Any:
        def handle(params: dict[str, Any], **kwargs: Any) -> tuple[AWSResponse, dict[str, Any]]:
            request = params.get("body") or {}
            code = self.failing.get(operation)
            status, parsed = (400, _error(code)) if code else answer(request)
            return AWSResponse(str(params.get("url", "")), status, {}, None), parsed

        return handle

    def _create(self, form: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        name = form["GroupName"]
        if name in self.groups:
            return 400, _error("InvalidPlacementGroup.Duplicate")
        tags = []
        for i in range(1, 51):
            key = form.get(f"TagSpecification.1.Tag.{i}.Key")
            if key is None:
                break
            tags.append({"Key": key, "Value": form.get(f"TagSpecification.1.Tag.{i}.Value", "")})
        self.groups[name] = {
            "GroupName": name,
            "Strategy": form.get("Strategy"),
            "State": "available",
            "Tags": tags,
        }
        return 200, {"PlacementGroup": dict(self.groups[name])}

    def _describe(self, form: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        found = list(self.groups.values())
        for i in range(1, 10):
            name = form.get(f"Filter.{i}.Name")
            if name is None:
                break
            value = form.get(f"Filter.{i}.Value.1")
            if name == "group-name":
                found = [g for g in found if g["GroupName"] == value]
            elif name.startswith("tag:"):
                key = name[4:]
                found = [g for g in found if {"Key": key, "Value": value} in g["Tags"]]
            else:
                return 400, _error("InvalidParameterValue")
        return 200, {"PlacementGroups": [dict(g) for g in found]}

    def _delete(self, form: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.groups.pop(form["GroupName"], None) is None:
            return 400, _error("InvalidPlacementGroup.Unknown")
        self.deleted.append(form["GroupName"])
        return 200, {}


def _error(code: str) -> dict[str, Any]:
    return {
        "Error": {"Code": code, "Message": f"fake EC2: {code}"},
        "ResponseMetadata": {"HTTPStatusCode": 400},
    }
