"""The KARY line writer: what it writes, the reader reads back unchanged."""

from __future__ import annotations

import math

import pytest

from experiments.formats.kary_line import (
    format_kary_line,
    kary_records,
    meta_record,
    step_problem,
)

STEP = {"event": "distribute-all-nodes", "size": "64M", "size_bytes": 67108864}


def test_a_step_line_is_written_as_the_template_prints_it() -> None:
    line = format_kary_line({**STEP, "seconds": 1.23, "rc": 0})
    assert line == (
        'KARY {"event": "distribute-all-nodes", "size": "64M", "size_bytes": 67108864, '
        '"seconds": 1.230000, "rc": 0}'
    )


@pytest.mark.parametrize(
    "record",
    [
        {**STEP, "seconds": 0.000123, "rc": 0},
        {**STEP, "seconds": 2, "rc": 3, "error": 'tar: "x" gone'},
        {**STEP, "rc": 0},
        {"meta": "cold-cache", "size": "1M", "cached_blobs": {"1": 0, "2": 5}},
        {"meta": "done", "failed_steps": 0},
    ],
)
def test_what_is_written_reads_back(record: dict[str, object]) -> None:
    (back,) = list(kary_records(format_kary_line(record) + "\n"))
    assert back == record
    if "event" in record:
        assert (step_problem(record) is None) == (step_problem(back or {}) is None)


def test_a_time_that_is_no_number_is_written_as_json() -> None:
    assert format_kary_line({"seconds": None}) == 'KARY {"seconds": null}'
    assert format_kary_line({"seconds": math.inf}) == 'KARY {"seconds": Infinity}'
    assert format_kary_line({"seconds": True}) == 'KARY {"seconds": true}'


def test_a_meta_line_is_found_by_name_the_last_of_its_kind_winning() -> None:
    log = (
        'KARY {"meta": "cell", "cell": "4/kary-2/0"}\n'
        "KARY {damaged\n"
        'KARY {"event": "create-archive", "seconds": 1.0, "rc": 0}\n'
        'KARY {"meta": "done", "failed_steps": 1}\n'
        'KARY {"meta": "done", "failed_steps": 0}\n'
    )
    assert meta_record(log, "cell") == {"meta": "cell", "cell": "4/kary-2/0"}
    assert meta_record(log, "done") == {"meta": "done", "failed_steps": 0}
    assert meta_record(log, "cold-cache") is None
    assert meta_record("no kary lines here", "done") is None
