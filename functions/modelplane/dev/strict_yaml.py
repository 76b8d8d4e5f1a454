"""A strict YAML loader: duplicate keys are errors, as in kubectl's strict decoding.

PyYAML's ``safe_load_all`` keeps the last of two equal keys without a word, so a
stream that lost a ``---`` between two documents loads as one merged document. The
loader here refuses it, naming the line; tests load everything we print with it.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode


class StrictLoader(yaml.SafeLoader):
    """A safe loader that refuses a mapping holding the same key twice."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        """Construct a mapping, raising on a repeated key (PyYAML keeps the last)."""
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                context = "while constructing a mapping"
                raise ConstructorError(
                    context,
                    node.start_mark,
                    f"found duplicate key {key!r}",
                    key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_all(text: str) -> list[Any]:
    """Return every document of a YAML stream, empty ones included; strict about keys.

    Raises:
        yaml.YAMLError: the text is not YAML, or a mapping repeats a key.
    """
    return list(yaml.load_all(text, Loader=StrictLoader))
