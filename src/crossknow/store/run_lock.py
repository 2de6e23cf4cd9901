"""An exclusive lock on a run directory, so that two processes never write one `--out` at once.

`flock` on the directory's `.lock` file, which the kernel drops when its owner ends (kill -9 included): no stale
lock. The owner writes its pid there (for another process's message) only once it has checked that the directory is
its run (`mark_owner`), so a refused command leaves every file as it was. Re-entrant within one process.
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

from crossknow.errors import CrossknowError

LOCK_FILE = ".lock"


class RunDirInUse(CrossknowError):
    """Another process holds the run directory's lock."""


class _Hold:
    """This process's open, locked `.lock` file of one directory and how many RunLocks share it."""

    def __init__(self, fd: int):
        self.fd = fd
        self.count = 0


_holds: dict[Path, _Hold] = {}
_holds_guard = threading.Lock()


def _owner(lock_path: Path) -> str:
    """The pid recorded in a lock file, for a message."""
    try:
        text = lock_path.read_text(encoding="utf-8").strip()
    except OSError:
        text = ""
    return f"pid {text}" if text.isdigit() else "pid unknown"


class RunLock:
    """One hold on the lock of a run directory; `release()` (or the end of the process) lets it go."""

    def __init__(self, directory: Path):
        self.directory = directory
        self._released = False

    @classmethod
    def acquire(cls, directory: str | Path) -> RunLock:
        """Lock `directory` (which must exist) for this process, or raise RunDirInUse at once, naming
        the process that holds it."""
        key = Path(directory).resolve()
        with _holds_guard:
            hold = _holds.get(key)
            if hold is None:
                hold = _Hold(_lock(key))
                _holds[key] = hold
            hold.count += 1
        return cls(key)

    def mark_owner(self) -> None:
        """Write this process's id into the lock file, for the message of a process refused the lock."""
        with _holds_guard:
            fd = _holds[self.directory].fd
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        """Give up this hold; the lock itself is released with the process's last hold. Idempotent."""
        with _holds_guard:
            if self._released:
                return
            self._released = True
            hold = _holds[self.directory]
            hold.count -= 1
            if hold.count == 0:
                del _holds[self.directory]
                os.close(hold.fd)  # closing the descriptor drops the flock


def _lock(directory: Path) -> int:
    """An open descriptor of `directory/.lock` holding an exclusive flock."""
    lock_path = directory / LOCK_FILE
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise RunDirInUse(
            f"{directory} is in use by another crossknow process ({_owner(lock_path)}); "
            "wait for it to finish or use another --out"
        ) from None
    except BaseException:
        os.close(fd)
        raise
    return fd
