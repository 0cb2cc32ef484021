"""`kary race`: which fan-out is fastest, decided by racing the topologies (F-race).

A few lines over experiments.race (plan_race, run_race); the sweep flags are
`run`'s (sweep_options.py), less --iters (a race runs blocks), plus the race's
rules.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from experiments.cli import sweep_options as o
from experiments.execution.progress import RichReporter, SilentReporter

D = o.DEFAULT


def race(
    ctx: typer.Context, sweep_file: o.SweepFile = None,
    designs: o.Designs = D.designs, designs_old_name: o.DesignsOldName = None,
    exact_nodes: o.ExactNodes = None,
    min_size_gb: o.MinSize = None, max_size_gb: o.MaxSize = None, sizes: o.Sizes = None,
    topos: o.Topo = None, strategies: o.Strategy = None, blob: o.Blob = D.blob,
    data_dir: o.DataDir = D.data_dir, name: o.Name = D.name, backend: o.Backend = None,
    cluster: o.Cluster = None, history: o.History = None, template: o.Template = None,
    image: o.Image = D.image, flux_view: o.FluxView = None, verify: o.Verify = None,
    chunksize: o.Chunksize = None,
    mmap: o.Mmap = None, purge_target_size: o.PurgeTargetSize = None,
    seed: o.Seed = None, force: o.Force = False, up: o.Up = False, down: o.Down = False,
    link_bandwidth: o.LinkBandwidth = None, link_latency: o.LinkLatency = None,
    root_link_bandwidth: o.RootLinkBandwidth = None, place: o.Place = None,
    group_size: o.GroupSize = None, group_link_bandwidth: o.GroupLinkBandwidth = None,
    link_queue: o.LinkQueue = None,
    layout: o.Layout = None, allow_shared_nodes: o.AllowSharedNodes = False,
    pending_timeout: o.PendingTimeout = None, smoke: o.Smoke = D.smoke,
    max_cost: o.MaxCost = None, max_hours: o.MaxHours = None, as_json: o.Json = False,
    confidence: Annotated[float, typer.Option(
        "--confidence", help="How sure a drop, a winner or a tie must be.")] = 0.95,
    zone: Annotated[float, typer.Option(
        "--zone", help="Indifference zone: topologies closer than this fraction tie.")] = 0.05,
    first_test: Annotated[int, typer.Option(
        "--first-test", help="The first test comes after this many blocks (irace's is 5; "
        "kary's replays chose 3).")] = 3,
    max_blocks: Annotated[int, typer.Option(
        "--max-blocks", help="Budget: at most this many blocks (per size with --per-size).")] = 20,
    futility: Annotated[float, typer.Option(
        "--futility", help="Stop early, not separated, when a survivor's chance of being "
        "dropped or tied by --max-blocks falls below this; 0 spends the whole budget."
    )] = 0.05,
    per_size: Annotated[bool, typer.Option(
        "--per-size", help="A race for each size (their blocks interleaved), not one across "
        "the sizes.")] = False,
    allow_cpu_bound: Annotated[bool, typer.Option(
        "--allow-cpu-bound", help="Race box cells the cores bound (their time measures this "
        "machine as much as the links).")] = False,
    timeout: Annotated[float | None, typer.Option(
        "--timeout", help="Seconds per cell (default: 4x its predicted time, at least 300)."
    )] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Only show the race's plan: best, expected and worst case.")] = False,
    yes: Annotated[bool, typer.Option(
        "--yes", "-y", help="Start a billed race without asking.")] = False,
) -> None:  # fmt: skip
    """Decide which topology is fastest by racing them: drop the clearly slower after each block.

    Every surviving topology runs once per block, at one size (the smallest and
    largest first, then those between); at a few looks from block --first-test
    on, paired t-tests on log times drop those shown more than --zone slower than
    the leader, each claim at --confidence for the whole race (its error spent
    over the looks).  The race ends with one left, a tie within --zone, "the best
    differs by size", or not separated.  State is in
    DATA_DIR/race.json: Ctrl-C and the same command resume.  Exit 0 when
    decided, 1 when not, 130 when interrupted.

    Example:

    \b
        kary race --exact-nodes 16 --sizes 16M,32M,64M,128M --link-bandwidth 100Mbit
        kary race --exact-nodes 8 --topo kary:1,kary:2,kary:4 --sizes 64M --per-size
        kary race --cluster clusters/eks-30-spot.yaml --exact-nodes 30 --min-size 1 \\
            --max-size 10 --blob random --layout nested --dry-run
    """
    from experiments.race.rules import ACROSS, PER_SIZE, RaceRules
    from experiments.race.run import plan_race, run_race

    rules = RaceRules(confidence, zone, first_test, max_blocks, futility)
    sweep = o.sweep_from_flags(locals(), ctx)
    planned = plan_race(sweep, rules, PER_SIZE if per_size else ACROSS, max_cost, allow_cpu_bound)
    if dry_run:
        planned.check_cost(max_cost)  # refused before a plan whose cases it cannot hold
        if as_json:
            typer.echo(json.dumps(planned.to_json(), indent=2))
        else:
            typer.echo(planned.text(max_cost), nl=False)
        return
    if not as_json:
        typer.echo(planned.text(max_cost), nl=False, err=True)
    outcome = run_race(
        planned,
        yes=yes,
        timeout=timeout,
        max_cost=max_cost,
        max_hours=max_hours,
        reporter=SilentReporter() if as_json else RichReporter(),
        echo=lambda line: typer.echo(line, err=True),
    )
    if as_json:
        typer.echo(json.dumps(outcome.race.to_json(), indent=2))
    elif not outcome.interrupted:
        # The answer on stdout, progress on stderr: `kary race ... > answer.txt` keeps it.
        from experiments.race.answer import answer_text

        typer.echo(f"kary race: {answer_text(outcome.race)}")
    raise typer.Exit(outcome.exit_code)


def register(app: typer.Typer) -> None:
    app.command("race", short_help="Decide which fan-out is fastest, block by block.")(race)
