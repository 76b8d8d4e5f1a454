"""What the offline commands (``modelplane plan``, ``modelplane simulate``) print alike: the
``--output`` option and its JSON and YAML renderings (each command draws its own table)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click
import yaml

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
