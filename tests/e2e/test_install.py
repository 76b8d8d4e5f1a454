"""What e2e/install.py accepts as the packages `make package` built, and how it tells
which image Crossplane installed."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from e2e import install

RUNTIME_LAYERS = ["a" * 64, "b" * 64]


def image_tarball(path: Path, layers: list[str]) -> None:
    """An image tarball as crank writes one: manifest.json, the config, the layers."""
    config = json.dumps({"rootfs": {"diff_ids": [f"sha256:{d}" for d in layers]}}).encode()
    config_name = "sha256:" + hashlib.sha256(config).hexdigest()
    files = {f"{d}.tar.gz": d.encode() for d in layers}
    files[config_name] = config
    manifest = [{"Config": config_name, "Layers": [f"{d}.tar.gz" for d in layers]}]
    files["manifest.json"] = json.dumps(manifest).encode()
    with tarfile.open(path, "w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def digests(out: Path) -> None:
    lines = [
        f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}"
        for p in sorted(out.iterdir())
        if p.name != "digests.txt"
    ]
    (out / "digests.txt").write_text("\n".join(lines) + "\n")


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """What make package leaves in _out/: the image, 14 Function packages, the Configuration."""
    image_tarball(tmp_path / "image.tar", RUNTIME_LAYERS)
    for n, kind in enumerate(
        sorted(p.name for p in (install.ROOT / "package/functions").iterdir())
    ):
        image_tarball(tmp_path / f"function-{kind}.xpkg", [*RUNTIME_LAYERS, f"{n:064x}"])
    image_tarball(tmp_path / "modelplane.xpkg", ["c" * 64])
    digests(tmp_path)
    return tmp_path


def test_our_packages_are_the_configuration_and_its_14_functions(out: Path) -> None:
    packages = install.our_packages(out, "v9.9.9")

    assert packages[0] == install.Package(
        "modelplane/modelplane", "v9.9.9", out / "modelplane.xpkg"
    )
    functions = {p.repo: p.path.name for p in packages[1:]}
    assert len(functions) == 14
    assert functions["modelplane/function-modelcache"] == "function-modelcache.xpkg"


def test_a_package_changed_after_make_package_is_refused(out: Path) -> None:
    with (out / "function-modelcache.xpkg").open("ab") as f:
        f.write(b"\0" * 512)

    with pytest.raises(RuntimeError, match=r"function-modelcache.xpkg .* run make package"):
        install.our_packages(out, "v9.9.9")


def test_a_function_package_without_the_runtime_image_is_refused(out: Path) -> None:
    image_tarball(out / "function-ekscluster.xpkg", ["d" * 64])
    digests(out)

    with pytest.raises(
        RuntimeError, match=r"function-ekscluster\.xpkg does not embed the runtime image"
    ):
        install.our_packages(out, "v9.9.9")


def test_without_make_package_the_message_says_so(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="run make package first"):
        install.our_packages(tmp_path, "v9.9.9")


def test_revision_name_is_crossplanes_for_the_image_digest() -> None:
    # Observed on the e2e control plane (Crossplane v2.4.0): the Function installed from
    # the image of this manifest digest, at generation 1, got this revision.
    digest = "sha256:c08e5c6a80dcaee18a10e4d9b63afab4c7ca9f634e5cb0007d88715a8a27b1a9"

    name = install.revision_name("modelplane-function-modelcache", digest, 1)

    assert name == "modelplane-function-modelcache-b45d57eeb128"
    assert install.revision_name("modelplane-function-modelcache", digest, 2) != name


@pytest.mark.parametrize(
    ("ref", "source"),
    [
        ("xpkg.upbound.io/modelplane/modelplane:v0.1.0", "xpkg.upbound.io/modelplane/modelplane"),
        ("127.0.0.1:5000/modelplane/modelplane", "127.0.0.1:5000/modelplane/modelplane"),
        ("127.0.0.1:5000/modelplane/modelplane:v1", "127.0.0.1:5000/modelplane/modelplane"),
        ("xpkg.upbound.io/a/b@sha256:00", "xpkg.upbound.io/a/b"),
    ],
)
def test_source_drops_the_tag_or_digest(ref: str, source: str) -> None:
    assert install.source(ref) == source
