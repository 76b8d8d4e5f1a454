"""Install Modelplane on the e2e control plane, the way the docs' Installation page does.

1. The provider CRDs, as the providers' packages would: provider-kubernetes' from its
   Go module, provider-helm's and the clouds' from ``../shared/crds/`` (conversion
   webhooks off: no provider pods serve them).
2. Our packages, pushed to the local registry: the Configuration (``crossplane.yaml``
   + ``apis/``, built as ``make package`` builds it: see :func:`build_packages`), and, built with
   ``crank xpkg build``, one Function package per
   ``package/functions/<kind>/`` (package-only: the External runtime serves them), and
   package-only Providers for provider-kubernetes and provider-helm (their CRDs are
   installed in step 1; our fake providers stand in for their controllers).
3. The docs' ``prerequisites.yaml``, the ClusterProviderConfigs ``default`` through
   which provider-helm and provider-kubernetes reach the control plane itself, and an
   ``ImageConfig`` that rewrites the registry of our packages and their dependencies
   (the host of ``crossplane.yaml``'s ``dependsOn`` packages) to the local one.
4. The docs' ``configuration.yaml`` (at our version), then wait until the Configuration,
   both Providers and all 14 Functions are Installed and Healthy.

    python -m e2e.install --registry 127.0.0.1:5000
"""

from __future__ import annotations

import argparse
import copy
import os
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterable, Iterator
from pathlib import Path

import yaml

from e2e import modules
from e2e.kube import Kube, KubeError, Obj, condition_true, wait_until

ROOT = Path(__file__).resolve().parent.parent
SHARED_CRDS = ROOT.parent / "shared" / "crds"
CLOUD_CRDS = ("aws", "gcp", "azure", "nebius")
PROVIDERS = {
    # package (under the registry prefix): tag we publish
    "upbound/provider-kubernetes": "v1.3.1",
    "upbound/provider-helm": "v1.4.0",
}
PKG = "pkg.crossplane.io/v1"


def version() -> str:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return "v" + str(data["project"]["version"])


def log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} install: {msg}", file=sys.stderr, flush=True)


def documents(path: Path) -> Iterator[Obj]:
    for doc in yaml.safe_load_all(path.read_text()):
        if isinstance(doc, dict) and doc.get("kind"):
            yield doc


# -- 1. provider CRDs ------------------------------------------------------------------


def crd_files() -> list[Path]:
    k8s = modules.load()["github.com/crossplane-contrib/provider-kubernetes"]
    files = sorted((k8s / "package" / "crds").glob("*.yaml"))
    files += sorted((SHARED_CRDS / "helm").glob("*.yaml"))
    for cloud in CLOUD_CRDS:
        files += sorted((SHARED_CRDS / cloud).glob("*.yaml"))
    return files


def install_crds(kube: Kube, files: Iterable[Path]) -> list[str]:
    """Apply CRDs server-side without conversion webhooks; wait until established."""
    names = []
    for path in files:
        for doc in documents(path):
            crd = copy.deepcopy(doc)
            crd["spec"]["conversion"] = {"strategy": "None"}
            crd.get("metadata", {}).pop("creationTimestamp", None)
            crd.pop("status", None)
            kube.apply(crd)
            names.append(crd["metadata"]["name"])

    def established() -> bool:
        for name in names:
            got = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
            if not condition_true(got, "Established"):
                return False
        return True

    wait_until(f"{len(names)} CRDs established", established, timeout=120)
    return names


# -- 2. packages -----------------------------------------------------------------------


def run(*cmd: str | Path) -> None:
    done = subprocess.run([str(c) for c in cmd], check=False, capture_output=True, text=True)
    if done.returncode != 0:
        msg = f"{' '.join(map(str, cmd))} failed:\n{done.stdout}{done.stderr}"
        raise RuntimeError(msg)


def build_packages(out: Path) -> dict[str, Path]:
    """Build every package; return repository (under the prefix) -> .xpkg file."""
    crank = os.environ.get("CRANK", str(ROOT / "bin" / "crank"))
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    empty = out / "no-examples"
    empty.mkdir()
    built: dict[str, Path] = {}

    # The Configuration exactly as `make package` builds it (tools/package/xpkg.py: the
    # objects verbatim, since crank v2.2.1 drops an XRD's subresources.scale).
    conf = out / "modelplane.xpkg"
    run(sys.executable, ROOT / "tools" / "package" / "xpkg.py", "configuration", conf)
    built["modelplane/modelplane"] = conf

    for fn in sorted((ROOT / "package" / "functions").iterdir()):
        meta = next(documents(fn / "crossplane.yaml"))
        target = out / f"{meta['metadata']['name']}.xpkg"
        run(
            crank, "xpkg", "build", f"--package-root={fn}", f"--examples-root={empty}", "-o", target
        )
        built[f"modelplane/{meta['metadata']['name']}"] = target

    for repo in PROVIDERS:
        name = repo.split("/")[-1]
        src = out / "src" / name
        src.mkdir(parents=True)
        meta = {
            "apiVersion": "meta.pkg.crossplane.io/v1",
            "kind": "Provider",
            "metadata": {
                "name": name,
                "annotations": {
                    "meta.crossplane.io/description": (
                        f"Stand-in for {name} in Modelplane's e2e suite: package only; its "
                        "CRDs are installed by e2e/install.py, its controller is e2e/providers.py."
                    )
                },
            },
        }
        (src / "crossplane.yaml").write_text(yaml.safe_dump(meta))
        target = out / f"{name}.xpkg"
        run(
            crank,
            "xpkg",
            "build",
            f"--package-root={src}",
            f"--examples-root={empty}",
            "-o",
            target,
        )
        built[repo] = target
    return built


def push_packages(built: dict[str, Path], registry: str, ours: str) -> None:
    crane = os.environ.get("E2E_CRANE", "crane")
    for repo, path in built.items():
        tag = PROVIDERS.get(repo, ours)
        ref = f"{registry}/{repo}:{tag}"
        run(crane, "push", "--insecure", path, ref)
    log(f"pushed {len(built)} packages to {registry}")


# -- 3, 4. prerequisites and the Configuration -----------------------------------------


def control_plane_configs() -> list[Obj]:
    """How provider-helm and provider-kubernetes reach the control plane itself."""
    return [
        {
            "apiVersion": api_version,
            "kind": "ClusterProviderConfig",
            "metadata": {"name": "default"},
            "spec": {"credentials": {"source": "InjectedIdentity"}},
        }
        for api_version in ("helm.m.crossplane.io/v1beta1", "kubernetes.m.crossplane.io/v1alpha1")
    ]


def registry_prefix() -> str:
    """The registry our Configuration's dependencies live in, ``host/``."""
    meta = next(documents(ROOT / "crossplane.yaml"))
    hosts = {str(d["package"]).split("/", 1)[0] for d in meta["spec"]["dependsOn"]}
    if len(hosts) != 1:
        msg = f"crossplane.yaml's dependencies come from several registries: {sorted(hosts)}"
        raise RuntimeError(msg)
    return f"{hosts.pop()}/"


def image_config(registry: str) -> Obj:
    return {
        "apiVersion": "pkg.crossplane.io/v1beta1",
        "kind": "ImageConfig",
        "metadata": {"name": "e2e-local-registry"},
        "spec": {
            "matchImages": [{"type": "Prefix", "prefix": registry_prefix()}],
            "rewriteImage": {"prefix": f"{registry}/"},
        },
    }


def configuration(ours: str) -> Obj:
    """The docs' configuration.yaml, at the version we built."""
    path = ROOT / "examples" / "getting-started" / "installation" / "configuration.yaml"
    conf = next(documents(path))
    package = str(conf["spec"]["package"]).rsplit(":", 1)[0]
    conf["spec"]["package"] = f"{package}:{ours}"
    return conf


def packages_healthy(kube: Kube) -> tuple[bool, list[str]]:
    """Whether every package is Installed and Healthy; what is not."""
    pending = []
    names = []
    for kind in ("Configuration", "Provider", "Function"):
        for pkg in kube.list(PKG, kind):
            names.append(pkg["metadata"]["name"])
            if not (condition_true(pkg, "Installed") and condition_true(pkg, "Healthy")):
                pending.append(f"{kind} {pkg['metadata']['name']}")
    return len(names) >= 17 and not pending, pending


def install(registry: str, state: Path, kube: Kube) -> None:
    started = time.monotonic()
    crds = install_crds(kube, crd_files())
    log(f"{len(crds)} provider CRDs established")

    ours = version()
    push_packages(build_packages(state / "packages"), registry, ours)

    prereq = ROOT / "examples" / "getting-started" / "installation" / "prerequisites.yaml"
    for obj in [*documents(prereq), *control_plane_configs(), image_config(registry)]:
        kube.apply(obj)
    log(
        "applied the docs' prerequisites, the control plane's ClusterProviderConfigs, the ImageConfig"
    )

    kube.apply(configuration(ours))
    applied = time.monotonic()
    last: list[str] = []

    def healthy() -> bool:
        nonlocal last
        ok, last = packages_healthy(kube)
        return ok

    try:
        wait_until(
            "the Configuration and its dependencies Healthy", healthy, timeout=300, interval=2
        )
    except TimeoutError:
        log(f"not healthy: {', '.join(last) or 'no packages yet'}")
        raise
    xrds = "apiextensions.crossplane.io/v2"

    def offered() -> bool:
        items = kube.list(xrds, "CompositeResourceDefinition")
        return len(items) >= 14 and all(condition_true(x, "Established") for x in items)

    wait_until("the 14 XRDs Established", offered, timeout=180, interval=2)
    log(
        f"Configuration, 2 Providers and 14 Functions Healthy, 14 XRDs established {time.monotonic() - applied:.0f}s "
        f"after the Configuration was applied ({time.monotonic() - started:.0f}s in all)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--registry", required=True, help="the local registry, host:port")
    args = parser.parse_args()
    state = Path(os.environ.get("E2E_STATE", ROOT / "build" / "e2e"))
    kube = Kube()
    try:
        install(args.registry, state, kube)
    except (KubeError, RuntimeError, TimeoutError) as exc:
        sys.exit(f"install failed: {exc}")


if __name__ == "__main__":
    main()
