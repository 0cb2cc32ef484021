"""Every on-disk format kary writes or reads, each owned by one module here.

kary_line: the `KARY {json}` step line the entrypoint prints.
run_record: run.json, a cell's record (one reader that checks its version, one writer).
cell_layout: cell ids, the raw tree's directory names and size labels.
events: event names per strategy and the order topologies sort in.
labels: the owner / lease labels kary puts on what it creates.
nested_frame: the KARY-NESTED lines that frame each cell in a nested driver's log.
parsed: the parsed directory (its files, columns, version, writer and loader).
"""

__all__ = ["cell_layout", "events", "kary_line", "labels", "nested_frame", "parsed", "run_record"]
