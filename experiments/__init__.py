"""kary: plan and run k-ary data-distribution benchmarks of the Flux Framework."""

__version__ = "0.1.0"
