"""``python -m modelplane.dra check [FILE]``: verdicts for JSON-lines requests."""

from __future__ import annotations

import json
import sys
from typing import TextIO

import click

from modelplane.dra import protocol


@click.group()
def cli() -> None:
    """DRA selector tools."""


@cli.command()
@click.argument("source", type=click.File("r"), default="-")
def check(source: TextIO) -> None:
    """Read requests (one JSON object a line) from SOURCE or stdin; print one verdict each."""
    for number, line in enumerate(source, start=1):
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except json.JSONDecodeError as err:
            click.echo(f"line {number}: not JSON: {err}", err=True)
            sys.exit(2)
        click.echo(protocol.render(protocol.answer(request)))


if __name__ == "__main__":
    cli()
