"""YAML loaded with its size and its aliases bounded: a "billion laughs" file is refused.

PyYAML composes an alias as a reference to its anchor's node, so nine levels of nine aliases
compose in microseconds and explode only when walked (converted, copied, printed): 9^9 list
items, minutes and gigabytes. Here the composed graph is measured first, each node once, by the
number of nodes it would expand to; past `MAX_YAML_NODES`, or on an alias cycle, the file is
refused before anything is built. The file itself must be a regular file of at most
`MAX_YAML_BYTES`.

A top-level module (no layer of its own) so that both the dataset reader (workload) and the
experiment composer (config), which may not import each other, can use it. Must not: import
torch/numpy/hydra.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml

from libreyolo.errors import UsageError

MAX_YAML_BYTES = 8 << 20  # a dataset or experiment YAML is a few kB (coco's 80 names: 2 kB)
MAX_YAML_NODES = 200_000  # nodes after alias expansion: 10 000 class names use ~10 000

FIX = "fix the file"
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser when installed


def load_yaml_bounded(
    path: str | os.PathLike[str],
    *,
    error: type[UsageError] = UsageError,
    max_nodes: int = MAX_YAML_NODES,
) -> Any:
    """The YAML document in `path` (safe tags only), or `error` (a UsageError class: exit 2)
    with one line when it is missing, no regular file, too large, not YAML, or its aliases
    expand past `max_nodes` nodes."""
    target = Path(path)
    loader, node = _checked(target, error, max_nodes)
    try:
        return None if node is None else loader.construct_document(node)
    except (yaml.YAMLError, RecursionError) as err:  # an unsafe tag, an unhashable key
        raise error(f"{target}: not valid YAML: {yaml_problem(err)}", hint=FIX) from None
    finally:
        loader.dispose()


def check_yaml_bounded(
    path: str | os.PathLike[str],
    *,
    error: type[UsageError] = UsageError,
    max_nodes: int = MAX_YAML_NODES,
) -> None:
    """Refuse `path` as `load_yaml_bounded` would, without building its document (for files
    another library loads afterwards: Hydra's experiment configs)."""
    loader, _ = _checked(Path(path), error, max_nodes)
    loader.dispose()


def _checked(target: Path, error: type[UsageError], max_nodes: int) -> tuple[Any, Any]:
    """A loader over `target` and its composed node graph (None: an empty document), checked
    to be bounded; the caller constructs from that node and disposes of the loader."""
    try:
        info = os.stat(target)
    except OSError as err:
        raise error(f"{target}: cannot read it ({err.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise error(f"{target}: not a regular file")
    if info.st_size > MAX_YAML_BYTES:
        raise error(f"{target}: larger than {MAX_YAML_BYTES >> 20} MiB, too large for a YAML file")
    try:
        loader = _Loader(target.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise error(f"{target}: not valid YAML: {_one_line(err)}", hint=FIX) from None
    try:
        node = loader.get_single_node()
        if node is not None:
            _check_expansion(node, max_nodes, target, error)
    except (yaml.YAMLError, RecursionError) as err:
        loader.dispose()
        raise error(f"{target}: not valid YAML: {yaml_problem(err)}", hint=FIX) from None
    except UsageError:
        loader.dispose()
        raise
    return loader, node


def _check_expansion(root: yaml.Node, max_nodes: int, path: Path, error: type[UsageError]) -> None:
    """Refuse a graph whose aliases expand past `max_nodes` nodes, or loop; each distinct node
    is visited once (iteratively: deep nesting cannot overflow the stack)."""
    sizes: dict[int, int] = {}  # id(node) -> nodes in its expansion
    inside: set[int] = set()  # nodes whose expansion is being counted
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, counted = stack.pop()
        key = id(node)
        if counted:
            inside.discard(key)
            size = 1 + sum(sizes[id(child)] for child in _children(node))
            if size > max_nodes:
                raise error(
                    f"{path}: its aliases expand to more than {max_nodes} YAML nodes "
                    "(nested aliases, a 'billion laughs' file?)"
                )
            sizes[key] = size
        elif key in inside:
            raise error(f"{path}: an alias refers to a node that contains it")
        elif key not in sizes:
            inside.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node) if id(child) not in sizes)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def yaml_problem(err: BaseException) -> str:
    """A YAML error in one line: its problem and where (1-based line and column)."""
    problem = getattr(err, "problem", None) or _one_line(err)
    mark = getattr(err, "problem_mark", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    return f"{problem}{where}"


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())
