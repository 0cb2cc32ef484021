"""How fast the TBON math is: build and render trees up to 100,000 ranks.

Target (issue 2): building the tree for 100,000 ranks takes well under a second.
Run: .venv/bin/python benchmarks/topology_bench.py
"""

from __future__ import annotations

import time

from experiments.model.topology import build_tree, render_overlay


def _best_of(runs: int, fn) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    print(f"{'topology':<12} {'ranks':>8} {'build s':>9} {'render s':>9}")
    for topo in ("kary:2", "kary:16", "kary:0", "binomial", "mincrit", "kary:1"):
        for size in (1_000, 100_000):
            tree = build_tree(topo, size)
            build = _best_of(3, lambda t=topo, n=size: build_tree(t, n))
            # A chain's overlay text grows with the square of its size: not printable.
            if 3 * sum(tree.level) > 200_000_000:
                print(f"{topo:<12} {size:>8} {build:>9.4f} {'(refused)':>9}")
                continue
            render = _best_of(3, lambda t=tree: render_overlay(t))
            print(f"{topo:<12} {size:>8} {build:>9.4f} {render:>9.4f}")


if __name__ == "__main__":
    main()
