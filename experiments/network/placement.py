"""TBON placement over the physical network: which tree edges cross switches, and a better order.

Ranks take instances in hostlist order: rank 0 is the first instance, rank 1 the
second, and so on. Each TBON edge (parent rank, child rank) is counted by the
deepest network layer its two instances share, counting from the top: both
under one closest switch (layer 3 on EC2), the same layer-2 node only, the same
layer-1 node only, or none. An edge with an instance of unknown topology is
`unknown`.

cross_l3 is the number of edges whose endpoints do NOT share their closest
(layer-3, i.e. last) network node; an edge with an endpoint of unknown topology
counts as crossing, since nothing says it does not.

The proposed order groups instances by their network path (layer 1, then 2,
then 3) and lays the groups onto the tree so that each switch gets a connected
piece of it: several group orders and tree walks (rank order, depth-first pre-
and post-order) are tried, and the best is kept. The input order is one of the
candidates and wins ties, so the proposal is never worse than the input.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from experiments.errors import UserError
from experiments.model.topology import Tree, build_tree
from experiments.network.model import Instance, shared_layers

__all__ = ["EdgeCounts", "Placement", "count_edges", "propose_order"]


@dataclass(frozen=True)
class EdgeCounts:
    """TBON edges by the deepest network layer their two instances share."""

    edges: int
    # "layer-D" ... "layer-1", "none", "unknown"; D = the deepest topology seen.
    by_shared: dict[str, int]
    cross_l3: int


@dataclass(frozen=True)
class Placement:
    """A rank order for the instances under one TBON, with edge counts before and after."""

    tree: Tree
    before: list[Instance]
    order: list[Instance]
    counts_before: EdgeCounts
    counts_after: EdgeCounts
    strategy: str


def _shared(a: Instance, b: Instance) -> int | None:
    """Layers shared from the top; None when either instance has no topology."""
    if not a.network_nodes or not b.network_nodes:
        return None
    return shared_layers(a.network_nodes, b.network_nodes)


def _depth(instances: Sequence[Instance]) -> int:
    return max((len(i.network_nodes) for i in instances), default=0)


def count_edges(tree: Tree, ranked: Sequence[Instance], depth: int | None = None) -> EdgeCounts:
    """Count the TBON edges of `tree` when rank r runs on `ranked[r]`."""
    if len(ranked) != tree.size:
        raise ValueError(f"{len(ranked)} instances for a tree of {tree.size} ranks")
    depth = _depth(ranked) if depth is None else depth
    keys = [f"layer-{d}" for d in range(depth, 0, -1)] + ["none", "unknown"]
    by_shared = dict.fromkeys(keys, 0)
    cross = 0
    for parent, child in tree.edges():
        a, b = ranked[parent], ranked[child]
        shared = _shared(a, b)
        if shared is None:
            by_shared["unknown"] += 1
        else:
            by_shared[f"layer-{shared}" if shared else "none"] += 1
        if shared is None or a.closest != b.closest:
            cross += 1
    return EdgeCounts(edges=tree.size - 1, by_shared=by_shared, cross_l3=cross)


def _score(counts: EdgeCounts, depth: int) -> tuple[int, ...]:
    """Fewest edges crossing the closest switch first, then layer by layer upwards."""
    crossing = [counts.cross_l3]
    for layer in range(depth - 1, 0, -1):
        shares = sum(counts.by_shared[f"layer-{d}"] for d in range(layer, depth + 1))
        crossing.append(counts.edges - shares)
    return tuple(crossing)


def _grouped(instances: Sequence[Instance], level: int, size_order: int) -> list[Instance]:
    """Instances grouped by network node at `level` and below; `size_order` 0 keeps first
    appearance, 1 puts big groups first, -1 small groups first (ties keep appearance)."""
    ended = [i for i in instances if len(i.network_nodes) <= level]
    buckets: dict[str, list[Instance]] = {}
    for inst in instances:
        if len(inst.network_nodes) > level:
            buckets.setdefault(inst.network_nodes[level], []).append(inst)
    groups = list(buckets.values())
    if size_order:
        groups.sort(key=lambda g: -size_order * len(g))
    out = list(ended)
    for group in groups:
        out.extend(_grouped(group, level + 1, size_order))
    return out


def _subtree_sizes(tree: Tree) -> list[int]:
    sizes = [1] * tree.size
    # Parents have smaller ranks than their children in every flux-core topology.
    for rank in range(tree.size - 1, 0, -1):
        sizes[tree.parents[rank]] += sizes[rank]
    return sizes


def _walk(tree: Tree, post: bool, big_first: bool) -> list[int]:
    """Ranks in depth-first pre- or post-order (explicit stack: kary:1 is a deep chain)."""
    sizes = _subtree_sizes(tree) if big_first else []

    def kids(rank: int) -> list[int]:
        children = list(tree.children[rank])
        if big_first:
            children.sort(key=lambda c: -sizes[c])
        return children

    order: list[int] = []
    stack: list[tuple[int, bool]] = [(0, False)]
    while stack:
        rank, expanded = stack.pop()
        if expanded:
            order.append(rank)
            continue
        if not post:
            order.append(rank)
        else:
            stack.append((rank, True))
        stack.extend((c, False) for c in reversed(kids(rank)))
    return order


def _walks(tree: Tree) -> dict[str, Callable[[], list[int]]]:
    return {
        "rank order": lambda: list(range(tree.size)),
        "depth-first preorder": lambda: _walk(tree, post=False, big_first=False),
        "depth-first preorder, big subtrees first": lambda: _walk(tree, False, True),
        "depth-first postorder": lambda: _walk(tree, post=True, big_first=False),
        "depth-first postorder, big subtrees first": lambda: _walk(tree, True, True),
    }


def _edge_cost(a: Instance, b: Instance, depth: int) -> tuple[int, ...]:
    """One edge's share of the score: 1 per layer (closest first) whose node it crosses."""
    shared = _shared(a, b)
    closest_differs = shared is None or a.closest != b.closest
    shared = shared or 0
    return (int(closest_differs), *(int(shared < layer) for layer in range(depth - 1, 0, -1)))


# Swap tries before the local search stops: enough to settle a few thousand ranks, and
# it keeps a 100,000-rank placement to seconds.
_SWAP_BUDGET = 20_000


def _improve_by_swaps(tree: Tree, ranked: list[Instance], depth: int, max_passes: int = 20) -> bool:
    """Swap the instance of a crossing edge's end with one under the other end's switch,
    whenever that lowers the score; repeat until nothing improves or the budget is spent.
    True if anything moved."""
    budget = _SWAP_BUDGET
    groups: dict[str | None, list[int]] = {}
    for rank, inst in enumerate(ranked):
        groups.setdefault(inst.closest, []).append(rank)

    def neighbours(rank: int) -> list[int]:
        parent = tree.parents[rank]
        return ([parent] if parent >= 0 else []) + list(tree.children[rank])

    def local_cost(ranks: tuple[int, ...]) -> tuple[int, ...]:
        edges = {(min(r, n), max(r, n)) for r in ranks for n in neighbours(r)}
        total = [0] * depth
        for x, y in edges:
            for i, c in enumerate(_edge_cost(ranked[x], ranked[y], depth)):
                total[i] += c
        return tuple(total)

    moved = False
    for _ in range(max_passes):
        improved = False
        for parent, child in tree.edges():
            a, b = ranked[parent], ranked[child]
            if a.network_nodes and a.closest == b.closest:
                continue
            # Bring the child under its parent's switch, or the parent under its child's.
            for here, there in ((child, parent), (parent, child)):
                target = ranked[there].closest
                if target is None:
                    continue
                for other in groups.get(target, []):
                    if other in (here, there):
                        continue
                    budget -= 1
                    if budget < 0:
                        return moved
                    pair = (here, other)
                    old = local_cost(pair)
                    ranked[here], ranked[other] = ranked[other], ranked[here]
                    if local_cost(pair) < old:
                        for rank in pair:
                            inst = ranked[rank]
                            group = groups[inst.closest]
                            group.remove(pair[0] if rank == pair[1] else pair[1])
                            group.append(rank)
                        improved = moved = True
                        break
                    ranked[here], ranked[other] = ranked[other], ranked[here]
                if ranked[parent].closest == ranked[child].closest:
                    break
        if not improved:
            break
    return moved


def propose_order(instances: Sequence[Instance], topo: str) -> Placement:
    """The best rank order found for `instances` under TBON `topo` (input order on a tie)."""
    if not instances:
        raise UserError("no instances to place")
    before = list(instances)
    tree = build_tree(topo, len(before))
    depth = _depth(before)
    counts_before = count_edges(tree, before, depth)
    best = (_score(counts_before, depth), before, "input order")
    known = [i for i in before if i.network_nodes]
    unknown = [i for i in before if not i.network_nodes]
    sequences = {
        "switch groups in input order": _grouped(known, 0, 0) + unknown,
        "big switch groups first": _grouped(known, 0, 1) + unknown,
        "small switch groups first": _grouped(known, 0, -1) + unknown,
    }
    for walk_name, walk in _walks(tree).items():
        slots = walk()
        for seq_name, sequence in sequences.items():
            ranked: list[Instance] = [before[0]] * tree.size
            for slot, inst in zip(slots, sequence, strict=True):
                ranked[slot] = inst
            score = _score(count_edges(tree, ranked, depth), depth)
            if score < best[0]:
                best = (score, ranked, f"{seq_name}, {walk_name}")
    _, chosen, strategy = best
    order = list(chosen)
    if depth and _improve_by_swaps(tree, order, depth):
        strategy = f"{strategy}, then swaps"
    counts_after = count_edges(tree, order, depth)
    if _score(counts_after, depth) > best[0]:  # the swaps only ever lower the score
        raise AssertionError("placement made the order worse")
    return Placement(
        tree=tree,
        before=before,
        order=order,
        counts_before=counts_before,
        counts_after=counts_after,
        strategy=strategy,
    )
