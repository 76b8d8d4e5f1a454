"""``python -m modelplane.runtime``: the same entry point as ``modelplane-function``."""

from modelplane.runtime import cli

if __name__ == "__main__":
    cli()
