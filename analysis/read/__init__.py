"""Reading a raw tree: which directories are cells, and what their files say.

Takes a raw tree (kary's run.json and KARY-line logs, flux-distribute's
logs); gives per cell a `CellResult` of steps, pings and problems (`cell`),
read by `walk` (finding cells), `log_text` (a log as clean text), `kary_log`
and `seed_log` (the two log formats), `verify` (a copy that failed its check is
a failure) and `records` (the small records they produce), with `workers` to
run independent reads in forked processes.  Never imports pandas or matplotlib:
a parse's workers start before either is loaded.
"""

__all__ = ["cell", "kary_log", "log_text", "records", "seed_log", "verify", "walk", "workers"]
