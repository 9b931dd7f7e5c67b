"""The SASS listing of `ncu -i REPORT --page source --print-source sass --csv`
(a report taken with --section SourceCounters), as the ncu-*.py scripts in
this folder read it."""
import csv


def read_listing(stream):
    """(header, body): the listing's column names, and one row per SASS line."""
    rows = list(csv.reader(stream))
    header_at = next(i for i, r in enumerate(rows) if "Source" in r and any("Sampling" in c for c in r))
    header = rows[header_at]
    return header, [r for r in rows[header_at + 1:] if len(r) == len(header)]
