"""The parsed format's loader gives each events row its cell's runs.csv value."""

from __future__ import annotations

import numpy as np
import pandas as pd

from experiments.formats.cell_layout import LOG_NAME
from experiments.formats.parsed.load import cell_values


def test_each_event_gets_its_cells_value_and_an_unknown_cell_none() -> None:
    runs = pd.DataFrame(
        {
            "source": ["8/kary-2/0", "", "8/kary-3/0"],
            "place": ["box", "test-instance", np.nan],  # a cell that did not record it
        }
    )
    events = pd.DataFrame(
        {
            "source": [
                f"8/kary-3/0/{LOG_NAME}",
                f"8/kary-2/0/{LOG_NAME}",
                LOG_NAME,  # the cell at the tree's root
                f"9/kary-2/0/{LOG_NAME}",  # a log runs.csv does not name
                np.nan,
                f"8/kary-2/0/{LOG_NAME}",
            ]
        },
        dtype="str",
    )
    values = cell_values(events, runs, "place")
    assert values.tolist() == ["", "box", "test-instance", "", "", "box"]
    assert all(isinstance(v, str) for v in values)
    # A column runs.csv does not have: "" for every row.
    assert cell_values(events, runs, "links").tolist() == [""] * len(events)
