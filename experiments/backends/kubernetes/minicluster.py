"""A MiniCluster's life on the API: the manifest kary sends, create, delete and wait.

kary labels every MiniCluster it makes (`app.kubernetes.io/managed-by: kary`,
owner, cell, sweep) and deletes only MiniClusters that carry that label.
Each cell's MiniCluster has a name of its own (`--name` plus a random suffix):
the operator finds its ConfigMap and Job by name, and a name reused while the
garbage collector still holds the previous cell's would run that cell's script.
What an interrupted run of kary left (its MiniClusters carry the same owner
label) is removed when the backend comes up (`reap_leftovers`): one kary run
per owner and namespace at a time.  A MiniCluster of the same name that someone
else made is left alone (NotOurs).  Deleting waits, for a bounded time, for the
pods to go, so a cell's pods never overlap the next cell's.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException

from experiments.backends.base import BackendError
from experiments.backends.kubernetes.api import (
    ApiUnavailable,
    KubeApi,
    api_message,
)
from experiments.backends.kubernetes.objects import MINICLUSTER, MINICLUSTER_LIST, POD_LIST, dig
from experiments.errors import UserError
from experiments.files import load_yaml
from experiments.formats.labels import current_owner
from experiments.model.operator import CRD_GROUP, CRD_PLURAL, CRD_VERSION, INSTALL_OPERATOR

__all__ = [
    "MANAGED_BY",
    "NotOurs",
    "Teardown",
    "build_manifest",
    "create_minicluster",
    "delete_minicluster",
    "job_pods",
    "reap_leftovers",
    "unique_name",
]

# The label that makes a MiniCluster kary's to delete.
MANAGED_BY = ("app.kubernetes.io/managed-by", "kary")


class NotOurs(Exception):
    """A MiniCluster of the cell's name exists and kary did not make it: never delete it."""


@dataclass(frozen=True)
class Teardown:
    """How long to wait for a deleted MiniCluster's pods to go, and how often to look."""

    timeout_s: float
    poll_s: float
    sleep: Callable[[float], None] = time.sleep


# A pod's hostname is NAME-RANK (at most 63 characters) and its name NAME-RANK-XXXXX:
# a base of 40 leaves room for the suffix and a five-digit rank.
_BASE_CHARS = 40


def unique_name(base: str) -> str:
    """`base-XXXXXXXX`: a MiniCluster name no earlier cell used."""
    return f"{base[:_BASE_CHARS].rstrip('-')}-{secrets.token_hex(4)}"


def reap_leftovers(api: KubeApi, ns: str, teardown: Teardown) -> list[str]:
    """Delete the MiniClusters an interrupted kary run of this owner left in `ns`.

    Their names; a leftover that will not go is in BackendError.
    """
    selector = f"{MANAGED_BY[0]}={MANAGED_BY[1]},kary/owner={current_owner()}"
    found = api.call(
        "list MiniClusters",
        api.custom.list_namespaced_custom_object,
        CRD_GROUP,
        CRD_VERSION,
        ns,
        CRD_PLURAL,
        label_selector=selector,
        expect=MINICLUSTER_LIST,
    )
    names = [n for item in found.get("items") or [] if (n := dig(item, "metadata", "name"))]
    for name in names:
        note = delete_minicluster(api, ns, name, teardown)
        if note:
            raise BackendError(f"a MiniCluster an earlier kary run left would not go: {note}")
    return names


def build_manifest(
    minicluster_yaml: str, cell_id: str, namespace: str, labels: Mapping[str, str]
) -> dict[str, Any]:
    """The rendered MiniCluster with kary's labels and the namespace where it has none.

    Labels the template already sets win; `labels` (the sweep's) are added.
    """
    body = load_yaml(minicluster_yaml)
    if not isinstance(body, dict) or body.get("kind") != "MiniCluster":
        raise BackendError("the rendered minicluster.yaml is not a MiniCluster")
    meta = body.setdefault("metadata", {})
    meta.setdefault("namespace", namespace)
    found = meta.setdefault("labels", {}) or {}
    found.setdefault(*MANAGED_BY)
    found.setdefault("kary/owner", current_owner())
    found.setdefault("kary/cell", cell_id.replace("/", "_"))
    for key, value in labels.items():
        found.setdefault(key, value)
    meta["labels"] = found
    return body


def job_pods(api: KubeApi, ns: str, name: str) -> list[dict[str, Any]]:
    """The pods of the operator's Job for MiniCluster `name` (it names the Job alike)."""
    pods = api.call(
        "list pods",
        api.core.list_namespaced_pod,
        ns,
        label_selector=f"job-name={name}",
        expect=POD_LIST,
    )
    return list(pods.get("items") or [])


def create_minicluster(
    api: KubeApi, ns: str, name: str, body: dict[str, Any], teardown: Teardown
) -> None:
    """Create the MiniCluster; first delete a leftover of kary's of the same name.

    NotOurs when one of that name exists that kary did not make (or cannot tell).
    """
    create = api.custom.create_namespaced_custom_object
    for attempt in (1, 2):
        try:
            # Strict: a field the CRD does not know is an error, not silently pruned.
            api.call(
                "create a MiniCluster",
                create,
                CRD_GROUP,
                CRD_VERSION,
                ns,
                CRD_PLURAL,
                body,
                field_validation="Strict",
            )
            return
        except ApiException as err:
            if err.status == 404:
                raise UserError(
                    f"MiniClusters cannot be created in namespace {ns} ({api_message(err)}): "
                    f"is the Flux Operator installed? `{INSTALL_OPERATOR}`"
                ) from None
            if err.status != 409 or attempt == 2:
                raise BackendError(
                    f"the API refused MiniCluster {name}: {api_message(err)}"
                ) from None
        # A MiniCluster of this name is left from an interrupted run: remove it if kary's.
        try:
            old = api.call(
                "read a MiniCluster",
                api.custom.get_namespaced_custom_object,
                CRD_GROUP,
                CRD_VERSION,
                ns,
                CRD_PLURAL,
                name,
                expect=MINICLUSTER,
            )
        except ApiUnavailable as err:
            # Whose it is cannot be told: it is not kary's to delete.
            raise NotOurs(
                f"a MiniCluster {name} exists in namespace {ns} and kary cannot tell whose "
                f"it is ({err}): delete it or choose another --name"
            ) from None
        labels = dig(old, "metadata", "labels") or {}
        if labels.get(MANAGED_BY[0]) != MANAGED_BY[1]:
            raise NotOurs(
                f"a MiniCluster {name} that kary did not create exists in namespace {ns}: "
                "delete it or choose another --name"
            )
        leftover = delete_minicluster(api, ns, name, teardown)
        if leftover:
            raise BackendError(f"an earlier MiniCluster {name} would not go: {leftover}")


def delete_minicluster(api: KubeApi, ns: str, name: str, teardown: Teardown) -> str | None:
    """Delete the MiniCluster (and its Job) and wait for its pods; a note if they stay.

    Never raises for the cluster's answers: what could not be done is the note.
    """
    notes = []
    for doing, fn, args in (
        (
            "delete a MiniCluster",
            api.custom.delete_namespaced_custom_object,
            (CRD_GROUP, CRD_VERSION, ns, CRD_PLURAL, name),
        ),
        # The operator's Job is owned by the MiniCluster; deleting it too costs nothing.
        ("delete a Job", api.batch.delete_namespaced_job, (name, ns)),
    ):
        try:
            api.call(doing, fn, *args, propagation_policy="Background")
        except ApiException as err:
            if err.status != 404:
                notes.append(f"could not {doing} {name}: {api_message(err)}")
        except (ApiUnavailable, UserError) as err:
            notes.append(str(err))
    end = time.monotonic() + teardown.timeout_s
    while True:
        try:
            pods = job_pods(api, ns, name)
        except (ApiException, ApiUnavailable, UserError) as err:
            reason = api_message(err) if isinstance(err, ApiException) else str(err)
            notes.append(f"could not list the pods of {name}: {reason}")
            break
        if not pods:
            break
        if time.monotonic() >= end:
            notes.append(
                f"{len(pods)} pod(s) of MiniCluster {name} still there "
                f"{teardown.timeout_s:g} s after it was deleted"
            )
            break
        teardown.sleep(teardown.poll_s)
    return "; ".join(notes) or None
