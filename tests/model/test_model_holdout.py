"""The time model on real flux-core sweeps kept in the repository: N <= 16 predicts 24 and 30.

benchmarks/results/model-sweeps/ holds two passes of benchmarks/model_sweeps.py
(N 4-30, kary:1/2/4/8 and flat, 16M+64M, 2 iterations) run on a shared 2-core
machine at load averages of 4-26: the tables only, no timing runs here.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import ModuleType

import pytest
from benchmark_scripts import load_benchmark

from experiments.estimate.history import Sweep, load_sweep
from experiments.estimate.model_check import check_sweeps, predict_sweep

STORED = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "model-sweeps"
# Passes 1 and 2; pass-3 is the protocol's predicted set (benchmarks/model_holdout_protocol.json).
SWEEPS = sorted(STORED.glob("pass-[12]/parsed-*"))


def _nodes(folder: Path) -> int:
    return int(folder.name.removeprefix("parsed-"))


@pytest.fixture(scope="module")
def sweeps() -> dict[Path, Sweep]:
    assert len(SWEEPS) == 12, f"expected two passes of six sweeps in {STORED}"
    return {folder: load_sweep(folder) for folder in SWEEPS}


def test_24_and_30_nodes_fall_inside_a_prediction_from_16_or_fewer(
    sweeps: dict[Path, Sweep],
) -> None:
    history = [s for f, s in sweeps.items() if _nodes(f) <= 16]
    held = {f: s for f, s in sweeps.items() if _nodes(f) > 16}
    assert len(held) == 4
    for folder, sweep in held.items():
        row = predict_sweep(sweep, history)
        assert row.compared == "wall"
        assert row.inside, (folder, row.low, row.actual, row.high)
        assert row.extrapolated[0].startswith(f"{_nodes(folder)} nodes, history has 4-16: ")
        assert abs(row.error) < 0.25


def test_leaving_each_local_sweep_out_keeps_most_inside_narrow_intervals(
    sweeps: dict[Path, Sweep],
) -> None:
    rows = check_sweeps(list(sweeps.values()))
    inside = sum(r.inside for r in rows)
    assert inside >= 0.75 * len(rows)
    assert all(r.width < 2 for r in rows if not r.extrapolated)


def _script() -> ModuleType:
    return load_benchmark("model_holdout")


def test_the_protocol_prints_every_number_the_readme_cites_and_what_was_tuned_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    protocol = STORED.parents[1] / "model_holdout_protocol.json"
    assert _script().main(["--protocol", str(protocol)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == (
        "tuned on: the interval rule was tuned on pass-1 and pass-2 (pass-1: N = 4, 8, 12, 16, "
        "24, 30; pass-2: N = 4, 8, 12, 16, 24, 30), before this protocol; it fits N = 4, 8, 12, "
        "16 of them and predicts N = 20, 24, 30, so N = 24, 30 were seen in tuning (other runs "
        "of them)"
    )
    rows = {line.split()[0]: line.split() for line in out if line.startswith("pass-3/")}
    # sweep, cells, predicted, (low, -, high), actual, error, inside, width
    assert [rows["pass-3/parsed-20"][i] for i in (2, 7, 9, 10, 11)] == [
        "226", "187", "+21%", "NO", "x1.43",
    ]  # fmt: skip
    assert [rows["pass-3/parsed-24"][i] for i in (2, 7, 9)] == ["265", "217", "+22%"]
    assert [rows["pass-3/parsed-30"][i] for i in (2, 7, 9)] == ["325", "261", "+25%"]
    assert "error (predicted / actual - 1): +21% to +25% over 3 sweeps" in out
    assert out[-1] == "2 of 3 predicted sweeps inside their 80% interval: PASS"


def test_a_protocol_on_untuned_passes_says_so_and_a_tuned_one_names_what_it_saw(
    tmp_path: Path,
) -> None:
    for folder in ("pass-1/parsed-4", "pass-1/parsed-24", "pass-3/parsed-24", "other/parsed-8"):
        (tmp_path / folder).mkdir(parents=True)
    tuned_line = _script().tuned_line
    seen = tuned_line([tmp_path / "pass-1/parsed-4"], [tmp_path / "pass-3/parsed-24"])
    assert seen.endswith(
        "(pass-1: N = 4, 24), before this protocol; it fits N = 4 of them and predicts "
        "N = 24, so N = 24 were seen in tuning (other runs of them)"
    )
    unseen = tuned_line([tmp_path / "other/parsed-8"], [tmp_path / "pass-3/parsed-24"])
    assert unseen == (
        "tuned on: the interval rule was tuned on pass-1 and pass-2, which this protocol does "
        "not use"
    )


def test_the_protocol_says_what_made_each_sweep_it_fits_and_predicts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _script().main(["--protocol", str(STORED.parents[1] / "model_holdout_protocol.json")])
    out = capsys.readouterr().out.splitlines()
    made = out[out.index("made by, per sweep (runs.csv):") + 1 :][:11]
    assert made[0] == (
        "  pass-1/parsed-4: template ddb300cbab2b6989, kary commit not recorded, "
        "2026-11-23T13:02:12+00:00 to 2026-11-23T13:02:50+00:00"
    )
    assert made[-1] == (
        "  pass-3/parsed-30: template a727ad31466fe48a, kary commit not recorded, "
        "2026-11-25T20:41:23+00:00 to 2026-11-25T20:45:44+00:00"
    )
    # Fitted and predicted sweeps of different templates: said, not refused, none mixed.
    assert not [line for line in out if line.startswith("mixed")]


def test_a_sweep_of_several_templates_is_named(tmp_path: Path) -> None:
    sweep = tmp_path / "pass-9" / "parsed-20"
    shutil.copytree(STORED / "pass-3" / "parsed-20", sweep)
    runs = (sweep / "runs.csv").read_text().splitlines()
    runs[1] = runs[1].replace("a727ad31466fe48a", "34a26727090491be")
    (sweep / "runs.csv").write_text("\n".join(runs) + "\n")
    lines = _script().made_lines([("pass-9/parsed-20", sweep)])
    assert lines[1].startswith(
        "  pass-9/parsed-20: template 34a26727090491be, a727ad31466fe48a, kary commit not "
        "recorded, "
    )
    assert lines[2:] == [
        "mixed templates: pass-9/parsed-20 (2): runs of different templates judged together"
    ]
