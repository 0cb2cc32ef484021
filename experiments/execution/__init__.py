"""Running a plan: the runner, its ledger of what is done, each cell's outcome and
progress on screen.  Backends do the work; this package decides what to run and records it."""

__all__ = ["ledger", "outcome", "progress", "runner", "summary"]
