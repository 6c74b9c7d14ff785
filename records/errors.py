"""RecordsError: a tuning log that cannot be used as asked, named by its file; and
`named_by_file`, which turns SQLite's own errors into one."""
from __future__ import annotations

import functools
import sqlite3


class RecordsError(Exception):
    """A log file that is not SQLite, is corrupt, was written by a newer autosched, or an
    import that cannot proceed. The message names the file (and line, for JSONL)."""


def named_by_file(method):
    """Decorator of the methods of an object with a `path` (a Database): SQLite's own
    errors (a corrupt page, a file that is not a database, a lock held too long) become
    a RecordsError naming the file and saying what to do."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as err:
            raise RecordsError(f"{self.path}: {_explain(err)}") from None
    return wrapper


def _explain(err: sqlite3.DatabaseError) -> str:
    text = str(err)
    if "malformed" in text or "not a database" in text or "corrupt" in text:
        return f"the file is corrupt or truncated ({text}); restore it from a backup or export"
    if "locked" in text:
        return (f"{text}: another process kept writing to it for longer than the timeout "
                f"this Database was opened with")
    return text
