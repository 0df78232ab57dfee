"""Liveness for processes without an HTTP port (Celery beat, the cluster watcher, the AppGroup sync).

The process calls ``touch(name)`` from its main loop; the kubelet runs
``python /app/netaware_core/heartbeat.py NAME --max-age SECONDS``, which exits non-zero when the file
is older than that (the loop is stuck) or missing. The checker imports only the standard library,
so a probe costs a few milliseconds, never a Django start-up. Without ``NETAWARE_HEARTBEAT_DIR``
``touch`` does nothing (development, tests).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path

DIR_ENV = "NETAWARE_HEARTBEAT_DIR"


def _path(name: str, directory: str | None = None) -> Path | None:
    directory = directory if directory is not None else os.environ.get(DIR_ENV, "")
    if not directory:
        return None
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"invalid heartbeat name {name!r}")
    return Path(directory) / f"netaware-heartbeat-{name}"


def touch(name: str) -> None:
    """Record that ``name``'s loop made progress just now (never raises)."""
    path = _path(name)
    if path is None:
        return
    with contextlib.suppress(OSError):
        path.touch()
        os.utime(path)


def age(name: str, directory: str | None = None) -> float | None:
    """Seconds since the last ``touch`` (None when there is none)."""
    path = _path(name, directory)
    if path is None:
        return None
    try:
        return max(0.0, time.time() - path.stat().st_mtime)
    except OSError:
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="heartbeat.py", description="exit 0 when NAME's heartbeat is fresh")
    parser.add_argument("name")
    parser.add_argument("--max-age", type=float, required=True, help="seconds")
    parser.add_argument("--dir", default=None, help=f"heartbeat directory [{DIR_ENV}]")
    args = parser.parse_args(argv)
    directory = args.dir if args.dir is not None else os.environ.get(DIR_ENV, "")
    if not directory:
        print(f"heartbeat: {DIR_ENV} is not set", file=sys.stderr)
        return 2
    seconds = age(args.name, directory)
    if seconds is None:
        print(f"heartbeat: no heartbeat from {args.name} yet in {directory}", file=sys.stderr)
        return 1
    if seconds > args.max_age:
        print(f"heartbeat: {args.name} last beat {seconds:.0f} s ago (max {args.max_age:g} s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
