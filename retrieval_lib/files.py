"""The one atomic write: reports, run files, the query cache, judgments and drafted files all save through it."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

__all__ = ["write_text_atomic"]


def write_text_atomic(path: Path, text: str, *, fsync: bool = True) -> Path:
    """Write ``text`` to ``path`` atomically: a temporary file in the same folder, then ``os.replace``.

    A reader sees the old file or the new one, never half of one. A failure at any step (disk full, a killed
    kernel, ``os.replace`` refused) leaves the previous file as it was and no temporary file behind. The file keeps
    its permission bits (a new one gets 0644). ``fsync``: flush the text to disk before the rename (a person's
    judgments); off for files a run rewrites anyway (reports, the query cache). Returns the path.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path
