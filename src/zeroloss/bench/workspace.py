"""A private directory for one bench session: sockets, logs, unique DPDK file prefixes."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


class Workspace:
    """Holds the sockets and logs of one session; sockets are removed on close, logs kept on request."""

    def __init__(self, root: Path | None = None, keep_logs: bool = False):
        base = Path(os.environ.get("ZEROLOSS_RUNDIR", "/run/zeroloss"))
        base.mkdir(parents=True, exist_ok=True)
        self.root = root or Path(tempfile.mkdtemp(prefix="s", dir=base))
        self.root.mkdir(parents=True, exist_ok=True)
        self.keep_logs = keep_logs
        self.tag = f"zl{os.getpid()}{self.root.name}"

    def sock(self, name: str) -> Path:
        return self.root / f"{name}.sock"

    def log(self, name: str) -> Path:
        return self.root / f"{name}.log"

    def prefix(self, name: str) -> str:
        """A DPDK --file-prefix unique to this session and process role."""
        return f"{self.tag}{name}"

    def close(self) -> None:
        if self.keep_logs:
            for p in self.root.glob("*.sock"):
                p.unlink(missing_ok=True)
            if not any(self.root.iterdir()):  # an error before any log was written: nothing to keep
                self.root.rmdir()
        else:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is not None and exc_type is not KeyboardInterrupt:
            self.keep_logs = True  # an error message points at these logs
        self.close()
