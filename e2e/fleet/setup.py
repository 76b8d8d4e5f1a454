"""Set up the fleet's workload clusters and register them on the control plane.

    python -m e2e.fleet.setup modules                        (on the host: go mod download)
    python -m e2e.fleet.setup workload NAME                  (in the namespace)
    python -m e2e.fleet.setup register                       (in the namespace)

``workload`` installs on a workload cluster what its charts would (the CRDs of
LeaderWorkerSet, the Gateway API, the Inference Extension and Envoy Gateway's EnvoyProxy,
from their Go modules, tools/fleet/modules.txt), then its DeviceClasses, nodes and
ResourceSlices (:mod:`e2e.fleet.plan`), and waits until every node is Ready (KWOK).

``register`` applies on the control plane the fleet's InferenceClasses, one kubeconfig
Secret and one ``Existing`` InferenceCluster per workload cluster, and points
provider-kubernetes' ``default`` ClusterProviderConfig at the control plane through a
kubeconfig Secret (``InjectedIdentity`` means in-cluster config, which a provider run
out of cluster does not have).

State: ``$FLEET_STATE`` (default build/fleet): plan.json, modules.json, pki/ (the
control plane's CA and serving certificate are reused: every API server listens on
127.0.0.1), <cluster>/kubeconfig.
"""

from __future__ import annotations

import argparse
import base64
import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from e2e.fleet import plan as fleet_plan
from e2e.kube import Kube, KubeError, condition_true, wait_until

ROOT = Path(__file__).resolve().parents[2]
MODULES = ROOT / "tools" / "fleet" / "modules.txt"
CRD_API = "apiextensions.k8s.io/v1"
OBJECT_CONFIG = "kubernetes.m.crossplane.io/v1alpha1"
CONTROL_PLANE_SECRET = "fleet-control-plane-kubeconfig"
CROSSPLANE_NS = "crossplane-system"
# The CRD files a workload cluster gets, per module: (folder, glob).
CRDS = {
    "sigs.k8s.io/lws": ("config/crd/bases", "*.yaml"),
    "sigs.k8s.io/gateway-api": ("config/crd/standard", "*.yaml"),
    "sigs.k8s.io/gateway-api-inference-extension": ("config/crd/bases", "*.yaml"),
    "github.com/envoyproxy/gateway": (
        "charts/gateway-helm/charts/crds/crds/generated",
        "gateway.envoyproxy.io_envoyproxies.yaml",
    ),
}


def state_dir() -> Path:
    return Path(os.environ.get("FLEET_STATE", ROOT / "build" / "fleet"))


def log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} fleet: {msg}", file=sys.stderr, flush=True)


# -- modules (on the host) ----------------------------------------------------------------


def download_modules() -> None:
    dirs = {}
    for raw in MODULES.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        module, version = line.split()
        done = subprocess.run(
            ["go", "mod", "download", "-json", f"{module}@{version}"],
            check=False,
            capture_output=True,
            text=True,
            cwd=ROOT / "tools" / "fleet" / "kwok",
        )
        info = json.loads(done.stdout or "{}")
        if done.returncode != 0 or "Dir" not in info:
            sys.exit(f"go mod download {module}@{version}: {info.get('Error') or done.stderr}")
        dirs[module] = info["Dir"]
    (state_dir() / "modules.json").write_text(json.dumps(dirs, indent=2) + "\n")


def crd_documents() -> list[dict[str, Any]]:
    dirs = json.loads((state_dir() / "modules.json").read_text())
    out = []
    for module, (folder, pattern) in CRDS.items():
        for path in sorted((Path(dirs[module]) / folder).glob(pattern)):
            for doc in yaml.safe_load_all(path.read_text()):
                if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                    crd = copy.deepcopy(doc)
                    crd["spec"].pop("conversion", None)
                    crd.pop("status", None)
                    crd["metadata"].pop("creationTimestamp", None)
                    out.append(crd)
    return out


# -- a workload cluster --------------------------------------------------------------------


def setup_workload(kube: Kube, cluster: fleet_plan.Cluster) -> None:
    wait_until(f"{cluster.name}: namespace default", lambda: _has_default(kube), timeout=60)
    crds = crd_documents()
    for crd in crds:
        kube.apply(crd, manager="helm")
    objects = fleet_plan.workload_objects(cluster)
    for obj in objects:
        status = obj.pop("status", None)
        kube.apply(obj)
        if status:
            kube.patch("v1", obj["kind"], obj["metadata"]["name"], {"status": status}, sub="status")
    for ns in (fleet_plan.SYSTEM_NAMESPACE,):
        kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    nodes = [o["metadata"]["name"] for o in objects if o["kind"] == "Node"]

    def ready() -> bool:
        if not all(condition_true(kube.get("v1", "Node", n), "Ready") for n in nodes):
            return False
        return all(
            condition_true(kube.get(CRD_API, "CustomResourceDefinition", c["metadata"]["name"]),
                           "Established")
            for c in crds
        )  # fmt: skip

    wait_until(f"{cluster.name}: {len(nodes)} nodes Ready, {len(crds)} CRDs", ready, timeout=90)
    slices = sum(1 for o in objects if o["kind"] == "ResourceSlice")
    log(f"{cluster.name}: {len(nodes)} nodes Ready, {slices} ResourceSlices, {len(crds)} CRDs")


def _has_default(kube: Kube) -> bool:
    try:
        return kube.get("v1", "Namespace", "default") is not None
    except KubeError:
        return False


# -- the control plane ---------------------------------------------------------------------


def secret(name: str, namespace: str, kubeconfig: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "stringData": {"kubeconfig": kubeconfig},
    }


def control_plane_kubeconfig(e2e_state: Path) -> str:
    """The control plane's own kubeconfig, its CA inlined (the provider reads the Secret)."""
    config = yaml.safe_load((e2e_state / "kubeconfig").read_text())
    for entry in config["clusters"]:
        ca = Path(entry["cluster"].pop("certificate-authority"))
        entry["cluster"]["certificate-authority-data"] = base64.b64encode(ca.read_bytes()).decode()
    return str(yaml.safe_dump(config))


def register(kube: Kube, e2e_state: Path) -> None:
    clusters, classes = fleet_plan.load(state_dir() / "plan.json")
    kube.apply(secret(CONTROL_PLANE_SECRET, CROSSPLANE_NS, control_plane_kubeconfig(e2e_state)))
    kube.apply(
        {
            "apiVersion": OBJECT_CONFIG,
            "kind": "ClusterProviderConfig",
            "metadata": {"name": "default"},
            "spec": {
                "credentials": {
                    "source": "Secret",
                    "secretRef": {
                        "name": CONTROL_PLANE_SECRET,
                        "namespace": CROSSPLANE_NS,
                        "key": "kubeconfig",
                    },
                }
            },
        }
    )
    for cls in classes:
        kube.apply(cls)
    for cluster in clusters:
        config = (state_dir() / cluster.name / "kubeconfig").read_text()
        kube.apply(secret(cluster.secret, fleet_plan.SYSTEM_NAMESPACE, config))
        kube.apply(fleet_plan.existing_cluster(cluster))
    names = [c.name for c in clusters]
    log(f"registered {len(classes)} InferenceClasses and Existing InferenceClusters {names}")


def write_kubeconfigs(e2e_state: Path) -> None:
    clusters, _ = fleet_plan.load(state_dir() / "plan.json")
    ca = (e2e_state / "pki" / "ca.crt").read_text()
    token = (e2e_state / "pki" / "tokens.csv").read_text().split(",", 1)[0]
    for cluster in clusters:
        d = state_dir() / cluster.name
        d.mkdir(parents=True, exist_ok=True)
        (d / "kubeconfig").write_text(fleet_plan.kubeconfig(cluster, ca, token))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("what", choices=("modules", "kubeconfigs", "workload", "register"))
    parser.add_argument("cluster", nargs="?", help="for workload: the cluster's name")
    args = parser.parse_args()
    e2e_state = Path(os.environ.get("E2E_STATE", ROOT / "build" / "e2e"))
    try:
        if args.what == "modules":
            download_modules()
        elif args.what == "kubeconfigs":
            write_kubeconfigs(e2e_state)
        elif args.what == "workload":
            clusters, _ = fleet_plan.load(state_dir() / "plan.json")
            cluster = next((c for c in clusters if c.name == args.cluster), None)
            if cluster is None:
                sys.exit(f"no cluster {args.cluster!r} in the plan: {[c.name for c in clusters]}")
            setup_workload(Kube(str(state_dir() / cluster.name / "kubeconfig")), cluster)
        else:
            register(Kube(), e2e_state)
    except (KubeError, TimeoutError) as exc:
        sys.exit(f"fleet {args.what} failed: {exc}")


if __name__ == "__main__":
    main()
