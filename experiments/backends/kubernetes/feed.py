"""The feed's ConfigMap: how kary hands a held nested group's driver its next cells.

A race holds one MiniCluster for all its blocks (nested.py, `held`): the group's
driver, after its first cells, reads ConfigMap `NAME-feed` as the kubelet
projects it into rank 0's pod (model/render_nested.Feed), and kary replaces
its text (formats/nested_bundle) with each next batch of cells.  The ConfigMap
is made before its MiniCluster (a pod whose ConfigMap volume is missing waits
in ContainerCreating), labelled as kary's MiniClusters are (so `reap_feeds`
finds one an interrupted run left), and deleted after the MiniCluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubernetes.client.exceptions import ApiException

from experiments.backends.base import BackendError
from experiments.backends.kubernetes.api import ApiUnavailable, KubeApi, api_message
from experiments.backends.kubernetes.minicluster import MANAGED_BY
from experiments.backends.kubernetes.objects import CONFIGMAP_LIST, dig
from experiments.errors import UserError
from experiments.formats.labels import current_owner
from experiments.formats.nested_bundle import FEED_KEY

__all__ = ["create_feed", "delete_feed", "feed_name", "reap_feeds", "update_feed"]

# What marks a ConfigMap as a feed (beside kary's owner labels).
FEED_LABEL = ("kary/role", "nested-feed")


def feed_name(minicluster: str) -> str:
    """The feed ConfigMap of MiniCluster `minicluster` (a name of at most 63 characters
    stays a valid ConfigMap name with the suffix: they may have 253)."""
    return f"{minicluster}-feed"


def _body(ns: str, name: str, text: str, labels: Mapping[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {
                **labels,
                MANAGED_BY[0]: MANAGED_BY[1],
                "kary/owner": current_owner(),
                FEED_LABEL[0]: FEED_LABEL[1],
            },
        },
        "data": {FEED_KEY: text},
    }


def create_feed(api: KubeApi, ns: str, name: str, text: str, labels: Mapping[str, str]) -> None:
    """Create the feed with `text` (a leftover of kary's of that name is replaced)."""
    body = _body(ns, name, text, labels)
    try:
        api.call("create the feed ConfigMap", api.core.create_namespaced_config_map, ns, body)
        return
    except ApiException as err:
        if err.status != 409:
            raise BackendError(f"the API refused ConfigMap {name}: {api_message(err)}") from None
    update_feed(api, ns, name, text, labels)


def update_feed(api: KubeApi, ns: str, name: str, text: str, labels: Mapping[str, str]) -> None:
    """Replace the feed's text: the driver runs it once the kubelet projects it."""
    try:
        api.call(
            "update the feed ConfigMap",
            api.core.replace_namespaced_config_map,
            name,
            ns,
            _body(ns, name, text, labels),
        )
    except ApiException as err:
        raise BackendError(f"the API refused ConfigMap {name}: {api_message(err)}") from None


def delete_feed(api: KubeApi, ns: str, name: str) -> str | None:
    """Delete the feed; a note when it would not go (never raises for the API's answer)."""
    try:
        api.call("delete the feed ConfigMap", api.core.delete_namespaced_config_map, name, ns)
    except ApiException as err:
        if err.status != 404:
            return f"could not delete ConfigMap {name}: {api_message(err)}"
    except (ApiUnavailable, UserError) as err:
        return f"could not delete ConfigMap {name}: {err}"
    return None


def reap_feeds(api: KubeApi, ns: str) -> list[str]:
    """Delete the feeds an interrupted kary run of this owner left in `ns`; their names."""
    selector = (
        f"{MANAGED_BY[0]}={MANAGED_BY[1]},kary/owner={current_owner()},"
        f"{FEED_LABEL[0]}={FEED_LABEL[1]}"
    )
    found = api.call(
        "list feed ConfigMaps",
        api.core.list_namespaced_config_map,
        ns,
        label_selector=selector,
        expect=CONFIGMAP_LIST,
    )
    names = [n for item in found.get("items") or [] if (n := dig(item, "metadata", "name"))]
    for name in names:
        note = delete_feed(api, ns, name)
        if note:
            raise BackendError(f"a feed an earlier kary run left would not go: {note}")
    return names
