"""Each cloud's default Kubernetes version: in the form its provider's CRD accepts, and
new enough for what Modelplane needs of it (DRA's GA API, resource.k8s.io/v1, is on by
default from 1.34). Where each default comes from is in docs/design/cloud-parity.md."""

from __future__ import annotations

import re

import pytest
from modelplane.domain.clouds import eks, gke, nebius, vultr

DRA_GA = (1, 34)

# The form each field takes, as the provider CRDs describe it.
FORMS = {
    # eks Cluster.spec.forProvider.version: "Desired Kubernetes master version" (a minor).
    "eks": (eks.DEFAULT_VERSION, re.compile(r"^(\d+)\.(\d+)$")),
    # container Cluster.minMasterVersion: a minor is one of GKE's accepted forms.
    "gke": (gke.DEFAULT_VERSION, re.compile(r"^(\d+)\.(\d+)$")),
    # mk8s Cluster.controlPlane.version: "only acceptable format is <major>.<minor>".
    "nebius": (nebius.DEFAULT_VERSION, re.compile(r"^(\d+)\.(\d+)$")),
    # VKE versions read v<major>.<minor>.<patch>+<build>.
    "vultr": (vultr.DEFAULT_VERSION, re.compile(r"^v(\d+)\.(\d+)\.\d+\+\d+$")),
}


@pytest.mark.parametrize("cloud", sorted(FORMS))
def test_the_default_version_has_the_form_the_crd_accepts_and_has_dra(cloud: str) -> None:
    version, form = FORMS[cloud]
    found = form.match(version)
    assert found, f"{cloud}: {version!r} is not in the form its CRD accepts"
    assert (int(found[1]), int(found[2])) >= DRA_GA, f"{cloud}: {version} predates DRA's GA"
