"""Building blocks of ``make package`` (tools/package/build.sh), and of the e2e install.

    python tools/package/xpkg.py cut ROOTFS BASE_DIR VENV_DIR   the distroless-style cut
    python tools/package/xpkg.py layer DIR OUT.tar               a reproducible layer tar
    python tools/package/xpkg.py examples OUT_DIR                each kind's own examples
    python tools/package/xpkg.py configuration OUT.xpkg          the Configuration package
    python tools/package/xpkg.py report OUT_DIR SECONDS          sizes, digests, time

Runs with the host's Python and the project's ``.venv`` (PyYAML). ``cut`` runs ``ldd``
inside the rootfs with ``chroot`` (root).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import yaml

ROOT = Path(__file__).resolve().parents[2]
PYTHON = "python3.11"
VENV = "/venv/fn"
RUN_UID = 65532
# A chroot's environment: nothing of the host's (pip, Python and locale variables leak).
CHROOT_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
# Stdlib parts a gRPC server never imports: tests, GUI, build and install tooling.
STDLIB_UNUSED = (
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "ensurepip",
    "lib2to3",
    "distutils",
    "pydoc_data",
    "venv",
    "config-3.11-x86_64-linux-gnu",
)
# The Configuration's layer annotation, as crank writes it: Crossplane reads package.yaml
# from the layer whose config label names it ``base``.
XPKG_LABEL = "io.crossplane.xpkg"


def log(msg: str) -> None:
    print(f"package: {msg}", file=sys.stderr, flush=True)


# -- the distroless-style cut ------------------------------------------------------------


def cut(rootfs: Path, base: Path, venv: Path) -> None:
    """Copy out of ``rootfs`` what the server runs on: python, its libraries, the venv.

    ``base`` gets python3.11, the shared libraries every ELF file of python, the stdlib
    and the venv needs (as the loader resolves them in the rootfs), the stdlib, CA
    certificates, a passwd with the non-root user; ``venv`` gets the venv. No shell, no
    package manager.
    """
    for out in (base, venv):
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
    elves = [
        f"/usr/bin/{PYTHON}",
        *_elf_files(rootfs, f"/usr/lib/{PYTHON}"),
        *_elf_files(rootfs, VENV),
    ]
    wanted = [
        "/usr/bin/python3",
        f"/usr/bin/{PYTHON}",
        *sorted(_needed(rootfs, elves)),
        f"/usr/lib/{PYTHON}",
        f"/etc/{PYTHON}",
        "/etc/ssl/certs/ca-certificates.crt",
        "/etc/os-release",
    ]
    for path in wanted:
        _copy(rootfs, base, path)
    _system_files(base)
    _copy(rootfs, venv, VENV)


def _elf_files(rootfs: Path, under: str) -> list[str]:
    found = []
    for path in sorted((rootfs / under.lstrip("/")).rglob("*")):
        if path.is_file() and not path.is_symlink() and path.read_bytes()[:4] == b"\x7fELF":
            found.append("/" + str(path.relative_to(rootfs)))
    return found


def _needed(rootfs: Path, elves: list[str]) -> set[str]:
    """The shared libraries (and the loader) ``elves`` load, as paths in the rootfs."""
    done = subprocess.run(
        ["chroot", str(rootfs), "/usr/bin/ldd", *elves],
        env=CHROOT_ENV,
        capture_output=True,
        text=True,
        check=False,
    )
    if "not found" in done.stdout:
        missing = [line.strip() for line in done.stdout.splitlines() if "not found" in line]
        msg = f"libraries missing in the rootfs: {missing}"
        raise RuntimeError(msg)
    paths = set()
    for line in done.stdout.splitlines():
        match = re.search(r"(?:=> )?(/\S+) \(0x", line)
        if match and not match.group(1).startswith(VENV):
            paths.add(match.group(1))
    if not paths:
        msg = f"ldd found no libraries: {done.stdout}{done.stderr}"
        raise RuntimeError(msg)
    return paths


def _copy(rootfs: Path, dest: Path, path: str) -> None:
    """Copy ``path`` (as the rootfs sees it) into ``dest``, keeping every symlink on the way.

    Debian's merged /usr makes /lib and /lib64 links, and libraries are reached through
    soname links: each link is recreated, then what it points to is copied.
    """
    parts = PurePosixPath(path).parts[1:]
    here = PurePosixPath("/")
    for i, part in enumerate(parts):
        here = here / part
        src, dst = rootfs / str(here)[1:], dest / str(here)[1:]
        if src.is_symlink():
            target = os.readlink(src)
            if not dst.is_symlink():
                dst.symlink_to(target)
            resolved = os.path.normpath(str(here.parent / target))
            _copy(rootfs, dest, str(PurePosixPath(resolved, *parts[i + 1 :])))
            return
        if i < len(parts) - 1:
            dst.mkdir(exist_ok=True)
            shutil.copystat(src, dst)
        elif src.is_dir():
            shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True, ignore=_unused)
        else:
            shutil.copy2(src, dst)


def _unused(directory: str, names: list[str]) -> set[str]:
    if directory.endswith(f"/usr/lib/{PYTHON}"):
        return {n for n in names if n in STDLIB_UNUSED}
    return set()


def _system_files(base: Path) -> None:
    """What a distroless image has besides the program: users, a /tmp."""
    etc = base / "etc"
    (etc / "passwd").write_text(
        f"root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:{RUN_UID}:{RUN_UID}:nonroot:/home/nonroot:/sbin/nologin\n"
    )
    (etc / "group").write_text(f"root:x:0:\nnonroot:x:{RUN_UID}:\n")
    for name in ("passwd", "group"):
        (etc / name).chmod(0o644)
    home = base / "home" / "nonroot"
    home.mkdir(parents=True)
    os.chown(home, RUN_UID, RUN_UID)
    (base / "tmp").mkdir()
    (base / "tmp").chmod(0o1777)


# -- reproducible tars -------------------------------------------------------------------


def layer(src: Path, out: Path, epoch: int) -> None:
    """Tar ``src``'s content: sorted, root-owned, mtimes clamped to ``epoch``.

    Clamped, not reset: files from Debian's packages keep their packaged times. Every
    .pyc is hash-based (checked), so no time makes one stale.
    """
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for path in _walk(src):
            info = tar.gettarinfo(str(path), str(path.relative_to(src)))
            if info.islnk():  # a hard link: store the file itself, order-independent
                info = tar.gettarinfo(fileobj=path.open("rb"), arcname=info.name)
                info.mode = path.stat().st_mode & 0o7777
            info.mtime = min(int(info.mtime), epoch)
            info.uname = info.gname = ""
            if info.isfile():
                with path.open("rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)


def _walk(top: Path) -> Iterator[Path]:
    for path in sorted(top.iterdir(), key=lambda p: p.name):
        yield path
        if path.is_dir() and not path.is_symlink():
            yield from _walk(path)


def _tar_bytes(files: dict[str, bytes]) -> bytes:
    """A reproducible tar of in-memory files."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size = len(files[name])
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(files[name]))
    return buf.getvalue()


# -- examples ----------------------------------------------------------------------------


def kind_examples(out: Path) -> dict[str, int]:
    """Write each kind's own example documents to ``out/<kind>/``; count them per kind.

    A Function package's examples are that kind's manifests from ``examples/``, verbatim
    (comments kept), not the observed states under ``fleet/`` and ``observed/``.
    """
    kinds = sorted(d.name for d in (ROOT / "package" / "functions").iterdir() if d.is_dir())
    if out.exists():
        shutil.rmtree(out)
    counts = dict.fromkeys(kinds, 0)
    for kind in kinds:
        (out / kind).mkdir(parents=True)
    for path in sorted((ROOT / "examples").rglob("*.yaml")):
        rel = path.relative_to(ROOT / "examples")
        if {"fleet", "observed"} & set(rel.parts[:-1]):
            continue
        chosen: dict[str, list[str]] = {}
        for chunk in re.split(r"(?m)^---[ \t]*$", path.read_text()):
            own = _own_kind(chunk)
            if own in counts:
                chosen.setdefault(str(own), []).append(chunk.strip("\n") + "\n")
        for kind, chunks in chosen.items():
            name = "-".join(rel.with_suffix("").parts) + ".yaml"
            (out / kind / name).write_text("---\n".join(chunks))
            counts[kind] += len(chunks)
    return counts


def _own_kind(chunk: str) -> str | None:
    """The lower-cased kind of a Modelplane manifest (not an observed state), else None."""
    doc = yaml.safe_load(chunk)
    if not isinstance(doc, dict) or "status" in doc:
        return None
    group = str(doc.get("apiVersion", "")).split("/", 1)[0]
    if group != "modelplane.ai" and not group.endswith(".modelplane.ai"):
        return None
    return str(doc.get("kind", "")).lower()


# -- the Configuration package -----------------------------------------------------------


def version() -> str:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return "v" + str(data["project"]["version"])


def configuration_sources() -> list[Path]:
    """crossplane.yaml, then per ``apis/`` folder its XRD, its Composition, anything else."""
    files = [ROOT / "crossplane.yaml"]
    for api in sorted(p for p in (ROOT / "apis").iterdir() if p.is_dir()):
        first = [api / "definition.yaml", api / "composition.yaml"]
        files += [f for f in first if f.exists()]
        files += sorted(f for f in api.glob("*.yaml") if f not in first)
    return files


def configuration(out: Path, crank: str) -> str:
    """Write the Configuration package (an image tarball, as crank writes one) to ``out``.

    Not `crank xpkg build`'s output: crank v2.2.1 (the newest the module proxy serves)
    re-encodes each object with its own v2.2 types and drops what they lack, e.g. an
    XRD's versions[].subresources.scale (Crossplane v2.3), which would cost
    ModelDeployment its scale subresource. So crank only lints the objects (Crossplane's
    own Configuration linter: XRDs, Compositions, the activation policy), and
    package.yaml holds them verbatim, in one layer annotated as crank annotates it.
    Returns the image's config digest.
    """
    sources = configuration_sources()
    _lint(sources, crank)
    stream = "".join("---\n" + f.read_text().strip() + "\n" for f in sources)
    layer_tar = _tar_bytes({"package.yaml": stream.encode()})
    blob = gzip.compress(layer_tar, compresslevel=9, mtime=0)
    digest = "sha256:" + hashlib.sha256(blob).hexdigest()
    config = {
        "architecture": "",
        "os": "",
        "config": {"Labels": {f"{XPKG_LABEL}:{digest}": "base"}},
        "rootfs": {
            "type": "layers",
            "diff_ids": ["sha256:" + hashlib.sha256(layer_tar).hexdigest()],
        },
    }
    config_bytes = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
    config_name = "sha256:" + hashlib.sha256(config_bytes).hexdigest()
    layer_name = digest.removeprefix("sha256:") + ".tar.gz"
    manifest = [
        {
            "Config": config_name,
            "RepoTags": [f"modelplane/modelplane:{version()}"],
            "Layers": [layer_name],
        }
    ]
    archive = {
        config_name: config_bytes,
        layer_name: blob,
        "manifest.json": json.dumps(manifest, separators=(",", ":")).encode(),
    }
    out.write_bytes(_tar_bytes(archive))
    return config_name


def _lint(sources: list[Path], crank: str) -> None:
    """Build the same objects with crank, which lints them as Crossplane does; discard it."""
    with tempfile.TemporaryDirectory(prefix="modelplane-lint-") as tmp:
        root = Path(tmp) / "pkg"
        root.mkdir()
        for i, src in enumerate(sources):
            shutil.copy(src, root / f"{i:03d}-{src.name}")
        (Path(tmp) / "examples").mkdir()
        cmd = [
            crank,
            "xpkg",
            "build",
            f"--package-root={root}",
            f"--examples-root={Path(tmp) / 'examples'}",
            "-o",
            str(Path(tmp) / "lint.xpkg"),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            msg = f"the Configuration does not lint: {done.stdout}{done.stderr}".strip()
            raise RuntimeError(msg)


# -- report ------------------------------------------------------------------------------


def image_archive(path: Path) -> tuple[dict[str, object], list[tuple[int, int]]]:
    """An image tarball's config and its layers' (compressed, uncompressed) sizes."""
    with tarfile.open(path) as tar:

        def read(name: str) -> bytes:
            member = tar.extractfile(name)
            if member is None:
                msg = f"{path}: no {name}"
                raise RuntimeError(msg)
            return member.read()

        manifest = json.loads(read("manifest.json"))[0]
        config = json.loads(read(manifest["Config"]))
        sizes = []
        for name in manifest["Layers"]:
            blob = read(name)
            raw = gzip.decompress(blob) if blob[:2] == b"\x1f\x8b" else blob
            sizes.append((len(blob), len(raw)))
    return config, sizes


def report(out: Path, seconds: float) -> None:
    """Print the image's and every package's size and digest; write them to digests.txt."""
    mb = 1024 * 1024
    _, sizes = image_archive(out / "image.tar")
    packed, raw = sum(s[0] for s in sizes), sum(s[1] for s in sizes)
    lines = [
        f"runtime image: {packed / mb:.1f} MB compressed, {raw / mb:.1f} MB uncompressed, {len(sizes)} layers"
    ]
    digests = []
    for path in [out / "image.tar", *sorted(out.glob("*.xpkg"))]:
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        digests.append(f"{sha}  {path.name}\n")
        if path.suffix == ".xpkg":
            lines.append(f"  {path.name:34} {_size(path.stat().st_size):>9}  sha256:{sha[:16]}")
    (out / "digests.txt").write_text("".join(digests))
    lines.append(f"built in {seconds:.0f} s; digests in {out / 'digests.txt'}")
    print("\n".join(lines))


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{n / 2**10:.1f} KB"


def main(argv: list[str]) -> None:
    cmd, args = argv[0], argv[1:]
    if cmd == "cut":
        cut(Path(args[0]), Path(args[1]), Path(args[2]))
    elif cmd == "layer":
        epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
        layer(Path(args[0]), Path(args[1]), epoch)
    elif cmd == "examples":
        counts = kind_examples(Path(args[0]))
        log("examples per kind: " + ", ".join(f"{k} {n}" for k, n in counts.items()))
    elif cmd == "configuration":
        crank = os.environ.get("CRANK", str(ROOT / "bin" / "crank"))
        configuration(Path(args[0]), crank)
    elif cmd == "report":
        report(Path(args[0]), float(args[1]))
    else:
        sys.exit(f"unknown command {cmd!r}; see {__file__}")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except (RuntimeError, OSError, IndexError) as exc:
        sys.exit(f"package: {exc}")
