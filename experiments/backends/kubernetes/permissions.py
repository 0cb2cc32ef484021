"""The RBAC verbs kary needs on a cluster, checked before the first MiniCluster.

Each request the backend makes is one `Permission` below.  A missing one used
to show late, or not at all: a 403 on listing nodes only cleared a provenance
field (`call_or_none`), which silently turned off preemption detection
(preemption.py); a 403 on the operator's deployment left the operator's digest
out of run.json.  So `check_permissions` asks the API server, before anything
is created, with one SelfSubjectAccessReview per permission (authorization.k8s.io/v1,
what `kubectl auth can-i VERB RESOURCE` sends), and refuses the run with one
line naming every permission missing and the `kubectl auth can-i` that shows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException

from experiments.backends.kubernetes.api import ApiUnavailable, KubeApi, api_message
from experiments.errors import UserError
from experiments.model.operator import CRD_GROUP, CRD_PLURAL, OPERATOR_NAMESPACE

__all__ = ["Permission", "check_permissions", "missing_permissions", "required_permissions"]

# The answer's fields kary reads (experiments.tool_output shape).
_REVIEW = {"status?": {"allowed?": bool, "reason?": str}}


@dataclass(frozen=True)
class Permission:
    """One verb on one resource: `namespace` None for a cluster-scoped resource."""

    verb: str
    resource: str
    group: str = ""
    subresource: str = ""
    namespace: str | None = None
    why: str = ""

    @property
    def shown(self) -> str:
        """As `kubectl auth can-i` takes it: `list nodes`, `get pods/log -n default`."""
        what = f"{self.resource}.{self.group}" if self.group else self.resource
        if self.subresource:
            what += f"/{self.subresource}"
        return f"{self.verb} {what}" + (f" -n {self.namespace}" if self.namespace else "")

    def review(self) -> dict[str, Any]:
        """The SelfSubjectAccessReview asking for it."""
        attributes: dict[str, Any] = {
            "verb": self.verb,
            "group": self.group,
            "resource": self.resource,
        }
        if self.subresource:
            attributes["subresource"] = self.subresource
        if self.namespace:
            attributes["namespace"] = self.namespace
        return {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes},
        }


def required_permissions(namespace: str, feed: bool = False) -> list[Permission]:
    """Every permission the kubernetes backend uses, for MiniClusters in `namespace`;
    `feed`: a race's too, which feeds its MiniCluster's driver through a ConfigMap."""
    here = namespace
    fed = [
        Permission(verb, "configmaps", namespace=here, why="feed a race its blocks")
        for verb in ("create", "update", "delete", "list")
    ]
    return (fed if feed else []) + [
        *(
            Permission(verb, CRD_PLURAL, CRD_GROUP, namespace=here, why="run cells")
            for verb in ("create", "get", "list", "delete")
        ),
        # job_watch lists and watches the operator's Job; a stuck one is deleted.
        *(
            Permission(verb, "jobs", "batch", namespace=here, why="wait for the operator's Job")
            for verb in ("list", "watch", "delete")
        ),
        Permission("list", "pods", namespace=here, why="see each rank's pod"),
        Permission("get", "pods", subresource="log", namespace=here, why="read rank 0's log"),
        Permission("list", "events", namespace=here, why="explain a failed cell"),
        # Without it preemption detection is off and run.json has no node facts.
        Permission("list", "nodes", why="detect preemption and record each rank's node"),
        Permission(
            "get",
            "deployments",
            "apps",
            namespace=OPERATOR_NAMESPACE,
            why="record the operator's image",
        ),
        Permission(
            "list", "pods", namespace=OPERATOR_NAMESPACE, why="record the operator's digest"
        ),
    ]


def missing_permissions(api: KubeApi, namespace: str, feed: bool = False) -> list[Permission]:
    """The required permissions the API server says this kubeconfig lacks."""
    missing = []
    for permission in required_permissions(namespace, feed):
        answer = api.call(
            f"review the permission to {permission.shown}",
            api.authz.create_self_subject_access_review,
            permission.review(),
            expect=_REVIEW,
        )
        if not (answer.get("status") or {}).get("allowed"):
            missing.append(permission)
    return missing


def check_permissions(api: KubeApi, namespace: str, feed: bool = False) -> None:
    """A one-line UserError naming every missing permission (nothing has been made yet)."""
    try:
        missing = missing_permissions(api, namespace, feed)
    except ApiException as err:
        raise UserError(
            f"the Kubernetes API at {api.host} would not review kary's permissions "
            f"({api_message(err)}): check `kubectl auth can-i --list -n {namespace}`"
        ) from None
    except ApiUnavailable as err:
        raise UserError(f"cannot reach the Kubernetes cluster: {err}") from None
    if not missing:
        return
    shown = "; ".join(f"{p.shown} (to {p.why})" for p in missing)
    first = missing[0].shown
    raise UserError(
        f"this kubeconfig may not {shown}: grant them (docs/running.md, 'Permissions'); "
        f"`kubectl auth can-i {first}` shows it"
    )
