"""``python -m modelplane``: the same entry point as ``modelplane-function``."""

from modelplane.main import cli

if __name__ == "__main__":
    cli()
