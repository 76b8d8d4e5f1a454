"""Crossplane's render protocol (``crossplane internal render``), generated from render.proto.

``render.proto`` is a copy of Crossplane v2.4.0's ``proto/render/v1alpha1/render.proto``;
``render_pb2.py`` and ``render_pb2.pyi`` are generated from it by grpcio-tools and never
edited by hand. Regenerate them in place with ``python -m modelplane.dev.proto``.
"""

from __future__ import annotations

from pathlib import Path

#: The ``functions/`` folder: the proto's import root, so its descriptor is named
#: ``modelplane/dev/proto/render.proto`` and its module ``modelplane.dev.proto.render_pb2``.
SOURCE_ROOT = Path(__file__).resolve().parents[3]
PROTO = Path(__file__).with_name("render.proto")
GENERATED = ("render_pb2.py", "render_pb2.pyi")


def generate(out: Path) -> list[Path]:
    """Generate ``render_pb2.py`` and ``render_pb2.pyi`` under ``out``, mirroring the package.

    Returns:
        The generated files.

    Raises:
        RuntimeError: protoc failed.
    """
    import grpc_tools  # noqa: PLC0415 - a dev-only dependency
    from grpc_tools import protoc  # noqa: PLC0415

    # The well-known types (google/protobuf/struct.proto) ship inside grpc_tools.
    well_known = Path(grpc_tools.__file__).with_name("_proto")
    out.mkdir(parents=True, exist_ok=True)
    code = protoc.main(
        [
            "grpc_tools.protoc",
            f"--proto_path={SOURCE_ROOT}",
            f"--proto_path={well_known}",
            f"--python_out={out}",
            f"--pyi_out={out}",
            str(PROTO),
        ]
    )
    if code != 0:
        msg = f"protoc exited with code {code}"
        raise RuntimeError(msg)
    base = out / PROTO.parent.relative_to(SOURCE_ROOT)
    return [base / name for name in GENERATED]
