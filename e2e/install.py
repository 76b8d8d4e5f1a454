"""Install Modelplane on the e2e control plane, the way the docs' Installation page does.

1. The provider CRDs, as the providers' packages would: provider-kubernetes' from its
   Go module, provider-helm's and the clouds' from ``../shared/crds/`` (conversion
   webhooks off: no provider pods serve them).
2. The packages users install, pushed to the local registry with ``crank xpkg push``:
   the Configuration and the 14 Function packages (the runtime image embedded) exactly
   as ``make package`` built them in ``_out/`` (``$E2E_PACKAGES``), each checked against
   ``_out/digests.txt``; and package-only Providers for provider-kubernetes and
   provider-helm, built here (their CRDs are installed in step 1; our fake providers
   stand in for their controllers). The runtime is External: no pod runs the image,
   e2e/runtime.py points the revisions at a local ``modelplane-function all``.
3. The docs' ``prerequisites.yaml``, the ClusterProviderConfigs ``default`` through
   which provider-helm and provider-kubernetes reach the control plane itself, and an
   ``ImageConfig`` that rewrites the registry of our packages and their dependencies
   (the host of ``crossplane.yaml``'s ``dependsOn`` packages) to the local one.
4. The docs' ``configuration.yaml`` (at our version), then wait until the Configuration,
   both Providers and all 14 Functions are Installed and Healthy.
5. Check that every revision Crossplane made is of the image pushed for its package (its
   name derives from the image digest) pulled from the local registry, and that the
   Configuration's ManagedResourceActivationPolicy is installed and Healthy.

    python -m e2e.install --registry 127.0.0.1:5000
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
import urllib.request
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import yaml

from e2e import modules
from e2e.kube import Kube, KubeError, Obj, condition_true, conditions, dig, wait_until

ROOT = Path(__file__).resolve().parent.parent
SHARED_CRDS = ROOT.parent / "shared" / "crds"
CLOUD_CRDS = ("aws", "gcp", "azure", "nebius")
PROVIDERS = {
    # package (under the registry prefix): tag we publish
    "upbound/provider-kubernetes": "v1.3.1",
    "upbound/provider-helm": "v1.4.0",
}
PKG = "pkg.crossplane.io/v1"
# What the registry may answer for a package's manifest (crank pushes Docker v2 ones).
MANIFEST_TYPES = ",".join(
    (
        "application/vnd.docker.distribution.manifest.v2+json",
        "application/vnd.oci.image.manifest.v1+json",
    )
)
# The ``created`` time go-containerregistry writes for an image that has none.
ZERO_TIME = "0001-01-01T00:00:00Z"


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


@dataclass(frozen=True)
class Package:
    """A package file and where it is pushed: ``<registry>/<repo>:<tag>``."""

    repo: str
    tag: str
    path: Path


@dataclass(frozen=True)
class Pushed:
    """A package in the local registry: its reference and manifest digest."""

    package: Package
    ref: str
    digest: str


def run(*cmd: str | Path) -> None:
    done = subprocess.run([str(c) for c in cmd], check=False, capture_output=True, text=True)
    if done.returncode != 0:
        msg = f"{' '.join(map(str, cmd))} failed:\n{done.stdout}{done.stderr}"
        raise RuntimeError(msg)


def crank() -> str:
    return os.environ.get("CRANK", str(ROOT / "bin" / "crank"))


def repository(package: str) -> str:
    """``xpkg.upbound.io/modelplane/function-x:v1`` -> ``modelplane/function-x``."""
    return package.split("/", 1)[1].rsplit(":", 1)[0]


def our_packages(out: Path, ours: str) -> list[Package]:
    """The Configuration and its Function packages as ``make package`` built them in ``out``.

    The Configuration is the one the docs' ``configuration.yaml`` installs, the Functions
    those ``crossplane.yaml`` depends on, each ``out/<name>.xpkg``. Every file must be the
    one ``out/digests.txt`` names, and every Function package must embed
    ``out/image.tar``, the runtime image.
    """
    digests = _digests(out)
    meta = next(documents(ROOT / "crossplane.yaml"))
    deps = [repository(str(dep["package"])) for dep in meta["spec"]["dependsOn"]]
    conf = repository(str(configuration(ours)["spec"]["package"]))
    repos = [conf, *(repo for repo in deps if repo not in PROVIDERS)]
    packages = [Package(repo, ours, out / f"{repo.rsplit('/', 1)[1]}.xpkg") for repo in repos]
    image = out / "image.tar"
    for path in [image, *(p.path for p in packages)]:
        _check_digest(path, digests)
    runtime = image_layers(image)[1]
    for package in packages[1:]:
        if image_layers(package.path)[1][: len(runtime)] != runtime:
            msg = f"{package.path} does not embed the runtime image {image}: run make package"
            raise RuntimeError(msg)
    return packages


def _digests(out: Path) -> dict[str, str]:
    path = out / "digests.txt"
    if not path.is_file():
        msg = f"no {path}: run make package first (make e2e and make cluster-up do)"
        raise RuntimeError(msg)
    pairs = (line.split() for line in path.read_text().splitlines() if line.strip())
    return {name: digest for digest, name in pairs}


def _check_digest(path: Path, digests: dict[str, str]) -> None:
    if not path.is_file():
        msg = f"no {path}: run make package"
        raise RuntimeError(msg)
    want = digests.get(path.name)
    with path.open("rb") as f:
        have = hashlib.file_digest(f, "sha256").hexdigest()
    if want != have:
        msg = (
            f"{path} (sha256 {have[:12]}) is not the file {path.parent / 'digests.txt'} names "
            f"({(want or 'no entry')[:12]}): it changed after make package; run make package"
        )
        raise RuntimeError(msg)


def image_layers(path: Path) -> tuple[Obj, list[str]]:
    """An image tarball's config and layer digests, as its ``manifest.json`` lists them."""
    with tarfile.open(path) as tar:
        entries = json.loads(_member(tar, "manifest.json", path))
        if len(entries) != 1:
            msg = f"{path} holds {len(entries)} images, not one"
            raise RuntimeError(msg)
        config = json.loads(_member(tar, entries[0]["Config"], path))
    layers = ["sha256:" + name.split(".", 1)[0] for name in entries[0]["Layers"]]
    return config, layers


def _member(tar: tarfile.TarFile, name: str, path: Path) -> bytes:
    member = tar.extractfile(name)
    if member is None:
        msg = f"{path} is not an image tarball: it has no {name}"
        raise RuntimeError(msg)
    return member.read()


def provider_packages(out: Path) -> list[Package]:
    """Package-only provider-kubernetes and provider-helm (``crank xpkg build``).

    Their CRDs are installed in step 1 and e2e/providers.py is their controller.
    """
    if out.exists():
        shutil.rmtree(out)
    empty = out / "no-examples"
    empty.mkdir(parents=True)
    built = []
    for repo, tag in PROVIDERS.items():
        name = repo.split("/")[-1]
        src = out / "src" / name
        src.mkdir(parents=True)
        description = (
            f"Stand-in for {name} in Modelplane's e2e suite: package only; its "
            "CRDs are installed by e2e/install.py, its controller is e2e/providers.py."
        )
        meta = {
            "apiVersion": "meta.pkg.crossplane.io/v1",
            "kind": "Provider",
            "metadata": {
                "name": name,
                "annotations": {"meta.crossplane.io/description": description},
            },
        }
        (src / "crossplane.yaml").write_text(yaml.safe_dump(meta))
        target = out / f"{name}.xpkg"
        run(
            crank(),
            "xpkg",
            "build",
            f"--package-root={src}",
            f"--examples-root={empty}",
            "-o",
            target,
        )
        built.append(Package(repo, tag, target))
    return built


def push_packages(packages: list[Package], registry: str) -> list[Pushed]:
    """Push with ``crank xpkg push``, as a user publishes them; read back each manifest.

    crank annotates the package layer (``io.crossplane.xpkg: base``), so Crossplane
    reads package.yaml from that small layer instead of flattening the runtime image.
    The Function packages share the runtime image's layers: the first push uploads
    them, the others find them in the registry. Still, crank reads every layer it
    pushes (about 0.6 s of CPU per Function package, measured), so those go in parallel.
    """
    started = time.monotonic()

    def push(package: Package) -> Pushed:
        ref = f"{registry}/{package.repo}:{package.tag}"
        run(crank(), "xpkg", "push", "-f", package.path, ref)
        return Pushed(package, ref, registry_digest(package, registry))

    # The biggest first and alone: it uploads the layers the others share.
    biggest, *rest = sorted(packages, key=lambda p: p.path.stat().st_size, reverse=True)
    pushed = [push(biggest)]
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        pushed += pool.map(push, rest)
    log(f"pushed {len(pushed)} packages to {registry} in {time.monotonic() - started:.1f}s")
    return pushed


def registry_digest(package: Package, registry: str) -> str:
    """The manifest digest of ``package`` in the registry, checked against its file.

    The layers must be the file's, byte for byte, and so must the config but for the
    zero ``created`` time that crank adds when it re-encodes one (it does for the
    Configuration, which tools/package/xpkg.py writes itself).
    """
    body = _registry_get(registry, f"{package.repo}/manifests/{package.tag}")
    manifest = json.loads(body)
    config, layers = image_layers(package.path)
    pushed_config = json.loads(
        _registry_get(registry, f"{package.repo}/blobs/{manifest['config']['digest']}")
    )
    if pushed_config.get("created") == ZERO_TIME:
        config.setdefault("created", ZERO_TIME)
    got = [str(layer["digest"]) for layer in manifest.get("layers", [])]
    if got != layers or pushed_config != config:
        part = "layers" if got != layers else "config"
        msg = (
            f"the registry's {package.repo}:{package.tag} is not the image in "
            f"{package.path} (its {part} differ)"
        )
        raise RuntimeError(msg)
    return "sha256:" + hashlib.sha256(body).hexdigest()


def _registry_get(registry: str, path: str) -> bytes:
    request = urllib.request.Request(
        f"http://{registry}/v2/{path}", headers={"Accept": MANIFEST_TYPES}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            body: bytes = resp.read()
    except OSError as exc:  # URLError, HTTPError, timeouts
        msg = f"the registry {registry} did not serve /v2/{path}: {exc}"
        raise RuntimeError(msg) from exc
    return body


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


# -- 5. what got installed -------------------------------------------------------------


def source(package: str) -> str:
    """A package reference without its tag or digest."""
    name = package.split("@", 1)[0]
    head, _, tail = name.rpartition(":")
    return head if head and "/" not in tail else name


def revision_name(package: str, digest: str, generation: int) -> str:
    """The revision Crossplane v2.4.0 makes of ``package`` for an image of ``digest``.

    ``xpkg.FriendlyID(name, sha256("<digest hex>|<generation>"))`` (the package
    manager's reconciler): the one place Crossplane records which image it installed.
    """
    revision_id = hashlib.sha256(f"{digest.split(':', 1)[1]}|{generation}".encode()).hexdigest()
    return f"{package[:50]}-{revision_id[:12]}"


def install_problems(kube: Kube, pushed: list[Pushed]) -> list[str]:
    """Where an installed package is not the image we pushed for it."""
    installed = {
        source(str(pkg["spec"]["package"])): pkg
        for kind in ("Configuration", "Provider", "Function")
        for pkg in kube.list(PKG, kind)
    }
    prefix = registry_prefix()
    problems = []
    for push in pushed:
        pkg = installed.get(prefix + push.package.repo)
        if pkg is None:
            problems.append(f"no package installs {prefix}{push.package.repo}")
            continue
        what = f"{pkg['kind']} {pkg['metadata']['name']}"
        current = dig(pkg, "status", "currentRevision")
        want = revision_name(pkg["metadata"]["name"], push.digest, pkg["metadata"]["generation"])
        if current != want:
            problems.append(
                f"{what}: revision {current}, but the image {push.ref} "
                f"({push.digest}, from {push.package.path}) makes {want}"
            )
            continue
        rev = kube.get(PKG, f"{pkg['kind']}Revision", current)
        resolved = dig(rev, "status", "resolvedImage")
        if resolved != push.ref:
            problems.append(
                f"{what}: revision {current} was pulled from {resolved}, not {push.ref}"
            )
    return problems


def policy_problems(kube: Kube) -> list[str]:
    """Whether the Configuration's ManagedResourceActivationPolicy is installed, Healthy."""
    want = next(documents(ROOT / "apis" / "activation" / "policy.yaml"))
    what = f"{want['kind']} {want['metadata']['name']}"
    got = kube.get(want["apiVersion"], want["kind"], want["metadata"]["name"])
    if got is None:
        return [f"no {what}: the Configuration did not install it"]
    problems = []
    if dig(got, "spec", "activate") != want["spec"]["activate"]:
        problems.append(f"{what}: spec.activate is not apis/activation/policy.yaml's")
    conf = kube.get(PKG, "Configuration", str(configuration(version())["metadata"]["name"]))
    revision = dig(conf, "status", "currentRevision")
    owners = [
        ref["name"]
        for ref in got["metadata"].get("ownerReferences", [])
        if ref.get("kind") == "ConfigurationRevision" and ref.get("controller")
    ]
    if owners != [revision]:
        problems.append(
            f"{what}: controlled by {owners or 'nothing'}, not the Configuration's revision {revision}"
        )
    if not condition_true(got, "Healthy"):
        healthy = conditions(got).get("Healthy", {})
        problems.append(f"{what}: not Healthy ({healthy.get('reason')}: {healthy.get('message')})")
    return problems


def check_installed(kube: Kube, pushed: list[Pushed]) -> None:
    """Crossplane installed the images we pushed, and the Configuration's policy works."""
    problems: list[str] = []

    def none() -> bool:
        nonlocal problems
        problems = install_problems(kube, pushed) + policy_problems(kube)
        return not problems

    try:
        wait_until("the installed packages to be ours", none, timeout=60, interval=2)
    except TimeoutError:
        msg = "installed, but not as built by make package:\n  " + "\n  ".join(problems)
        raise RuntimeError(msg) from None


def install(registry: str, state: Path, kube: Kube) -> None:
    started = time.monotonic()
    ours = version()
    out = Path(os.environ.get("E2E_PACKAGES", ROOT / "_out"))
    packages = our_packages(out, ours) + provider_packages(state / "packages")
    # Pushing is mostly crank's CPU, installing the CRDs mostly waiting: overlap them.
    with ThreadPoolExecutor(max_workers=1) as background:
        pushing = background.submit(push_packages, packages, registry)
        crds = install_crds(kube, crd_files())
        log(f"{len(crds)} provider CRDs established")
        pushed = pushing.result()

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
    check_installed(kube, pushed)
    log(
        f"Configuration, 2 Providers and 14 Functions Healthy, 14 XRDs established "
        f"{time.monotonic() - applied:.0f}s after the Configuration was applied "
        f"({time.monotonic() - started:.0f}s in all); every revision is the image pushed "
        f"from {out} and the ManagedResourceActivationPolicy is Healthy"
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
