"""`kary report`: one self-contained HTML page over one or more parsed directories.

`analysis` (pandas, matplotlib) is imported inside the command, so that every
other kary command starts without paying for it.
"""

from __future__ import annotations

from pathlib import Path

import typer

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command("report", short_help="One offline HTML report from a parsed tree.")
    def report_command(
        parsed: list[Path] = typer.Argument(
            ..., help="Parsed directories (kary parse --out); the first is the baseline."
        ),
        out: Path = typer.Option(
            Path("report.html"),
            "--out",
            help="HTML file to write (an existing folder gets report.html inside it).",
        ),
    ) -> None:
        """Write one self-contained HTML report that opens offline; several dirs are compared.

        Example:

        \b
            kary report data/parsed --out report.html
            kary report data/parsed-before data/parsed --out compare.html
        """
        from analysis import report

        if out.is_dir():
            out = out / "report.html"
        written = report(parsed, out)
        typer.echo(f"wrote {written} ({written.stat().st_size / 1e6:.1f} MB)")
