"""What a plan will cost: the time model (fitted from history, with an interval) and prices.

- `parameters`, `defaults`, `structure`, `time_model`: the model's terms, their
  stated defaults per backend and place, and a cell's predicted time;
- `history`, `fit`, `coverage`, `interval`: sweeps read from parsed
  directories, fitted per environment, and the 80% interval around a plan;
- `box_network`, `bottleneck`, `link_floor`: a box's network terms, whether a box
  cell measures its links or this machine's cores, and the links' floor (every
  shaped link, both directions) each distribution is held to;
- `layouts`: the same cells per layout (per-cell, nested, nested + --mmap);
- `prices`, `price_refresh`: the dated price catalog and its refresh; `bill`: the
  hourly bill's lines; `spot_prices`, `spot_refresh`: dated spot prices and their
  refresh from EC2's price history; `network_prices`: NAT gateways and public IPv4;
- `plan_estimate`: a plan's estimate from all of these; `model_check`: each
  parsed sweep predicted from the others.
"""

__all__ = [
    "bill",
    "bottleneck",
    "box_network",
    "coverage",
    "defaults",
    "fit",
    "history",
    "interval",
    "layouts",
    "link_floor",
    "model_check",
    "network_prices",
    "parameters",
    "plan_estimate",
    "price_refresh",
    "prices",
    "spot_prices",
    "spot_refresh",
    "structure",
    "time_model",
]
