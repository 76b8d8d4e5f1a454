"""The docs' complete manifests, as a table: where each is in the docs and where it goes.

:mod:`modelplane.dev.docs_examples` extracts each from the docs into ``examples/`` and
checks it is still there, as the table says.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Manifest:
    """One complete manifest of the docs.

    Attributes:
        folder: Its folder under examples/: the docs page, plus a sub-folder for a tab or a
            section whose file label repeats one already used on the page.
        file: The docs' file label, used as the file name.
        line: The docs line of its ``apiVersion:``.
        kind: Its kind.
        name: Its metadata.name.
    """

    folder: str
    file: str
    line: int
    kind: str
    name: str

    @property
    def path(self) -> str:
        """Return its file's path relative to examples/."""
        return f"{self.folder}/{self.file}"


# The table: a ``[folder]`` line, then one line per manifest in that folder:
# file label, docs line of its ``apiVersion:``, kind, metadata.name. A file with several
# documents has one line per document, in order.
TABLE = """
[overview]
model-deployment.yaml               127  ModelDeployment          qwen-demo
model-service.yaml                  156  ModelService             qwen
[guides/anthropic-messages-api]
inference-class.yaml                214  InferenceClass           h100-1x
inference-cluster.yaml              253  InferenceCluster         nebius-eu-north
model-deployment.yaml               302  ModelDeployment          qwen3-8b
model-service.yaml                  345  ModelService             qwen3-8b
[models/model-deployment]
model-deployment.yaml               610  ModelDeployment          qwen3-8b
model-deployment-multinode.yaml     687  ModelDeployment          qwen3-coder
[getting-started/installation]
prerequisites.yaml                  849  Namespace                modelplane-system
prerequisites.yaml                  854  ClusterRole              crossplane-compose-modelplane
prerequisites.yaml                  887  DeploymentRuntimeConfig  provider-helm-modelplane
prerequisites.yaml                  899  ClusterRoleBinding       provider-helm-modelplane
prerequisites.yaml                  913  ImageConfig              provider-helm-modelplane
configuration.yaml                  931  Configuration            modelplane
[recipes/qwen3-8b]
inference-class.yaml               1000  InferenceClass           eks-l4-1x-g6
inference-cluster.yaml             1029  InferenceCluster         eks-l4
model-deployment.yaml              1068  ModelDeployment          qwen3-8b
model-service.yaml                 1110  ModelService             qwen3-8b
[recipes/qwen3-8b/speculative-decoding]
model-deployment.yaml              1170  ModelDeployment          qwen3-8b-spec
model-service.yaml                 1218  ModelService             qwen3-8b-spec
[platform/inference-gateway]
inference-gateway.yaml             1278  InferenceGateway         default
[recipes/qwen2.5-7b]
inference-class.yaml               1406  InferenceClass           vultr-a16-1x
inference-cluster.yaml             1433  InferenceCluster         vultr-a16
model-deployment.yaml              1460  ModelDeployment          qwen-7b
model-service.yaml                 1494  ModelService             qwen-7b
[recipes/nemotron-3.5-lightning]
inference-class-nebius.yaml        1563  InferenceClass           nebius-h100-1x
inference-cluster-nebius.yaml      1607  InferenceCluster         nebius-eu-north
model-cache.yaml                   1633  ModelCache               nemotron-lightning
model-deployment.yaml              1662  ModelDeployment          nemotron-lightning
model-service.yaml                 1714  ModelService             nemotron-lightning
[getting-started/build-the-platform]
inference-gateway.yaml             1801  InferenceGateway         default
clusterproviderconfig-aws.yaml     1840  ClusterProviderConfig    default
clusterproviderconfig-gke.yaml     1860  ClusterProviderConfig    default
clusterproviderconfig-azure.yaml   1887  ClusterProviderConfig    default
clusterproviderconfig-nebius.yaml  1909  ClusterProviderConfig    default
clusterproviderconfig-vultr.yaml   1939  ClusterProviderConfig    default
[getting-started/build-the-platform/eks]
platform.yaml                      1959  InferenceClass           l4-1x-g6
platform.yaml                      1984  InferenceCluster         eks-us-east
[getting-started/build-the-platform/gke]
platform.yaml                      2008  InferenceClass           gke-l4-1x-g2
platform.yaml                      2033  InferenceCluster         starter
[getting-started/build-the-platform/aks]
platform.yaml                      2058  InferenceClass           a10-1x
platform.yaml                      2086  InferenceCluster         aks-westeurope
[getting-started/build-the-platform/nebius]
platform.yaml                      2107  InferenceClass           l40s-1x
platform.yaml                      2136  InferenceCluster         nebius-eu-north
[getting-started/build-the-platform/vultr]
platform.yaml                      2156  InferenceClass           l40s-1x
platform.yaml                      2184  InferenceCluster         vultr-ewr
[guides/collecting-engine-metrics]
inference-class.yaml               2239  InferenceClass           gke-l4-1x-g2
inference-cluster.yaml             2273  InferenceCluster         gke-l4-single
model-deployment.yaml              2311  ModelDeployment          qwen2-5-0-5b
model-service.yaml                 2352  ModelService             qwen2-5-0-5b
podmonitor.yaml                    2368  PodMonitor               qwen2-5-0-5b-metrics
[platform/inference-class]
inference-class-gke-l4.yaml        2461  InferenceClass           gke-l4-1x-g2
inference-class-eks-l4.yaml        2492  InferenceClass           eks-l4-1x-g6
inference-class-aks-h100.yaml      2530  InferenceClass           aks-h100-8x
inference-class-nebius-h100.yaml   2567  InferenceClass           nebius-h100-8x
inference-class-vultr-l40s.yaml    2606  InferenceClass           vultr-l40s-1x
inference-class-h100-byo.yaml      2641  InferenceClass           h100-8x-byo
[models/model-service]
model-service.yaml                 2811  ModelService             qwen3-8b
[recipes/qwen3-coder]
inference-class.yaml               3115  InferenceClass           eks-h200-8x-p5en
inference-cluster.yaml             3152  InferenceCluster         eks-coder
inference-class-fp8.yaml           3185  InferenceClass           eks-h200-8x-p5en
model-cache.yaml                   3220  ModelCache               qwen3-coder
model-deployment.yaml              3258  ModelDeployment          qwen3-coder
model-service.yaml                 3357  ModelService             qwen3-coder
model-deployment-fp8.yaml          3386  ModelDeployment          qwen3-coder-sgl
model-service-fp8.yaml             3433  ModelService             qwen3-coder-sgl
[recipes/glm-4.5-air]
inference-class.yaml               3500  InferenceClass           gke-a100-40-1x
inference-cluster.yaml             3526  InferenceCluster         gke-a100
model-deployment.yaml              3558  ModelDeployment          glm-air
model-service.yaml                 3600  ModelService             glm-air
[models/model-cache]
model-cache.yaml                   3698  ModelCache               qwen3-coder
[getting-started/deploying-a-model/eks]
model-deployment.yaml              3739  ModelDeployment          qwen-demo
[getting-started/deploying-a-model/gke]
model-deployment.yaml              3770  ModelDeployment          qwen-demo
[getting-started/deploying-a-model/aks]
model-deployment.yaml              3801  ModelDeployment          qwen-demo
[getting-started/deploying-a-model/nebius]
model-deployment.yaml              3832  ModelDeployment          qwen-demo
[getting-started/deploying-a-model]
model-service.yaml                 3893  ModelService             qwen
[recipes/kimi-k2]
inference-class.yaml               4007  InferenceClass           eks-h200-8x-p5en
inference-cluster.yaml             4040  InferenceCluster         eks-kimi
model-cache.yaml                   4075  ModelCache               kimi-k2
model-deployment.yaml              4106  ModelDeployment          kimi-k2
model-service.yaml                 4210  ModelService             kimi-k2
[platform/inference-cluster]
inference-cluster-gke.yaml         4282  InferenceCluster         gke-us-central
inference-cluster-eks.yaml         4333  InferenceCluster         eks-us-west
inference-cluster-aks.yaml         4389  InferenceCluster         aks-westeurope
inference-cluster-nebius.yaml      4444  InferenceCluster         nebius-eu-north
inference-cluster-vultr.yaml       4503  InferenceCluster         vultr-ewr
inference-cluster-existing.yaml    4530  InferenceCluster         byo-us-east
[recipes/laguna]
inference-class-nebius.yaml        4839  InferenceClass           nebius-h100-8x
inference-cluster-nebius.yaml      4883  InferenceCluster         nebius-eu-north
model-cache.yaml                   4908  ModelCache               laguna
model-deployment.yaml              4942  ModelDeployment          laguna
model-service.yaml                 4990  ModelService             laguna
model-deployment-sglang.yaml       5024  ModelDeployment          laguna
[recipes/qwen2.5-72b]
inference-class-aks.yaml           5150  InferenceClass           aks-a100-1x-nc24ads
inference-cluster-aks.yaml         5181  InferenceCluster         aks-a100-single
inference-class-nebius.yaml        5204  InferenceClass           nebius-h100-1x-sxm
inference-cluster-nebius.yaml      5237  InferenceCluster         nebius-h100-single
model-cache.yaml                   5256  ModelCache               qwen-72b-awq
model-deployment.yaml              5277  ModelDeployment          qwen-72b
model-service.yaml                 5314  ModelService             qwen-72b
model-service-split.yaml           5337  ModelService             qwen-72b
[recipes/llama-3.1-8b]
inference-class-eks.yaml           5654  InferenceClass           eks-l4-1x-g6
inference-cluster-eks.yaml         5684  InferenceCluster         eks-l4-single
inference-class-gke.yaml           5710  InferenceClass           gke-l4-1x-g2
inference-cluster-gke.yaml         5740  InferenceCluster         gke-l4-single
model-deployment.yaml              5777  ModelDeployment          llama-3-1-8b
model-service.yaml                 5821  ModelService             llama-3-1-8b
[models/model-endpoint]
model-endpoint.yaml                5848  ModelEndpoint            kimi-k2-together
model-service-external.yaml        5874  ModelService             kimi-k2
[getting-started/scale-the-platform/eks]
platform-scale.yaml                5904  InferenceClass           l40s-1x-g6e
platform-scale.yaml                5931  InferenceCluster         eks-us-west
platform-scale.yaml                5951  InferenceCluster         eks-eu-central
[getting-started/scale-the-platform/gke]
platform-scale.yaml                5977  InferenceClass           gke-a100-40-1x
platform-scale.yaml                6005  InferenceCluster         gpu-us-west
platform-scale.yaml                6025  InferenceCluster         gpu-us-east
[getting-started/scale-the-platform/aks]
platform-scale.yaml                6053  InferenceClass           a100-1x
platform-scale.yaml                6080  InferenceCluster         aks-eastus
platform-scale.yaml                6098  InferenceCluster         aks-southcentralus
[getting-started/scale-the-platform/nebius]
platform-scale.yaml                6122  InferenceClass           h100-1x
platform-scale.yaml                6153  InferenceCluster         nebius-eu-north-h100
[getting-started/scale-the-model/eks]
model-deployment-west.yaml         6444  ModelDeployment          qwen-west
[getting-started/scale-the-model/gke]
model-deployment-west.yaml         6482  ModelDeployment          qwen-west
[getting-started/scale-the-model/aks]
model-deployment-west.yaml         6521  ModelDeployment          qwen-west
[getting-started/scale-the-model/nebius]
model-deployment-scale.yaml        6560  ModelDeployment          qwen-west
[getting-started/scale-the-model]
model-service-multi.yaml           6607  ModelService             qwen
"""


def parse_table(table: str) -> tuple[Manifest, ...]:
    """Return the manifests a table in the format of :data:`TABLE` lists.

    Raises:
        ValueError: A line is neither a ``[folder]`` nor four columns, or comes before
            the first folder.
    """
    manifests = []
    folder = ""
    for line in table.splitlines():
        if not line.strip():
            continue
        if line.startswith("["):
            folder = line.strip("[]")
            continue
        match line.split():
            case [file, number, kind, name] if folder and number.isdigit():
                manifests.append(Manifest(folder, file, int(number), kind, name))
            case _:
                msg = f"bad table line {line!r}"
                raise ValueError(msg)
    return tuple(manifests)


MANIFESTS = parse_table(TABLE)

# The getting-started fleet a newcomer renders (`make demo`): the EKS tab of each step,
# copied to the top of getting-started/ under the docs' file names.
FLEET_COPIES: Mapping[str, str] = {
    f"getting-started/{copy}": f"getting-started/{source}"
    for copy, source in (
        ("inference-gateway.yaml", "build-the-platform/inference-gateway.yaml"),
        ("platform.yaml", "build-the-platform/eks/platform.yaml"),
        ("model-deployment.yaml", "deploying-a-model/eks/model-deployment.yaml"),
        ("model-service.yaml", "deploying-a-model/model-service.yaml"),
    )
}
