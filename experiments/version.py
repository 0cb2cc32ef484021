"""kary's version, recorded in every run.json and parsed tree."""

__version__ = "0.1.0"
