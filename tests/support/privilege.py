"""Root for the few tests that need it (network namespaces, a Debian PostgreSQL cluster, the user
``nobody``), for whoever runs the suite as the README says: root, or a user with sudo.

As root the commands run as they are; otherwise through ``sudo -n`` (never a password prompt: without
password-less sudo the tests say so, and NETAWARE_FAIL_ON_SKIP makes that a failure). ``sudo`` resets
the environment and PATH (``secure_path``), so whatever a command needs is passed in its argv.
Processes started through sudo belong to root: the user cannot signal them (sudo itself runs with
root's real uid), so they are stopped with :func:`kill` too.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
from collections.abc import Iterable
from pathlib import Path

# Debian's PATH for users has no sbin directories, where ip, tc, iptables and runuser live.
_SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@functools.cache
def _prefix() -> tuple[str, ...] | None:
    if os.geteuid() == 0:
        return ()
    sudo = shutil.which("sudo")
    if sudo and subprocess.run([sudo, "-n", "true"], capture_output=True, timeout=60).returncode == 0:
        return (sudo, "-n", "--")
    return None


def unavailable() -> str | None:
    """Why nothing can run as root here, or None."""
    if _prefix() is None:
        return "needs root or password-less sudo (run the suite as root, or as a user with sudo)"
    return None


def is_root() -> bool:
    return os.geteuid() == 0


def as_root(*cmd: str) -> list[str]:
    """``cmd`` run as root: itself as root, else through ``sudo -n``."""
    prefix = _prefix()
    if prefix is None:
        raise RuntimeError(unavailable())
    return [*prefix, *cmd]


def carrying(command: list[str], env: dict[str, str]) -> list[str]:
    """``command`` (from :func:`as_root`, maybe with more in front of the program) given ``env``:
    through sudo, which starts it with an environment of its own, the variables go in its argv
    (``sudo -n -- env K=V ...``); as root it inherits them."""
    prefix = _prefix()
    if not prefix or command[:len(prefix)] != list(prefix):
        return command
    return [*prefix, "env", *(f"{k}={v}" for k, v in env.items()), *command[len(prefix):]]


def which(tool: str) -> str | None:
    """``tool`` on PATH or in the system directories a user's PATH lacks."""
    return shutil.which(tool, path=f"{os.environ.get('PATH', '')}:{_SYSTEM_PATH}")


def run(*cmd: str, check: bool = True, timeout: float = 120,
        input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` as root, capturing its output; ``check`` raises with its stderr."""
    result = subprocess.run(as_root(*cmd), capture_output=True, text=True, timeout=timeout, input=input, cwd="/")
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({result.returncode}): {result.stderr.strip()}")
    return result


def kill(pids: Iterable[int], sig: signal.Signals = signal.SIGTERM) -> None:
    """Signal processes that may belong to root; processes already gone are fine."""
    pids = [int(pid) for pid in pids]
    if not pids:
        return
    if is_root():
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        return
    subprocess.run(as_root("kill", f"-{sig.name.removeprefix('SIG')}", *map(str, pids)),
                   capture_output=True, timeout=60)


def remove_tree(path: Path) -> None:
    """Remove a directory that processes of other users (root, nobody) wrote into."""
    if is_root():
        shutil.rmtree(path, ignore_errors=True)
    else:
        subprocess.run(as_root("rm", "-rf", "--", str(path)), capture_output=True, timeout=120)
