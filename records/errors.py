"""RecordsError: a tuning log that cannot be used as asked, named by its file."""
from __future__ import annotations


class RecordsError(Exception):
    """A log file that is not SQLite, is corrupt, was written by a newer autosched, or an
    import that cannot proceed. The message names the file (and line, for JSONL)."""
