"""One offline ``crank beta validate`` run, the one both schema checks make.

:mod:`modelplane.dev.validate` (our XRDs) and :mod:`modelplane.dev.schemas` (third-party
and built-in kinds) each write their definitions and documents to a fresh directory and
hand them to crank here. crank always wants the Crossplane package's own schemas, so it
gets a cache in which a made-up package is already "cached" (empty), and proxies that
lead nowhere in case anything still tries to fetch. A run that did not give a verdict on
every document is then refused, not taken as a pass.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

OFFLINE_IMAGE = "offline/crossplane:none"
"""crank would fetch Crossplane's own CRDs from this image; an empty cache entry for a
made-up name keeps it offline (none of the validated kinds is Crossplane's)."""
_NOWHERE = "http://127.0.0.1:9"


class ValidationRunError(RuntimeError):
    """crank gave no verdict on every document: it failed, or validated nothing."""


def run(
    crank: Path, extensions: Sequence[Path], resources: Path, work: Path
) -> subprocess.CompletedProcess[str]:
    """Run ``crank beta validate`` over ``resources``, offline.

    Args:
        crank: The crank binary.
        extensions: The XRD and CRD files, or directories of them, that define the kinds.
        resources: The YAML file of the documents to validate.
        work: A fresh directory, for crank's cache; crank runs in it.

    Returns:
        The finished run; what crank printed is the caller's to read.
    """
    cache = work / "cache"
    (cache / OFFLINE_IMAGE.replace(":", "@")).mkdir(parents=True)
    cmd = [
        str(crank), "beta", "validate",
        "--cache-dir", str(cache),
        "--crossplane-image", OFFLINE_IMAGE,
        ",".join(str(p.resolve()) for p in extensions),
        str(resources),
    ]  # fmt: skip
    # Nothing may be fetched: every schema is local, so any proxy leads nowhere.
    env = {**os.environ, "HTTP_PROXY": _NOWHERE, "HTTPS_PROXY": _NOWHERE, "NO_PROXY": ""}
    return subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=work, env=env)


def require_verdicts(
    done: subprocess.CompletedProcess[str],
    *,
    judged: bool,
    total: int,
    given: int,
    noun: str = "documents",
) -> None:
    """Raise unless crank gave a verdict on each of the ``given`` documents.

    Args:
        done: The finished run.
        judged: Whether the caller read any verdict against a document in crank's output.
        total: How many documents crank's ``Total`` line says it read (0 without one).
        given: How many documents it was given.
        noun: What the documents are called in the message.

    Raises:
        ValidationRunError: crank exited non-zero without a verdict, or its ``Total``
            does not count every document it was given.
    """
    if done.returncode != 0 and not judged:
        msg = (
            f"crank beta validate failed ({done.returncode}) without a verdict: "
            f"{done.stderr.strip()}"
        )
        raise ValidationRunError(msg)
    # Every document must have had a verdict: crank's summary counts what it read.
    if total != given:
        msg = (
            f"crank beta validate reported on {total} of {given} {noun} "
            f"(exit code {done.returncode}): {(done.stdout + done.stderr).strip()}"
        )
        raise ValidationRunError(msg)
