"""The Flux Operator kary targets: its MiniCluster CRD, the commit it installs, where it runs.

The kubernetes backend creates MiniClusters of this group, version and plural
and says how to install the operator when the CRD is missing; `kary cluster
up` installs it with the same manifest.  The manifest is the operator's at the
commit whose MiniCluster CRD kary's tests validate against
(../shared/reference/flux-operator, 2026-06-27): its newest release tag, 0.2.1
(2024-08), has an older CRD, and `main` moves.  That manifest runs the
controller image `:latest` (pull Always): `kary cluster up` sets the image the
cluster file pins by digest (model/pins.py), a run refuses a controller on a
tag, and run.json records the digest that ran (operator_digest).
"""

from __future__ import annotations

__all__ = [
    "CRD_GROUP",
    "CRD_PLURAL",
    "CRD_VERSION",
    "INSTALL_OPERATOR",
    "OPERATOR_COMMIT",
    "OPERATOR_CONTAINER",
    "OPERATOR_DEPLOYMENT",
    "OPERATOR_IMAGE",
    "OPERATOR_MANIFEST",
    "OPERATOR_NAMESPACE",
]

CRD_GROUP = "flux-framework.org"
CRD_VERSION = "v1alpha2"
CRD_PLURAL = "miniclusters"
OPERATOR_COMMIT = "0d75cef855dee5351d68e32ec139a70e892b5268"
OPERATOR_MANIFEST = (
    "https://raw.githubusercontent.com/flux-framework/flux-operator/"
    f"{OPERATOR_COMMIT}/examples/dist/flux-operator.yaml"
)
INSTALL_OPERATOR = f"kubectl apply -f {OPERATOR_MANIFEST}"
# Where INSTALL_OPERATOR puts the operator's controller.
OPERATOR_NAMESPACE = "operator-system"
OPERATOR_DEPLOYMENT = "operator-controller-manager"
# The deployment's controller container (examples/dist/flux-operator.yaml line 1942) and
# the image it runs there, `:latest` pulled Always (lines 1934-1935): kary pins it by
# digest when the cluster file names one (model/pins.py), and a run refuses a tag.
OPERATOR_CONTAINER = "manager"
OPERATOR_IMAGE = "ghcr.io/flux-framework/flux-operator:latest"
