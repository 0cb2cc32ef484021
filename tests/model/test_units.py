"""Units as people type them (model/units.py): sizes, bandwidths and latencies."""

from __future__ import annotations

import pytest

from experiments.errors import UserError
from experiments.formats.cell_layout import format_size
from experiments.model.units import parse_bandwidth, parse_latency, parse_size, parse_sizes


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("512M", 512 * 2**20),
        ("4G", 4 * 2**30),
        ("20G", 20 * 2**30),
        ("1GiB", 2**30),
        ("1.5G", 3 * 2**29),
        ("64k", 64 * 2**10),
        ("1T", 2**40),
        ("64MiB", 64 * 2**20),
        ("123B", 123),
    ],
)
def test_bare_and_iec_units_are_binary(text: str, size: int) -> None:
    assert parse_size(text) == size
    assert parse_size(format_size(size)) == size


@pytest.mark.parametrize(
    ("text", "size"),
    [("10GB", 10**10), ("2 GB", 2 * 10**9), ("512MB", 512 * 10**6), ("4KB", 4000), ("1TB", 10**12)],
)
def test_si_units_are_decimal_and_their_label_reads_back_the_same_bytes(
    text: str, size: int
) -> None:
    """Issue 60, item 7: `10GB`, `10G` and `10GiB` were all 10 x 2**30."""
    assert parse_size(text) == size
    assert parse_size(format_size(size)) == size
    assert parse_size("10G") == parse_size("10GiB") == 10 * 2**30 != parse_size("10GB")


@pytest.mark.parametrize("text", ["1", "G", "-1G", "1X", "1G;rm", "0M", "0.3K", "", "5iB"])
def test_bad_sizes_are_user_errors(text: str) -> None:
    with pytest.raises(UserError, match="size"):
        parse_size(text)


def test_size_lists_keep_order_and_refuse_repeats() -> None:
    assert parse_sizes("2G, 512M") == [2 * 2**30, 512 * 2**20]
    with pytest.raises(UserError, match="listed twice"):
        parse_sizes("1G,1024M")


@pytest.mark.parametrize(
    ("text", "bytes_per_s"),
    [("1Gbit", 125e6), ("100mbit", 12.5e6), ("50MBps", 50e6), ("8bit", 1.0), ("2.5gbit", 312.5e6)],
)
def test_bandwidth_units(text: str, bytes_per_s: float) -> None:
    assert parse_bandwidth(text) == pytest.approx(bytes_per_s)


@pytest.mark.parametrize(
    ("text", "bits", "bytes_"),
    [("50Mbps", "50Mbit", "50MBps"), ("1gbps", "1gbit", "1GBps"), ("8bps", "8bit", "8Bps")],
)
def test_a_bps_unit_with_a_small_b_is_refused_as_ambiguous(
    text: str, bits: str, bytes_: str
) -> None:
    # tc reads 50Mbps as 50 megabytes a second (400Mbit); a user typing it meant 50Mbit.
    with pytest.raises(UserError, match=f"ambiguous bandwidth '{text}'.*write {bits} .* {bytes_}"):
        parse_bandwidth(text)


@pytest.mark.parametrize(("text", "seconds"), [("200us", 2e-4), ("1ms", 1e-3), ("0.5s", 0.5)])
def test_latency_units(text: str, seconds: float) -> None:
    assert parse_latency(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["1G", "fast", "0mbit", "-1gbit", ""])
def test_bad_bandwidth_says_what_is_accepted(text: str) -> None:
    with pytest.raises(UserError, match="expected e.g. 1Gbit"):
        parse_bandwidth(text)


@pytest.mark.parametrize("text", ["5", "1 fortnight", "ms", "-1ms"])
def test_bad_latency_says_what_is_accepted(text: str) -> None:
    with pytest.raises(UserError, match="expected e.g. 200us, 1ms or 0.5s"):
        parse_latency(text)
