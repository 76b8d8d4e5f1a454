"""What the offline commands (``modelplane plan``, ``modelplane simulate``) do alike: check
their inputs against the XRDs first, and print them: the ``--output`` option and its JSON
and YAML renderings (each command draws its own table)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click
import yaml

from modelplane.dev import checks

TABLE = "table"
FORMATS = (TABLE, "json", "yaml")

_F = TypeVar("_F", bound=Callable[..., Any])


def output_option(what: str) -> Callable[[_F], _F]:
    """``-o/--output``: a table (the default), JSON or YAML."""
    return click.option(
        "-o",
        "--output",
        type=click.Choice(FORMATS),
        default=TABLE,
        show_default=True,
        help=f"How to print the {what}.",
    )


def echo(
    output: str, data: Callable[[], Any], table: Callable[[], str], *, sort_keys: bool
) -> None:
    """Print in the chosen format; ``data`` and ``table`` are called only when chosen."""
    if output == "json":
        click.echo(json.dumps(data(), indent=2, sort_keys=sort_keys))
    elif output == "yaml":
        click.echo(yaml.safe_dump(data(), sort_keys=sort_keys), nl=False)
    else:
        click.echo(table(), nl=False)


def require_valid(inputs: Sequence[checks.Located]) -> None:
    """Validate the Modelplane documents among ``inputs`` against the XRDs first.

    Without ``bin/crank`` (a package installed without the repository's tools) the
    command goes on, saying its inputs were not checked.

    Raises:
        click.ClickException: a document is invalid; every problem is printed first.
    """
    try:
        problems = checks.check(inputs)
    except checks.ChecksUnavailableError as exc:
        click.echo(f"warning: inputs not validated against the XRDs: {exc}", err=True)
        return
    for problem in problems:
        click.echo(problem, err=True)
    if problems:
        noun = "problem" if len(problems) == 1 else "problems"
        msg = f"{len(problems)} {noun} in the input (nothing was run)"
        raise click.ClickException(msg)
