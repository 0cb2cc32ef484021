"""A Backend that runs nothing: it hands each cell to a function (like httpx's MockTransport).

    backend = FakeBackend(lambda cell, rendered, timeout: RunResult(fake_log(cell), 0))

`fake_log(cell)` writes what a good entrypoint prints (legacy EVENT + `time`
lines and KARY lines), with event names from experiments.formats.events and
KARY lines from experiments.formats.kary_line's writer; `failed=` makes chosen
steps fail.  Calls, ups and downs are recorded for assertions.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from experiments.backends.base import Backend, RunResult
from experiments.formats.cell_layout import format_size
from experiments.formats.events import strategy_events
from experiments.formats.kary_line import format_kary_line
from experiments.model.plan import Cell
from experiments.model.render import Rendered, strategy_waves
from experiments.model.topology import build_tree

__all__ = ["FakeBackend", "fake_log"]

Handler = Callable[[Cell, Rendered, "float | None"], RunResult]


def fake_log(
    cell: Cell, failed: Collection[str] = (), seconds: float = 0.5, cold_cache: bool = False
) -> str:
    """A complete benchmark log for `cell`; events named in `failed` get rc 1.

    `cold_cache` adds the template's `cold-cache` line (every rank holding no blob)
    before each strategy's waves, which `kary parse` and the race need to take a
    distribution as a timing (formats.kary_line.ColdCache).

    Per size and strategy it has the steps a test needs, the archive's
    creation and each distribution wave, each as the template prints it: the
    legacy EVENT + `time` lines, then the KARY line.
    """
    tree = build_tree(cell.topo, cell.nodes)
    meta = {"meta": "cell", "cell": cell.id, "nodes": cell.nodes, "topo": cell.topo}
    lines = [format_kary_line({**meta, "flux_version": "0.66.0", "size_attr": str(cell.nodes)})]
    bad = 0
    for size in cell.sizes:
        label = format_size(size)
        for strategy in cell.strategies:
            waves = [event for event, _ in strategy_waves(tree, strategy)]
            if cold_cache:
                blobs = {str(rank): 0 for rank in range(cell.nodes)}
                lines.append(
                    format_kary_line(
                        {"meta": "cold-cache", "size": label, "strategy": strategy,
                         "cached_blobs": blobs}
                    )
                )  # fmt: skip
            for event in [strategy_events(strategy).create, *waves]:
                rc = 1 if event in failed else 0
                bad += rc
                step = {"event": event, "size": label, "size_bytes": size}
                lines += [
                    f"EVENT {event}-{label}",
                    "",
                    f"real\t0m{seconds:.3f}s",
                    "user\t0m0.010s",
                    "sys\t0m0.001s",
                    format_kary_line({**step, "seconds": seconds, "rc": rc}),
                ]
    lines.append(format_kary_line({"meta": "done", "failed_steps": bad}))
    return "\n".join(lines) + "\n"


def _succeed(cell: Cell, rendered: Rendered, timeout: float | None) -> RunResult:
    return RunResult(log=fake_log(cell), rc=0)


@dataclass
class FakeBackend(Backend):
    """Calls `handler` for each cell; records what it was asked to do."""

    handler: Handler = _succeed
    name: str = "fake"
    calls: list[tuple[Cell, Rendered, float | None]] = field(default_factory=list)
    ups: int = 0
    downs: int = 0

    def up(self) -> None:
        self.ups += 1

    def run(self, cell: Cell, rendered: Rendered, timeout: float | None) -> RunResult:
        self.calls.append((cell, rendered, timeout))
        return self.handler(cell, rendered, timeout)

    def down(self) -> None:
        self.downs += 1
