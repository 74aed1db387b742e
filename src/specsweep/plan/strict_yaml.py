"""A config file checked the way YAML itself does not: no duplicate keys, no alias bombs.

PyYAML (and so Snakemake's ``configfile:``) keeps the last of two equal keys silently: a second
``benchmark:`` block replaces the first wholesale, a second configuration of the same name drops
the first. Aliases (``*name``) are shared, not copied, when loaded, but everything that walks the
config (schema validation, params, provenance, error messages) expands them: a few lines of nested
aliases become billions of nodes. Both are refused here, from the composed node graph (no Python
objects built), with the file and line.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from specsweep.plan.config import ConfigError

# Far above any real sweep (a 1,000-configuration grid is ~20,000 nodes), far below an alias bomb.
MAX_EXPANDED_NODES = 1_000_000


class YamlError(ConfigError):
    """A config file problem, worded for the user: the file, the line, what is wrong."""


def check_file(path: str | Path, max_nodes: int = MAX_EXPANDED_NODES) -> None:
    """Raise ``YamlError`` naming the key and line of a duplicate key, or an alias expansion beyond ``max_nodes``."""
    text = Path(path).read_text()
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as error:
        raise YamlError(f"{path}: not valid YAML: {error}") from None
    if node is not None:
        _check_duplicates(node, path, set())
        _expanded_size(node, path, max_nodes, {}, set())


def _check_duplicates(node: yaml.Node, path: str | Path, seen: set[int]) -> None:
    if id(node) in seen:  # an alias of a node already checked
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        first_line: dict[object, int] = {}
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                line = key.start_mark.line + 1
                if key.value in first_line:
                    raise YamlError(
                        f"{path}: line {line}: duplicate key {key.value!r} (first at line "
                        f"{first_line[key.value]}); YAML would keep only the last one silently. "
                        f"Merge the two entries or rename one."
                    )
                first_line[key.value] = line
            _check_duplicates(key, path, seen)
            _check_duplicates(value, path, seen)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _check_duplicates(item, path, seen)


def _expanded_size(node: yaml.Node, path: str | Path, max_nodes: int, sizes: dict[int, int], visiting: set[int]) -> int:
    """Nodes in the document once every alias is expanded (memoised: linear in the nodes written)."""
    if id(node) in sizes:
        return sizes[id(node)]
    if id(node) in visiting:
        raise YamlError(
            f"{path}: line {node.start_mark.line + 1}: an alias refers to a node that contains it "
            f"(a recursive anchor); write the value out instead"
        )
    visiting.add(id(node))
    children: list[yaml.Node] = []
    if isinstance(node, yaml.MappingNode):
        children = [n for pair in node.value for n in pair]
    elif isinstance(node, yaml.SequenceNode):
        children = list(node.value)
    size = 1 + sum(_expanded_size(child, path, max_nodes, sizes, visiting) for child in children)
    visiting.discard(id(node))
    if size > max_nodes:
        raise YamlError(
            f"{path}: line {node.start_mark.line + 1}: aliases (*name) here expand to more than "
            f"{max_nodes:,} values; refused (an alias bomb?). Write the values out, or use a grid."
        )
    sizes[id(node)] = size
    return size
