"""The bytes a cell adds to rank 0's log in the nested layout, by nodes, sizes and strategies.

    .venv/bin/python benchmarks/cell_log_bytes.py \
        --json benchmarks/results/cell-log-bytes-emulator.json   # runs cells (minutes)
    .venv/bin/python benchmarks/cell_log_bytes.py \
        --from-json benchmarks/results/cell-log-bytes-emulator.json   # the tables again

The kubelet rotates a container's log when its file passes
`containerLogMaxSize` (10 MiB by default) and the API then serves the new file
only (issue 44, item 1), so a nested group's MiniCluster, whose rank 0 prints
every cell, must know what a cell prints.  Each sample is a real `kary run
--backend local` of one cell (the emulator: kary's templates print the same
lines whatever runs them; sizes 1M, which prints as many lines as 10G), and
the bytes counted are those of its log up to `SCRIPT entrypoint` (a nested
cell does not print its script), plus the driver's three frames, plus what the
kubelet's CRI log file adds to each line (`<RFC 3339 nano timestamp> stdout F
`, 40 bytes: the rotation counts the file on disk) and the `\r` the operator's
TTY puts before each line's end (1 byte).  The bytes a line costs are applied
when the samples are read (`log_bytes`), so kept samples re-fit with them.

The samples fit `bytes = a + b*N + S*(c + T*(d + e*N))` (distribute: N nodes,
S sizes, T strategies) and `bytes = a + b*N + S*(c + e*N)` (ping) exactly
(as many samples as unknowns), and one more sample checks the fit.  Printed:
the samples, the fit, and what a cell and a nested group of flux-distribute's 30-node
study (16 topologies, 1-10 GB: 10 sizes, strategy all) and of 256 nodes print.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from experiments.formats.nested_frame import format_frame  # noqa: E402
from experiments.model.log_budget import (  # noqa: E402
    CRI_LINE_BYTES,
    DEFAULT_ROTATE_BYTES,
    TTY_LINE_BYTES,
    group_budget,
)

# What the log file holds beyond each line's text and `\n`.
LINE_BYTES = CRI_LINE_BYTES + TTY_LINE_BYTES

# (experiment, nodes, sizes, strategies): as many as each fit has unknowns, then checks.
DISTRIBUTE = [(4, 1, 1), (8, 1, 1), (4, 2, 1), (4, 2, 3), (8, 2, 3)]
DISTRIBUTE_CHECK = [(12, 2, 3)]
PING = [(4, 1), (8, 1), (4, 2), (8, 2)]
STRATEGIES = ["all", "leaves", "middle"]
SIZES = ["1M", "2M"]


def _frames_bytes() -> int:
    """The driver's three frames of one cell, as printed (a long cell id, a job id)."""
    cell = "256/kary:16/12"
    frames = [
        format_frame("begin", cell, seq=1000),
        format_frame("job", cell, seq=1001, jobid="f2AbCdEfGhJk", flux_version="0.88.0"),
        format_frame(
            "end", cell, seq=1002, jobid="f2AbCdEfGhJk", rc=0, result="COMPLETED",
            hosts="flux-sample-n256-0123abcd-[0-255]", seconds=1234.567, lines=12345,
        ),
    ]  # fmt: skip
    return sum(len(f) + 1 + LINE_BYTES for f in frames)


def _run_cell(experiment: str, nodes: int, sizes: int, strategies: int, scratch: Path) -> dict:
    data = scratch / f"{experiment}-{nodes}-{sizes}-{strategies}"
    argv = [
        str(Path(sys.executable).with_name("kary")), "run", "--backend", "local",
        "--exact-nodes", str(nodes), "--topo", "kary:2", "--sizes", ",".join(SIZES[:sizes]),
        "--experiment", experiment, "--no-verify", "--no-smoke", "--yes",
        "--data-dir", str(data),
    ]  # fmt: skip
    if experiment == "distribute":
        argv += ["--strategy", ",".join(STRATEGIES[:strategies])]
    done = subprocess.run(argv, capture_output=True, text=True)
    logs = list(data.rglob("topology-experiment.out"))
    if done.returncode != 0 or len(logs) != 1:
        raise SystemExit(f"kary run failed: {done.stdout[-800:]}{done.stderr[-800:]}")
    text = logs[0].read_text()
    text = text[: text.index("SCRIPT entrypoint")] + "SCRIPT entrypoint\n"
    lines = text.count("\n")
    return {
        "experiment": experiment, "nodes": nodes, "sizes": sizes, "strategies": strategies,
        "bytes": len(text.encode()), "lines": lines,
        "log_bytes": log_bytes(len(text.encode()), lines),
    }  # fmt: skip


def log_bytes(text_bytes: int, lines: int) -> int:
    """A cell's bytes in the log file: its text, each line's CRI prefix and TTY `\r`,
    and the driver's frames."""
    return text_bytes + lines * LINE_BYTES + _frames_bytes()


def _design(experiment: str, nodes: int, sizes: int, strategies: int) -> list[float]:
    if experiment == "ping":
        return [1, nodes, sizes, sizes * nodes]
    return [1, nodes, sizes, sizes * strategies, sizes * strategies * nodes]


def fit(samples: list[dict], experiment: str) -> list[float]:
    """The model's coefficients from the samples of `experiment` that are not checks."""
    rows = [s for s in samples if s["experiment"] == experiment and not s.get("check")]
    matrix = np.array([_design(experiment, s["nodes"], s["sizes"], s["strategies"]) for s in rows])
    target = np.array([log_bytes(s["bytes"], s["lines"]) for s in rows], dtype=float)
    coef, *_ = np.linalg.lstsq(matrix, target, rcond=None)
    return [float(c) for c in coef]


def predict(coef: list[float], experiment: str, nodes: int, sizes: int, strategies: int) -> float:
    return float(np.dot(coef, _design(experiment, nodes, sizes, strategies)))


def report(samples: list[dict]) -> str:
    out = [
        f"bytes one cell adds to rank 0's log file (CRI format: +{CRI_LINE_BYTES} bytes a "
        f"line, the TTY's \\r +{TTY_LINE_BYTES}, + the driver's frames); emulator, kary:2, "
        "1M/2M, no verify",
        "",
        "| experiment | nodes | sizes | strategies | lines | log bytes | fit | check |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    coefs = {e: fit(samples, e) for e in ("distribute", "ping")}
    for s in samples:
        e = s["experiment"]
        guess = predict(coefs[e], e, s["nodes"], s["sizes"], s["strategies"])
        out.append(
            f"| {e} | {s['nodes']} | {s['sizes']} | {s['strategies']} | {s['lines']} | "
            f"{log_bytes(s['bytes'], s['lines'])} | {guess:.0f} | "
            f"{'yes' if s.get('check') else 'no'} |"
        )
    d, p = coefs["distribute"], coefs["ping"]
    out += [
        "",
        "distribute: bytes = {:.1f} + {:.2f} N + S ({:.1f} + T ({:.1f} + {:.2f} N))".format(*d),
        "ping:       bytes = {:.1f} + {:.2f} N + S ({:.1f} + {:.2f} N)".format(*p),
        "",
        f"| cell | bytes a cell | cells under {DEFAULT_ROTATE_BYTES >> 20} MiB | "
        f"cells a group takes ({group_budget() / 2**20:g} MiB) |",
        "| --- | --- | --- | --- |",
    ]
    for label, e, n, sizes, t in [
        ("seed study: 30 nodes, 10 sizes, all", "distribute", 30, 10, 1),
        ("30 nodes, 10 sizes, all+leaves+middle", "distribute", 30, 10, 3),
        ("256 nodes, 10 sizes, all", "distribute", 256, 10, 1),
        ("256 nodes, 10 sizes, all+leaves+middle", "distribute", 256, 10, 3),
        ("ping, 30 nodes, 10 sizes", "ping", 30, 10, 1),
        ("ping, 256 nodes, 10 sizes", "ping", 256, 10, 1),
    ]:
        each = predict(coefs[e], e, n, sizes, t)
        out.append(
            f"| {label} | {each / 1024:.1f} KiB | {int(DEFAULT_ROTATE_BYTES // each)} | "
            f"{int(group_budget() // each)} |"
        )
    seed = 16 * predict(d, "distribute", 30, 10, 1)
    out += [
        "",
        f"flux-distribute's 30-node nested group (16 cells): {seed / 2**20:.2f} MiB "
        f"of {DEFAULT_ROTATE_BYTES / 2**20:.0f} MiB",
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="write the samples here")
    parser.add_argument("--from-json", type=Path, help="print the tables of saved samples")
    args = parser.parse_args(argv)
    if args.from_json:
        samples = json.loads(args.from_json.read_text())["samples"]
    else:
        samples = []
        with tempfile.TemporaryDirectory(prefix="kary-log-bytes-") as scratch:
            for grid, check in ((DISTRIBUTE, False), (DISTRIBUTE_CHECK, True)):
                for nodes, sizes, strategies in grid:
                    sample = _run_cell("distribute", nodes, sizes, strategies, Path(scratch))
                    samples.append({**sample, "check": check})
                    print(sample, file=sys.stderr, flush=True)
            for nodes, sizes in PING:
                sample = _run_cell("ping", nodes, sizes, 1, Path(scratch))
                samples.append({**sample, "check": False})
                print(sample, file=sys.stderr, flush=True)
        if args.json:
            args.json.write_text(json.dumps({"samples": samples}, indent=1) + "\n")
    print(report(samples))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
