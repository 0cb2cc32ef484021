"""`kary report`: one self-contained HTML page per sweep (or a comparison of sweeps).

Everything is inline: styles, SVG drawings, plots as data: URIs. Nothing is
loaded from the network, so the page opens from disk, offline, years later.

Public surface: `build_report(parsed_dirs) -> str` and
`write_report(parsed_dirs, out) -> Path`. With several directories, the first
is the baseline and each other one is compared with it (`kary compare`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from importlib.resources import files
from pathlib import Path
from typing import Any

import jinja2

from analysis.compare import compare_parsed
from analysis.page.baselines import direct_table, ping_tables
from analysis.page.facts import Facts, collect_facts
from analysis.page.inline_plots import collect_plots
from analysis.page.race import race_view
from analysis.page.results import number_or_none, strategy_samples
from analysis.page.view import design_cards, seconds, strategy_views, test_rule
from analysis.page.where import where_line
from analysis.tables.parsed_dir import Parsed, load_parsed
from analysis.tables.stats import ALPHA
from experiments.errors import UserError
from experiments.files import write_atomic
from experiments.formats.cell_layout import size_text
from experiments.version import __version__

__all__ = ["REPORT_NAME", "build_report", "write_report"]

REPORT_NAME = "report.html"
_FACTOR = 1.10
_MARKS = {
    "+": ("slower", "bad"),
    "!": ("newly failing", "bad"),
    "-": ("faster", "good"),
    "~": ("within noise", "muted"),
    "?": ("unsure: too few runs", "muted"),
    "": ("within the factor", "muted"),
}


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(_template_source),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["seconds"] = seconds
    env.filters["size"] = size_text
    return env


def _template_source(name: str) -> str:
    # importlib.resources finds the template in a clone and in an installed wheel.
    return (files("analysis.page") / "templates" / name).read_text(encoding="utf-8")


def _duration(total: float | None) -> str:
    if total is None:
        return "not recorded"
    if total < 120:
        return f"{total:.1f} s"
    minutes = total / 60
    if minutes < 120:
        return f"{minutes:.1f} min"
    return f"{minutes / 60:.1f} h"


def _names(dirs: Sequence[Path]) -> list[str]:
    """Short distinct names: the folder name, with parents added until they differ."""
    resolved = [d.resolve() for d in dirs]
    for depth in range(1, 6):
        names = ["/".join(p.parts[-depth:]) for p in resolved]
        if len(set(names)) == len(names):
            return names
    return [str(p) for p in resolved]


def _card(label: str, value: str, detail: str, tone: str = "") -> dict[str, str]:
    return {"label": label, "value": value, "detail": detail, "tone": tone}


def _overview(facts: Facts) -> list[dict[str, str]]:
    """The overview as cards: a big value, a small detail, a tone for colour."""
    outcomes = facts.outcomes
    bad = sum(n for state, n in outcomes.items() if state != "succeeded")
    cells_detail = f"{outcomes.get('succeeded', 0)} succeeded"
    if bad:
        cells_detail += ", " + ", ".join(
            f"{n} {state}" for state, n in sorted(outcomes.items()) if state != "succeeded"
        )
    low, high = facts.iterations
    node_counts = sorted({n for n, _ in facts.designs})
    topologies = list(dict.fromkeys(t for _, t in facts.designs))
    measured_detail = "sum of timed steps"
    if facts.wall_seconds:
        measured_detail += f"; cells' wall time {_duration(facts.wall_seconds)}"
    cost_value, _, cost_detail = (facts.cost or "").partition(":")
    if not facts.cost:
        cost_value, cost_detail = "unknown", "no priced instance type in run.json"
    return [
        _card("cells", str(facts.cells), cells_detail, "bad" if bad else "good"),
        _card(
            "failed steps",
            str(facts.steps_failed),
            f"of {facts.steps:,} timed steps"
            + (f"; {facts.steps_void:,} void (a precondition failed)" if facts.steps_void else ""),
            "bad" if facts.steps_failed or facts.steps_void else "good",
        ),
        _card("iterations", str(low) if low == high else f"{low}–{high}", "per design"),
        _card(
            "designs",
            str(len(facts.designs)),
            f"{_span(node_counts)} nodes · {', '.join(topologies)}",
        ),
        _card(
            "sizes",
            ", ".join(facts.sizes) or "—",
            "strategies " + (", ".join(facts.strategies) or "—"),
        ),
        _card("measured time", _duration(facts.measured_seconds), measured_detail),
        _card("where", ", ".join(facts.sources) or "—", _dates(facts)),
        _card("cost", cost_value, cost_detail.strip()),
    ]


def _span(numbers: list[int]) -> str:
    if not numbers:
        return "—"
    if numbers == list(range(numbers[0], numbers[-1] + 1)) and len(numbers) > 2:
        return f"{numbers[0]}–{numbers[-1]}"
    return ", ".join(map(str, numbers))


def _dates(facts: Facts) -> str:
    if facts.started and facts.finished:
        return f"{facts.started} → {facts.finished}"
    if facts.parsed_without_record_facts:
        return "dates not recorded (parsed by an older kary)"
    if facts.records_found == 0:
        return "dates not recorded (no run.json)"
    return "dates not recorded"


def _dataset(index: int, name: str, path: Path, parsed: Parsed) -> dict[str, Any]:
    """Everything the page shows of one directory but its plots (see `_add_plots`)."""
    facts = collect_facts(parsed)
    samples = strategy_samples(parsed.events)  # the verdicts' and direct's table
    return {
        "name": name,
        "path": str(path),
        "anchor": f"set{index}",
        "facts": facts,
        "overview": _overview(facts),
        "where": [where_line(place) for place in facts.places] + facts.capacity_notes,
        "strategies": strategy_views(parsed, samples),
        "direct": direct_table(parsed.events, samples),
        "pings": ping_tables(parsed.ping),
        "designs": design_cards(parsed, facts.designs),
        "node_counts": sorted({n for n, _ in facts.designs}),
        "race": race_view(path),
    }


def _add_plots(dataset: dict[str, Any], path: Path, parsed: Parsed) -> None:
    plots = collect_plots(parsed, path)
    dataset["main_plots"] = [p for p in plots if p.main]
    dataset["other_plots"] = [p for p in plots if not p.main]


def _comparison(base: str, other: str, before: Parsed, after: Parsed) -> dict[str, Any]:
    try:
        # The page shows a mixed comparison, labelled, rather than none at all.
        comparison = compare_parsed(before, after, _FACTOR, allow_mixed=True)
    except UserError as err:  # nothing in common: the page says why instead
        return {"base": base, "other": other, "refused": str(err)}
    rows = []
    for row in comparison.table.itertuples(index=False):
        word, tone = _MARKS.get(str(row.mark), ("", "muted"))
        low, high = number_or_none(row.ratio_low), number_or_none(row.ratio_high)
        coverage, ratio = number_or_none(row.coverage), number_or_none(row.ratio)
        interval = ""
        if low is not None and high is not None and coverage is not None:
            interval = f"{low:.2f}–{high:.2f} ({coverage:.0%})"
        rows.append(
            {
                "mark": str(row.mark),
                "word": word,
                "tone": tone,
                "event": row.event,
                "topo": row.topo,
                "nodes": row.nodes,
                "size": size_text(row.size_label),
                "before": _side(row.median_before, row.failed_before),
                "after": _side(row.median_after, row.failed_after),
                "ratio": "" if ratio is None else f"{ratio:.2f}",
                "interval": interval or "too few runs",
                "setting": _setting(str(row.setting_before), str(row.setting_after)),
                "distribute": str(row.event).startswith("distribute-"),
            }
        )
    counts = {mark: sum(1 for r in rows if r["mark"] == mark) for mark in _MARKS}
    return {
        "base": base,
        "other": other,
        "rows": rows,
        "changed": [r for r in rows if r["mark"]],
        "counts": counts,
        "refused": "",
        "mixed": comparison.mixed,
        "settings": any(r["setting"] for r in rows),
        "only_before": comparison.only_before,
        "only_after": comparison.only_after,
        "factor": _FACTOR,
    }


def _setting(before: str, after: str) -> str:
    """The setting a row compares; `before → after` where it differs (a mixed row)."""
    return before if before == after else f"{before} → {after}"


def _side(median: object, failed: object) -> str:
    value = number_or_none(median)
    text = "failed" if value is None else seconds(value)
    return f"{text} ({failed} failed)" if failed else text


def build_report(
    parsed_dirs: Sequence[Path], plots_drawn: Callable[[], object] | None = None
) -> str:
    """The HTML page for one or more parsed directories (UserError if one is not parsed).

    `plots_drawn`, when given, is called once everything but the plots is ready
    and returns when they are: `kary parse` prepares the page while its plots
    are still being drawn.
    """
    if not parsed_dirs:
        raise UserError("give at least one parsed directory (made by kary parse)")
    dirs = [Path(d) for d in parsed_dirs]
    for d in dirs:
        if not d.is_dir():
            raise UserError(f"{d}: no such directory (give a directory made by kary parse)")
    loaded = [load_parsed(d) for d in dirs]
    names = _names(dirs)
    datasets = [
        _dataset(i, n, d, p) for i, (n, d, p) in enumerate(zip(names, dirs, loaded, strict=True))
    ]
    comparisons = [
        _comparison(names[0], names[i], loaded[0], loaded[i]) for i in range(1, len(dirs))
    ]
    if plots_drawn is not None:
        plots_drawn()
    for dataset, path, parsed in zip(datasets, dirs, loaded, strict=True):
        _add_plots(dataset, path, parsed)
    template = _environment().get_template("report.html.j2")
    return template.render(
        title=" vs ".join(names),
        datasets=datasets,
        comparisons=comparisons,
        generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        version=__version__,
        test_rule=test_rule(),
        alpha=f"{ALPHA:g}",
    )


def write_report(
    parsed_dirs: Sequence[Path], out: Path, plots_drawn: Callable[[], object] | None = None
) -> Path:
    """Write the report for parsed_dirs to out (atomically); returns out."""
    html = build_report(parsed_dirs, plots_drawn)
    write_atomic(Path(out), html)
    return Path(out)
