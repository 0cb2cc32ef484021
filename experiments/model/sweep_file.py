"""A sweep file: a study kept as YAML, to commit and rerun, checked line by line.

    name: chunk-study
    matrix:            # every combination
      nodes: [4, 6]
      topo: [kary:1, kary:2]
      chunksize: [256K, 1M]
    zip: {}            # axes that vary together, same length
    sizes: [16M]       # every cell runs every size
    strategies: [all]
    iterations: 2
    backend: local

Axes (nodes, topo, chunksize, mmap, purge_target_size; experiments/model/axes.py)
go under `matrix` or `zip`; an axis written at the top level is a matrix
axis (`nodes: 30` is `matrix: {nodes: [30]}`).  The other keys are the
sweep's flags under their Python names (experiments.model.sweep.Sweep).  Paths are
relative to the file's folder, so a study runs the same from anywhere.

Every mistake is one line, `FILE:LINE: what is wrong`.  PyYAML's composer
keeps where each node starts, so the file is read as nodes and each value
is checked where it was written; PyYAML is already kary's YAML reader and
kept up, where ruamel.yaml would be a second YAML library for line numbers alone.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from experiments.errors import UserError
from experiments.formats.events import EXPERIMENTS, STRATEGIES
from experiments.model.axes import AXES, axis_value, points
from experiments.model.units import parse_size
from experiments.model.validate import dns1123_name, image_ref

__all__ = ["FILE_KEYS", "SweepFile", "load_sweep_file"]

_PATH_KEYS = ("cluster", "designs", "data_dir", "template", "history")
# The keys a sweep file may have besides the axes; `description` is for people.
FILE_KEYS = (
    "name",
    "description",
    "matrix",
    "zip",
    "sizes",
    "strategies",
    "experiment",
    "iterations",
    "order",
    "seed",
    "backend",
    "verify",
    "smoke",
    "image",
    "flux_view",
    "link_bandwidth",
    "link_latency",
    "root_link_bandwidth",
    "group_size",
    "group_link_bandwidth",
    "link_queue",
    "place",
    "layout",
    *_PATH_KEYS,
)


@dataclass(frozen=True)
class SweepFile:
    """A checked sweep file: its Sweep values, where each key was written, and its bytes."""

    path: Path
    sha256: str
    data: bytes = field(repr=False)
    # Sweep field -> value: matrix and zip as {axis: [values]}, paths resolved.
    values: dict[str, Any] = field(default_factory=dict)
    # Key -> the 1-based line it is on ("matrix.nodes" for an axis).
    lines: dict[str, int] = field(default_factory=dict)

    def error(self, key: str, message: str) -> UserError:
        """A one-line error about `key`, at its line."""
        line = self.lines.get(key)
        return UserError(f"{self.path}:{line}: {message}" if line else f"{self.path}: {message}")


class _Reader:
    """Walks the composed YAML, turning each node into a checked value or a located error."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.constructor = yaml.SafeLoader("")

    def fail(self, node: yaml.Node, message: str) -> UserError:
        return UserError(f"{self.path}:{node.start_mark.line + 1}: {message}")

    def value(self, node: yaml.Node) -> Any:
        return self.constructor.construct_object(node, deep=True)

    def mapping(self, node: yaml.Node, what: str) -> list[tuple[str, yaml.Node, yaml.Node]]:
        """(key, key node, value node) of a mapping; duplicate or non-text keys refused."""
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, f"{what} must be a mapping of keys to values")
        seen: dict[str, int] = {}
        pairs = []
        for key_node, value_node in node.value:
            key = self.value(key_node)
            if not isinstance(key, str):
                raise self.fail(key_node, f"{what}: key {key!r} is not a name")
            if key in seen:
                raise self.fail(key_node, f"{key} is given twice (first on line {seen[key]})")
            seen[key] = key_node.start_mark.line + 1
            pairs.append((key, key_node, value_node))
        return pairs

    def checked(self, node: yaml.Node, check: Callable[[Any], Any]) -> Any:
        """check(value of node); its UserError gets the node's line."""
        try:
            return check(self.value(node))
        except UserError as err:
            raise self.fail(node, str(err)) from None

    def axis(self, name: str, node: yaml.Node, top_level: bool) -> list[Any]:
        """An axis's values, each checked at its own line; a top-level scalar is one value."""
        if isinstance(node, yaml.SequenceNode):
            items = node.value
        elif top_level and isinstance(node, yaml.ScalarNode):
            items = [node]
        else:
            raise self.fail(node, f"axis {name}: expected a list of values, e.g. [a, b]")
        if not items:
            raise self.fail(node, f"axis {name} has no values")
        values: list[Any] = []
        for item in items:
            value = self.checked(item, lambda raw: axis_value(name, raw))
            if value in values:
                raise self.fail(item, f"axis {name} lists {self.value(item)!r} twice")
            values.append(value)
        return values


def load_sweep_file(path: Path) -> SweepFile:
    """Read and check a sweep file; every mistake is one UserError line with its line number."""
    path = Path(path)
    try:
        data = path.read_bytes()
        text = data.decode()
    except FileNotFoundError:
        raise UserError(f"sweep file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as err:
        raise UserError(f"sweep file {path} is not readable: {err}") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise UserError(f"{path}{where}: not valid YAML: {problem}") from None
    if root is None:
        raise UserError(f"{path}: the sweep file is empty")
    reader = _Reader(path)
    sweep = SweepFile(path, hashlib.sha256(data).hexdigest(), data)
    for key, key_node, node in reader.mapping(root, "a sweep file"):
        sweep.lines[key] = key_node.start_mark.line + 1
        if key in ("matrix", "zip"):
            axes = sweep.values.setdefault(key, {})
            for axis, axis_node, values in reader.mapping(node, key):
                if axis not in AXES:
                    raise reader.fail(
                        axis_node,
                        f"{key}: unknown axis {axis!r}{_did_you_mean(axis, AXES)}: "
                        f"choose from {', '.join(AXES)}",
                    )
                sweep.lines[f"{key}.{axis}"] = axis_node.start_mark.line + 1
                axes[axis] = reader.axis(axis, values, top_level=False)
        elif key in AXES:
            sweep.values.setdefault("matrix", {})[key] = reader.axis(key, node, top_level=True)
            sweep.lines[f"matrix.{key}"] = sweep.lines[key]
        elif key in FILE_KEYS:
            value = reader.checked(node, partial(_plain, key))
            if key in _PATH_KEYS:
                value = path.parent / value
            if key != "description":
                sweep.values[key] = value
        else:
            known = ", ".join((*FILE_KEYS, *AXES))
            raise reader.fail(
                key_node,
                f"unknown key {key!r}{_did_you_mean(key, (*FILE_KEYS, *AXES))}: "
                f"known keys are {known}",
            )
    _check_axes(sweep)
    return sweep


def _did_you_mean(key: object, known: Sequence[str]) -> str:
    """` (did you mean 'iterations'?)` for a near miss, as the flags' parser says; else ""."""
    close = difflib.get_close_matches(str(key), known, n=1) if isinstance(key, str) else []
    return f" (did you mean {close[0]!r}?)" if close else ""


def _check_axes(sweep: SweepFile) -> None:
    """An axis in both matrix and zip, or zip axes of different lengths: at the zip's line."""
    matrix, zipped = sweep.values.get("matrix", {}), sweep.values.get("zip", {})
    for axis in matrix:
        if axis in zipped:
            raise sweep.error(f"zip.{axis}", f"axis {axis} is both in the matrix and in the zip")
    try:
        points(matrix, zipped)
    except UserError as err:
        raise sweep.error("zip", str(err)) from None


def _plain(key: str, raw: Any) -> Any:
    """The value of a non-axis key, checked; a UserError says what is wrong with it."""
    if key in ("iterations", "seed"):
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise UserError(f"{key} must be a whole number, not {raw!r}")
        if key == "iterations" and raw < 1:
            raise UserError(f"iterations must be >= 1, not {raw}")
        return raw
    if key in ("verify", "smoke"):
        if not isinstance(raw, bool):
            raise UserError(f"{key} must be true or false, not {raw!r}")
        return raw
    if key == "sizes":
        sizes = _text_list(key, raw)
        for size in sizes:
            parse_size(size)
        if len({parse_size(s) for s in sizes}) != len(sizes):
            raise UserError("sizes: a size is listed twice")
        return sizes
    if key == "strategies":
        strategies = _text_list(key, raw)
        for strategy in strategies:
            if strategy not in STRATEGIES:
                raise UserError(
                    f"unknown strategy {strategy!r}: choose from {', '.join(STRATEGIES)}"
                )
        return strategies
    if not isinstance(raw, str) or not raw.strip():
        raise UserError(f"{key} must be text, not {raw!r}")
    if key == "name":
        return dns1123_name(raw, "name")
    if key in ("image", "flux_view"):
        return image_ref(raw, key)
    if key == "experiment" and raw not in EXPERIMENTS:
        raise UserError(f"unknown experiment {raw!r}: choose from {', '.join(EXPERIMENTS)}")
    if key == "order" and raw not in ("given", "random"):
        raise UserError(f"order must be given or random, not {raw!r}")
    return raw


def _text_list(key: str, raw: Any) -> list[str]:
    """A list of text items, or one comma-separated text (`16M,64M`)."""
    items = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(items, list) or not all(isinstance(i, (str, int)) for i in items):
        raise UserError(f"{key}: expected a list such as [16M, 64M]")
    texts = [str(item).strip() for item in items if str(item).strip()]
    if not texts:
        raise UserError(f"{key} has no values")
    return texts
