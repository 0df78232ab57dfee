"""Start real probe agents (``python -m apps.probes.agent``) as child processes for tests."""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import prometheus_client
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.support import privilege

ROOT = Path(__file__).resolve().parents[2]
# The shared secret every test agent gets unless a test passes its own (agents refuse to start without one).
TEST_SECRET = "netaware-test-secret-0123456789abcdef"


@dataclass
class RunningAgent:
    node: str
    url: str  # http://host:port of /metrics and /iperf/lease
    process: subprocess.Popen
    log_path: Path
    extra: dict = field(default_factory=dict)

    def samples(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        text = requests.get(f"{self.url}/metrics", timeout=5).text
        out = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
        return out

    def value(self, name: str, **labels: str) -> float | None:
        return self.samples().get((name, tuple(sorted(labels.items()))))

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    @property
    def pid(self) -> int:
        """The agent's own pid: the started process, or its child when that is sudo (a user's way
        to start an agent as another user, tests/support/privilege.py)."""
        pid = self.process.pid
        with contextlib.suppress(OSError, ValueError):
            # sudo may fork a monitor (``use_pty``) that forks the command: descend through both.
            while Path(f"/proc/{pid}/comm").read_text().strip() == "sudo":
                children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
                if not children:
                    break
                pid = int(children[0])
        return pid

    def stop(self, timeout: float = 15.0) -> int:
        if self.process.poll() is None:
            # An agent of another user (nobody, or root through sudo) is signalled as root.
            foreign = self.pid != self.process.pid or not _ours(self.pid)
            if foreign:
                privilege.kill([self.pid], signal.SIGTERM)
            else:
                self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                if foreign:
                    privilege.kill([self.pid], signal.SIGKILL)
                else:
                    self.process.kill()
                self.process.wait()
        return self.process.returncode


def _ours(pid: int) -> bool:
    """Whether this process may signal ``pid`` without root."""
    try:
        return os.geteuid() == 0 or os.stat(f"/proc/{pid}").st_uid == os.geteuid()
    except OSError:
        return True


@functools.cache
def world_readable_agent_tree() -> Path:
    """A copy of what the agent runs (``apps/probes/*.py`` and prometheus_client) that any user can read.

    An agent started as ``nobody`` cannot read a checkout or virtualenv private to its owner (a clone
    in ``mktemp -d`` is mode 0700), exactly as in its container, where the image holds the code."""
    tree = Path(tempfile.mkdtemp(prefix="netaware-agent-code-"))
    tree.chmod(0o755)
    (tree / "apps" / "probes").mkdir(parents=True)
    shutil.copy(ROOT / "apps" / "__init__.py", tree / "apps")
    for module in (ROOT / "apps" / "probes").glob("*.py"):
        shutil.copy(module, tree / "apps" / "probes")
    shutil.copytree(Path(prometheus_client.__file__).parent, tree / "prometheus_client",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for path in (tree, *tree.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    atexit.register(shutil.rmtree, tree, ignore_errors=True)
    return tree


def agent_command(node: str, args: Sequence[str], *, prefix: Sequence[str] = ()) -> list[str]:
    return [*prefix, sys.executable, "-m", "apps.probes.agent", "--node", node, *args]


def start_agent(node: str, url: str, args: Sequence[str], *, prefix: Sequence[str] = (),
                env: dict[str, str] | None = None, timeout: float = 15.0, code: Path = ROOT) -> RunningAgent:
    """Start an agent and wait until its /metrics answers (``url`` is how the test reaches it);
    ``code`` is where it imports netaware from (``world_readable_agent_tree()`` for another user)."""
    log_fd, log_name = tempfile.mkstemp(prefix=f"netaware-agent-{node}-", suffix=".log")
    own = {"PYTHONPATH": str(code), "NETAWARE_PROBE_SECRET": TEST_SECRET, **(env or {})}
    # A prefix may start with sudo (privilege.as_root), which resets the environment.
    command = privilege.carrying(agent_command(node, args, prefix=prefix), own)
    process = subprocess.Popen(command, cwd=code, stdout=log_fd, stderr=subprocess.STDOUT,
                               env={**os.environ, **own})
    os.close(log_fd)
    agent = RunningAgent(node=node, url=url, process=process, log_path=Path(log_name))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"agent {node} exited with {process.returncode}: {agent.log()[-2000:]}")
        try:
            if requests.get(f"{url}/metrics", timeout=1).ok:
                return agent
        except requests.RequestException:
            pass
        time.sleep(0.1)
    agent.stop()
    raise TimeoutError(f"agent {node} did not serve {url}/metrics: {agent.log()[-2000:]}")


def signed(method: str, url: str, body: dict | None = None, *, secret: str = TEST_SECRET,
           headers: dict[str, str] | None = None, timeout: float = 5.0) -> requests.Response:
    """A lease request signed like an agent signs it (apps/probes/agent_auth.py)."""
    import json
    from urllib.parse import urlsplit

    from apps.probes.agent_auth import sign_request

    data = json.dumps(body).encode() if body is not None else b""
    auth = sign_request(secret.encode(), method, urlsplit(url).path, data)
    return requests.request(method, url, data=data or None, timeout=timeout,
                            headers={**({"Content-Type": "application/json"} if data else {}), **auth,
                                     **(headers or {})})


def viewer_token(username: str = "probe-agents") -> str:
    """An API token of a user with the viewer role: what the agents' NETAWARE_API_TOKEN holds in a
    cluster where the API needs authentication (needs the database)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from apps.accounts.roles import VIEWER
    from apps.accounts.services import create_api_token, ensure_roles

    ensure_roles()
    user, _ = get_user_model().objects.get_or_create(username=username)
    user.groups.add(Group.objects.get(name=VIEWER))
    return create_api_token(user=user, name=f"agents-{len(user.username)}-{os.getpid()}")[1]
