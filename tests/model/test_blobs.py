"""What each blob holds: random (kary's) or zeros (flux-distribute's), chosen, rendered, recorded.

A zero blob is one distinct chunk to Flux's archive: the emulator here, like
flux-core, stores it once, and the archive line says so.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from experiments.cli import app
from experiments.formats.cell_layout import blob_of_path, cell_of_path, network_of_path
from experiments.model.render import archive_chunks, render_cell

MIB = 2**20
runner = CliRunner()


def _commands(blob: str) -> str:
    script = render_cell(4, "kary:2", [3 * MIB], ["all"], "c", blob=blob).entrypoint_sh
    return "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("#"))


def test_the_blob_is_made_as_asked_and_every_line_says_which() -> None:
    random, zeros = _commands("random"), _commands("zeros")
    assert "openssl enc -aes-128-ctr" in random and "/dev/zero >" not in random
    assert 'head -c "$bytes" /dev/zero >"$path"' in zeros and "openssl enc" not in zeros
    for kind, script in (("random", random), ("zeros", zeros)):
        assert f'\\"blob\\": \\"{kind}\\"' in script  # the cell's meta line and the archive's
        # A kept blob (nested layout) is kept per kind: a zeros cell never reuses random bytes.
        assert f'"${{KARY_BLOB_CACHE:-}}/blob-{kind}-$2"' in script
    # 3 MiB in Flux's 1 MiB chunks: the archive line's chunk count.
    assert "kary_archive_line 3M all 3 " in random


def test_chunks_follow_the_chunksize_knob() -> None:
    assert archive_chunks(10 * MIB, None) == 10
    assert archive_chunks(10 * MIB + 1, None) == 11
    assert archive_chunks(MIB, 256 * 1024) == 4
    assert archive_chunks(64 * MIB, 0) == 1  # --chunksize 0: one blob per file


def test_a_plan_of_both_kinds_keeps_them_apart_and_a_wrong_kind_is_one_line(
    tmp_path: Path,
) -> None:
    study = tmp_path / "study.yaml"
    study.write_text("nodes: 4\ntopo: [kary:1]\nmatrix:\n  blob: [random, zeros]\nsizes: [4M]\n")
    result = runner.invoke(app, ["plan", str(study), "--backend", "local", "--json"])
    assert result.exit_code == 0, result.output
    cells = [c["id"] for c in json.loads(result.stdout)["cells"]]
    assert cells == ["4/kary-1/0", "4/kary-1/blob-zeros/0"]
    parts = cells[1].split("/")
    assert cell_of_path(parts) == (4, "kary:1", 0)
    assert blob_of_path(parts) == "zeros" and network_of_path(parts) is None
    assert blob_of_path(cells[0].split("/")) is None
    bad = runner.invoke(app, ["plan", "--exact-nodes", "4", "--topo", "kary:1", "--blob", "ones"])
    assert bad.exit_code == 2 and bad.stderr.count("\n") == 1
    assert "unknown --blob 'ones'" in bad.stderr


def test_the_emulator_stores_a_zero_blob_once_and_the_record_says_so(tmp_path: Path) -> None:
    """Both kinds run, one sweep; the archive line counts what the store gained."""
    kind = "zeros"
    study = tmp_path / "study.yaml"
    study.write_text(
        "nodes: 3\ntopo: [kary:1]\nmatrix:\n  blob: [random, zeros]\nsizes: [4M]\n"
        "strategies: [all]\nbackend: local\n"
    )
    raw = tmp_path / "raw"
    result = runner.invoke(app, ["run", str(study), "--data-dir", str(raw)])
    assert result.exit_code == 0, result.output
    added = {}
    for blob, cell in (("random", raw / "3/kary-1/0"), (kind, raw / f"3/kary-1/blob-{kind}/0")):
        record = json.loads((cell / "run.json").read_text())
        assert record["blob"] == record["identity"]["blob"] == blob
        lines = [
            json.loads(line[5:])
            for line in (cell / "topology-experiment.out").read_text().splitlines()
            if line.startswith("KARY {")
        ]
        assert next(x for x in lines if x.get("meta") == "cell")["blob"] == blob
        (archive,) = [x for x in lines if x.get("meta") == "archive"]
        assert (archive["blob"], archive["chunks"]) == (blob, 4)
        added[blob] = archive["store_objects_added"]
    # Four distinct 1 MiB chunks against one chunk four times.
    assert added == {"random": 4, kind: 1}
