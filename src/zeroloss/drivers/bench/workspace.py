"""A private directory for one bench session: sockets, logs, unique DPDK file prefixes, and the bench lock."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from zeroloss.core.errors import ZeroLossError

from .. import session

# sun_path of a UNIX socket holds 108 bytes with the terminating NUL
SOCKET_PATH_MAX = 107


class Workspace:
    """Holds the sockets and logs of one session; sockets are removed on close, logs kept on request (and
    after an error, which names them). Holds the bench lock while open: one zeroloss on the bench at a time."""

    def __init__(self, root: Path | None = None, keep_logs: bool = False):
        base = session.rundir()
        session.BENCH.acquire()
        try:
            try:
                base.mkdir(parents=True, exist_ok=True)
                self.root = root or Path(tempfile.mkdtemp(prefix="s", dir=base))
                self.root.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise ZeroLossError(f"cannot create a session folder in {base}: {e.strerror}",
                                    "set ZEROLOSS_RUNDIR to a folder zeroloss may write (default /run/zeroloss)") \
                    from e
            self.keep_logs = keep_logs
            self.tag = f"zl{session.me()['pid']}{self.root.name}"
            self.sock("x")  # a folder too deep for sockets fails here, before any process starts
            session.write_owner(self.root, self.tag)
        except BaseException:
            session.BENCH.release()
            raise
        self._open = True

    def sock(self, name: str) -> Path:
        path = self.root / f"{name}.sock"
        if len(str(path).encode()) > SOCKET_PATH_MAX:
            raise ZeroLossError(f"the run folder {self.root} is too long for UNIX sockets ({path} is "
                                f"{len(str(path).encode())} bytes, at most {SOCKET_PATH_MAX})",
                                "set ZEROLOSS_RUNDIR to a shorter folder (default /run/zeroloss)")
        return path

    def log(self, name: str) -> Path:
        return self.root / f"{name}.log"

    def prefix(self, name: str) -> str:
        """A DPDK --file-prefix unique to this session and process role."""
        return f"{self.tag}{name}"

    def close(self) -> None:
        if not self._open:
            return
        self._open = False
        # every process of the session has stopped: their DPDK runtime folders go too
        for d in session.DPDK_RUNTIME.glob(f"{self.tag}*"):
            shutil.rmtree(d, ignore_errors=True)
        if self.keep_logs:
            for p in [*self.root.rglob("*.sock"), *self.root.rglob("*.pid"), self.root / "owner.json"]:
                p.unlink(missing_ok=True)
            if not any(self.root.iterdir()):  # an error before any log was written: nothing to keep
                self.root.rmdir()
        else:
            shutil.rmtree(self.root, ignore_errors=True)
        session.BENCH.release()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is not None and exc_type is not KeyboardInterrupt:
            self.keep_logs = True  # an error message points at these logs
        self.close()
