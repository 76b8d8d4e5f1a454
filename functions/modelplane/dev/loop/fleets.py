"""The example fleets the loop tests reconcile: what a user applies, file by file.

A fleet is every example document a user applies for one docs page or recipe, plus what
the docs have the user create first:

- the providers' ClusterProviderConfigs of "Build the platform"
  (``getting-started/build-the-platform/clusterproviderconfig-*.yaml``);
- the Secrets those, Existing InferenceClusters (kubeconfig) and ModelCaches
  (``authSecret``) name (:func:`modelplane.dev.loop.fakes.user_secrets`);
- provider-helm's and provider-kubernetes' ClusterProviderConfig ``default`` of the
  installation (:func:`modelplane.dev.loop.fakes.installation`);
- the getting-started InferenceGateway ``default`` when the fleet has a ModelService but
  no InferenceGateway of its own (every ModelService needs the control plane's one).

A path names a file, or a folder: its ``*.yaml`` files and its ``fleet/`` documents (the
render cases' inputs as they stand once ready; their ``status`` is dropped, as the loop
computes status itself). A later document replaces an earlier one of the same kind and
name (a page's variant of a file). ``observed/`` folders are not read.

Not fleets: ``examples/replicas/`` and ``examples/caches/`` (render cases of one composite
whose fleet is the recipes', covered there), ``models/`` (the ML pages' fragments, which
name no cluster they fit; the recipes are the complete versions),
``getting-started/installation/`` (the Crossplane packages themselves) and the
``build-the-platform/eks`` tab (the top of ``getting-started/`` is a copy of it).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from modelplane.dev.fakes.base import Key, key_of
from modelplane.dev.loop import fakes
from modelplane.dev.loop.apis import EXAMPLES

Doc = dict[str, Any]

PLATFORM = "getting-started/build-the-platform"
PROVIDER_CONFIGS = tuple(
    f"{PLATFORM}/clusterproviderconfig-{cloud}.yaml"
    for cloud in ("aws", "azure", "gke", "nebius", "vultr")
)
GATEWAY = "getting-started/inference-gateway.yaml"
DEPLOYING = "getting-started/deploying-a-model"
SCALE_PLATFORM = "getting-started/scale-the-platform"
SCALE_MODEL = "getting-started/scale-the-model"


@dataclass(frozen=True)
class Fleet:
    """One example fleet: a name for test ids and the example paths it applies, in order.

    ``then`` is a second step the docs take once the first one runs (scaling the platform
    and the model after the getting-started tour): the user applies it to the converged
    first step.
    """

    name: str
    paths: tuple[str, ...]
    then: tuple[str, ...] = ()

    def documents(self) -> list[Doc]:
        """Return everything the user applies first, prerequisites included."""
        docs = _documents(self.paths)
        kinds = {d.get("kind") for d in _documents((*self.paths, *self.then))}
        if "ModelService" in kinds and "InferenceGateway" not in kinds:
            docs += list(_load(EXAMPLES / GATEWAY))
        prerequisites = [d for path in PROVIDER_CONFIGS for d in _load(EXAMPLES / path)]
        prerequisites += fakes.installation()
        return [*prerequisites, *fakes.user_secrets([*prerequisites, *docs]), *docs]

    def then_documents(self) -> list[Doc]:
        """Return what the user applies in the second step (with the Secrets it needs)."""
        docs = _documents(self.then)
        return [
            *fakes.user_secrets(d for d in docs if d.get("kind") != "ClusterProviderConfig"),
            *docs,
        ]


def _documents(paths: tuple[str, ...]) -> list[Doc]:
    own: dict[Key, Doc] = {}
    for path in paths:
        for doc in _load(EXAMPLES / path):
            own[key_of(doc)] = doc
    return list(own.values())


def _load(path: Path) -> Iterator[Doc]:
    if path.is_dir():
        for file in [*sorted(path.glob("*.yaml")), *sorted((path / "fleet").glob("*.yaml"))]:
            yield from _load(file)
        return
    for doc in yaml.safe_load_all(path.read_text()):
        if isinstance(doc, Mapping):
            yield {k: v for k, v in doc.items() if k != "status"}


def _tab(cloud: str, model: bool = True) -> tuple[str, ...]:
    paths: tuple[str, ...] = (
        f"{PLATFORM}/inference-gateway.yaml",
        f"{PLATFORM}/{cloud}/platform.yaml",
    )
    if model:
        paths += (f"{DEPLOYING}/{cloud}/model-deployment.yaml", f"{DEPLOYING}/model-service.yaml")
    return paths


def _recipe(folder: str, *names: str) -> tuple[str, ...]:
    """The files ``names`` (without ``.yaml``) of ``examples/recipes/<folder>``, in order."""
    return tuple(f"recipes/{folder}/{name}.yaml" for name in names)


LAGUNA = ("inference-class-nebius", "inference-cluster-nebius", "model-cache")
QWEN_72B = (
    "inference-class-aks",
    "inference-class-nebius",
    "inference-cluster-aks",
    "inference-cluster-nebius",
    "model-cache",
    "model-deployment",
)
CODER = ("inference-cluster", "model-cache")

GETTING_STARTED = (
    "getting-started/inference-gateway.yaml",
    "getting-started/platform.yaml",
    "getting-started/model-deployment.yaml",
    "getting-started/model-service.yaml",
)

FLEETS: tuple[Fleet, ...] = (
    Fleet("getting-started", GETTING_STARTED),
    Fleet("getting-started-aks", _tab("aks")),
    Fleet("getting-started-gke", _tab("gke")),
    Fleet("getting-started-nebius", _tab("nebius")),
    Fleet("getting-started-vultr", _tab("vultr", model=False)),
    Fleet(
        "scale-eks",
        GETTING_STARTED,
        (
            f"{SCALE_PLATFORM}/eks/platform-scale.yaml",
            f"{SCALE_MODEL}/eks/model-deployment-west.yaml",
            f"{SCALE_MODEL}/model-service-multi.yaml",
        ),
    ),
    *(
        Fleet(
            f"scale-{cloud}",
            _tab(cloud),
            (
                f"{SCALE_PLATFORM}/{cloud}/platform-scale.yaml",
                f"{SCALE_MODEL}/{cloud}/{deployment}",
                f"{SCALE_MODEL}/model-service-multi.yaml",
            ),
        )
        for cloud, deployment in (
            ("aks", "model-deployment-west.yaml"),
            ("gke", "model-deployment-west.yaml"),
            ("nebius", "model-deployment-scale.yaml"),
        )
    ),
    Fleet(
        "overview",
        (
            "getting-started/inference-gateway.yaml",
            "getting-started/platform.yaml",
            "overview/model-deployment.yaml",
            "overview/model-service.yaml",
        ),
    ),
    Fleet(
        "platform",
        ("platform/inference-class", "platform/inference-cluster", "platform/inference-gateway"),
    ),
    Fleet("guide-anthropic-messages-api", ("guides/anthropic-messages-api",)),
    Fleet("guide-collecting-engine-metrics", ("guides/collecting-engine-metrics",)),
    Fleet("recipe-glm-4.5-air", ("recipes/glm-4.5-air",)),
    Fleet("recipe-kimi-k2", ("recipes/kimi-k2",)),
    Fleet("recipe-laguna", _recipe("laguna", *LAGUNA, "model-deployment", "model-service")),
    Fleet(
        "recipe-laguna-sglang",
        _recipe("laguna", *LAGUNA, "model-deployment-sglang", "model-service"),
    ),
    Fleet("recipe-llama-3.1-8b", ("recipes/llama-3.1-8b",)),
    Fleet("recipe-nemotron-3.5-lightning", ("recipes/nemotron-3.5-lightning",)),
    Fleet("recipe-qwen2.5-72b", _recipe("qwen2.5-72b", *QWEN_72B, "model-service")),
    Fleet("recipe-qwen2.5-72b-split", _recipe("qwen2.5-72b", *QWEN_72B, "model-service-split")),
    Fleet("recipe-qwen2.5-7b", ("recipes/qwen2.5-7b",)),
    Fleet("recipe-qwen3-8b", ("recipes/qwen3-8b",)),
    Fleet(
        "recipe-qwen3-8b-speculative-decoding",
        (
            "recipes/qwen3-8b/inference-class.yaml",
            "recipes/qwen3-8b/inference-cluster.yaml",
            "recipes/qwen3-8b/speculative-decoding",
        ),
    ),
    Fleet(
        "recipe-qwen3-coder",
        _recipe("qwen3-coder", "inference-class", *CODER, "model-deployment", "model-service"),
    ),
    Fleet(
        "recipe-qwen3-coder-fp8",
        _recipe(
            "qwen3-coder",
            "inference-class-fp8",
            *CODER,
            "model-deployment-fp8",
            "model-service-fp8",
        ),
    ),
    *(
        Fleet(f"routing-{case}", (f"routing/{case}",))
        for case in (
            "model-service",
            "model-service-multi",
            "canary",
            "split-by-cluster",
            "external-provider",
            "inference-gateway-cloud",
            "inference-gateway-metallb",
        )
    ),
)

BY_NAME = {fleet.name: fleet for fleet in FLEETS}
