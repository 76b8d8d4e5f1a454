"""The packages ``make package`` builds, used the way Crossplane uses them, without Docker.

A Function package is unpacked (``crane export``: the runtime image's filesystem plus
package.yaml), its server is started from that filesystem as the image says (entrypoint,
user 65532, no shell), in its own PID and mount namespaces (``unshare``; ``chroot``), with
the mTLS certificates Crossplane would mount, and answers a real RunFunction call from
a client that presents a certificate the CA signed, byte for byte what the checkout's
code answers. A client without one is refused.

Runs ``make package`` first (a no-op when ``_out/`` is up to date); needs root. Run it
with ``make package-test``.
"""

from __future__ import annotations

import importlib.util
import io
import os
import shutil
import signal
import socket
import subprocess
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import grpc
import pytest
import yaml
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1
from modelplane import registry, runtime

from tests import inprocess as loop
from tests.requests import request

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "_out"
KINDS = sorted(d.name for d in (ROOT / "package" / "functions").iterdir() if d.is_dir())
RUN_UID = 65532
ENTRYPOINT = ["/venv/fn/bin/modelplane-function", "all"]
# The devices a container runtime gives every container (grpc needs /dev/urandom).
DEVICES = ("null", "zero", "full", "random", "urandom")


def _xpkg_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("xpkg", ROOT / "tools" / "package" / "xpkg.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


xpkg = _xpkg_module()


@pytest.fixture(scope="module")
def out() -> Path:
    """``_out/``, built or brought up to date by ``make package``."""
    subprocess.run(["make", "-s", "package"], cwd=ROOT, check=True)
    return OUT


@pytest.fixture(scope="module")
def crane() -> str:
    folder = subprocess.run(
        ["bash", str(ROOT / "tools" / "package" / "ggcr.sh")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return str(Path(folder) / "crane")


def export(crane: str, package: Path, into: Path) -> None:
    """Unpack a package's filesystem (every layer, flattened) into ``into``."""
    with package.open("rb") as stdin:
        flat = subprocess.run(
            [crane, "export", "-", "-"], stdin=stdin, capture_output=True, check=True
        )
    with tarfile.open(fileobj=io.BytesIO(flat.stdout)) as tar:
        tar.extractall(into, filter="fully_trusted")


def package_yaml(crane: str, package: Path, tmp: Path) -> list[dict[str, Any]]:
    export(crane, package, tmp)
    return [d for d in yaml.safe_load_all((tmp / "package.yaml").read_text()) if d]


# -- the image ---------------------------------------------------------------------------


def test_the_image_runs_the_server_as_non_root_on_linux_amd64(out: Path) -> None:
    config, layers = xpkg.image_archive(out / "image.tar")
    assert (config["os"], config["architecture"]) == ("linux", "amd64")
    assert config["config"]["Entrypoint"] == ENTRYPOINT
    assert config["config"]["User"] == f"{RUN_UID}:{RUN_UID}"
    assert set(config["config"]["ExposedPorts"]) == {"9443/tcp"}
    assert len(layers) == 2, "a base layer (python, libraries, stdlib) and the venv"


def test_the_image_has_no_shell_and_no_package_manager(
    out: Path, crane: str, tmp_path: Path
) -> None:
    export(crane, out / "image.tar", tmp_path)
    assert (tmp_path / "usr" / "bin" / "python3.11").is_file()
    for absent in ("bin/sh", "usr/bin/bash", "usr/bin/apt", "usr/bin/dpkg", "venv/fn/bin/pip"):
        assert not (tmp_path / absent).exists(), absent


# -- the packages ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_each_function_package_embeds_the_image_and_its_own_examples(
    kind: str, out: Path, crane: str, tmp_path: Path
) -> None:
    package = out / f"function-{kind}.xpkg"
    (meta,) = package_yaml(crane, package, tmp_path)
    assert (meta["kind"], meta["metadata"]["name"]) == ("Function", f"function-{kind}")
    image, _ = xpkg.image_archive(out / "image.tar")
    config, _ = xpkg.image_archive(package)
    assert config["rootfs"]["diff_ids"][:2] == image["rootfs"]["diff_ids"]
    assert config["config"]["Entrypoint"] == ENTRYPOINT
    examples = tmp_path / ".up" / "examples.yaml"
    if examples.exists():
        kinds = {d["kind"].lower() for d in yaml.safe_load_all(examples.read_text()) if d}
        assert kinds == {kind}


def test_the_configuration_holds_every_object_verbatim(
    out: Path, crane: str, tmp_path: Path
) -> None:
    """crossplane.yaml, 14 XRDs with their Compositions, the activation policy, unchanged:
    ModelDeployment's XRD keeps its scale subresource (crank v2.2.1 would drop it)."""
    docs = package_yaml(crane, out / "modelplane.xpkg", tmp_path)
    sources = [
        d for f in xpkg.configuration_sources() for d in yaml.safe_load_all(f.read_text()) if d
    ]
    assert docs == sources
    kinds = [d["kind"] for d in docs]
    assert kinds.count("Configuration") == 1
    assert kinds.count("CompositeResourceDefinition") == kinds.count("Composition") == len(KINDS)
    assert kinds.count("ManagedResourceActivationPolicy") == 1
    (xrd,) = [
        d
        for d in docs
        if (d["kind"], d["metadata"]["name"])
        == ("CompositeResourceDefinition", "modeldeployments.modelplane.ai")
    ]
    assert "scale" in xrd["spec"]["versions"][0]["subresources"]


def test_a_rebuild_gives_the_same_digests(out: Path, tmp_path: Path) -> None:
    """From the cached Debian rootfs and the same sources (the copy the build kept, so an
    edit since does not count): every file bit for bit."""
    env = {**os.environ, "OUT_DIR": str(tmp_path / "out"), "SRC_DIR": str(out / "build" / "src")}
    subprocess.run(["bash", str(ROOT / "tools" / "package" / "build.sh")], env=env, check=True)
    again = (tmp_path / "out" / "digests.txt").read_text()
    assert again == (out / "digests.txt").read_text()
    assert len(again.splitlines()) == len(KINDS) + 2


# -- the server, from the package's filesystem, over mTLS --------------------------------


def openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], capture_output=True, check=True)


def issue(folder: Path, name: str, usage: str, serial: int) -> None:
    """A P-256 key and a certificate for ``name`` the test CA signs."""
    key, csr, crt = folder / f"{name}.key", folder / f"{name}.csr", folder / f"{name}.crt"
    ext = folder / f"{name}.ext"
    ext.write_text(f"subjectAltName=DNS:{name}\nextendedKeyUsage={usage}\n")
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", key, "-out", csr, "-subj", f"/CN={name}")  # fmt: skip
    openssl("x509", "-req", "-in", csr, "-CA", folder / "ca.crt", "-CAkey", folder / "ca.key",
            "-set_serial", str(serial), "-days", "1", "-extfile", ext, "-out", crt)  # fmt: skip


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA, the server's certificate (as tls.crt/tls.key/ca.crt) and a client's."""
    folder = tmp_path_factory.mktemp("certs")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", folder / "ca.key", "-out", folder / "ca.crt",
            "-subj", "/CN=modelplane-test-ca", "-days", "1")  # fmt: skip
    issue(folder, "function-ekscluster", "serverAuth", 1)
    issue(folder, "crossplane", "clientAuth", 2)
    return folder


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def serving(
    out: Path, crane: str, certs: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The EKSCluster Function's package, unpacked and serving with mTLS; its address."""
    fs = tmp_path_factory.mktemp("function-ekscluster")
    export(crane, out / "function-ekscluster.xpkg", fs)
    fs.chmod(0o755)  # the container's /, which a temporary folder is not
    tls = fs / "tls"  # where Crossplane mounts them; readable by the server's user
    tls.mkdir()
    for src, dst in (
        ("function-ekscluster.crt", "tls.crt"),
        ("function-ekscluster.key", "tls.key"),
        ("ca.crt", "ca.crt"),
    ):
        shutil.copy(certs / src, tls / dst)
        os.chown(tls / dst, RUN_UID, RUN_UID)
    for mountpoint in ("dev", "proc"):
        (fs / mountpoint).mkdir(exist_ok=True)
    config, _ = xpkg.image_archive(out / "image.tar")
    address = f"127.0.0.1:{free_port()}"
    command = [*config["config"]["Entrypoint"], "--address", address]
    # The runtime's part: /dev and /proc, the image's user and entrypoint, the certs' dir.
    devices = "; ".join(
        f"touch {fs}/dev/{d} && mount --bind /dev/{d} {fs}/dev/{d}" for d in DEVICES
    )
    script = (
        f"mount -t tmpfs -o mode=755 dev {fs}/dev && {devices} && mkdir {fs}/dev/shm"
        f" && mount -t tmpfs -o mode=1777 shm {fs}/dev/shm && mount -t proc proc {fs}/proc"
        f' && exec chroot --userspec={RUN_UID}:{RUN_UID} {fs} "$@"'
    )
    # The image's environment (its PATH has /usr/sbin, for the host's chroot too).
    env = dict(e.split("=", 1) for e in config["config"]["Env"])
    env["TLS_SERVER_CERTS_DIR"] = "/tls"
    log = (fs / "server.log").open("w")
    proc = subprocess.Popen(
        ["unshare", "--fork", "--pid", "--mount", "sh", "-c", script, "sh", *command],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_port(address, proc, fs / "server.log")
        yield address
    finally:
        stop(proc)
        log.close()


def wait_for_port(address: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    host, port = address.split(":")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the server exited: {log.read_text()}")
        with socket.socket() as sock:
            if sock.connect_ex((host, int(port))) == 0:
                return
        time.sleep(0.2)
    pytest.fail(f"the server did not listen on {address} in 60 s: {log.read_text()}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server itself: unshare ignores SIGTERM; its child is the namespace's init,
    whose end ends every process in the namespace."""
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    pids = children.read_text().split() if children.exists() else []
    for pid in pids:
        os.kill(int(pid), signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        for pid in pids:
            os.kill(int(pid), signal.SIGKILL)
        proc.wait(timeout=10)


def channel(address: str, certs: Path, *, client_cert: bool) -> grpc.Channel:
    creds = grpc.ssl_channel_credentials(
        root_certificates=(certs / "ca.crt").read_bytes(),
        private_key=(certs / "crossplane.key").read_bytes() if client_cert else None,
        certificate_chain=(certs / "crossplane.crt").read_bytes() if client_cert else None,
    )
    options = [("grpc.ssl_target_name_override", "function-ekscluster")]
    return grpc.secure_channel(address, creds, options=options)


def stub(chan: grpc.Channel) -> grpcv1.FunctionRunnerServiceStub:
    return grpcv1.FunctionRunnerServiceStub(chan)  # type: ignore[no-untyped-call]


def eks_request() -> fnv1.RunFunctionRequest:
    (xr,) = loop.load("examples/reference/eksclusters.yaml")
    return request(xr)


def test_the_packaged_server_composes_over_mtls(serving: str, certs: Path) -> None:
    req = eks_request()
    with channel(serving, certs, client_cert=True) as chan:
        rsp = stub(chan).RunFunction(req, timeout=60)
    composed = {(r["apiVersion"], r["kind"]) for r in loop.desired(rsp).values()}
    assert ("eks.aws.m.upbound.io/v1beta1", "Cluster") in composed
    assert ("ec2.aws.m.upbound.io/v1beta1", "VPC") in composed
    want = runtime.run(eks_request(), registry.COMPOSERS)
    assert rsp.SerializeToString(deterministic=True) == want.SerializeToString(deterministic=True)


def test_the_packaged_server_refuses_a_client_without_a_certificate(
    serving: str, certs: Path
) -> None:
    with channel(serving, certs, client_cert=False) as chan, pytest.raises(grpc.RpcError) as err:
        stub(chan).RunFunction(eks_request(), timeout=30)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE


def test_the_digests_file_lists_the_image_and_every_package(out: Path) -> None:
    names = [line.split()[1] for line in (out / "digests.txt").read_text().splitlines()]
    assert names == ["image.tar", *sorted(f"function-{k}.xpkg" for k in KINDS), "modelplane.xpkg"]
