#!/usr/bin/env python3
"""Is a folder safe for root to run code from? Exit 0 if so; else one line naming the folder that is not, exit 1.

Safe: the folder and each folder above it belong to root and nobody else may write them, except a folder with
the sticky bit (such as /tmp), whose entries others may not rename or remove. Otherwise another user could change
or replace the code that root runs through /usr/local/bin/zeroloss. Standard library only: setup runs it before
the Python environment exists.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path


def unsafe_reason(path: Path) -> str | None:
    """Why root should not run code from path, or None when it may."""
    path = Path(os.path.realpath(path))
    chain = [*reversed(path.parents), path]
    for i, d in enumerate(chain):
        try:
            st = os.stat(d)
        except OSError as e:
            return f"{d}: {e.strerror}"
        if st.st_uid != 0:
            return f"{d} belongs to uid {st.st_uid}, who could change the code root runs"
        others_write = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        last = i == len(chain) - 1
        if others_write and (last or not st.st_mode & stat.S_ISVTX):
            return f"{d} is writable by other users (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def main(argv: list[str]) -> int:
    reason = unsafe_reason(Path(argv[1] if len(argv) > 1 else "."))
    if reason:
        print(reason)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
