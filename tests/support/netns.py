"""Network-namespace lab for the real measurement test: namespaces, veth links, tc and iptables.

Every name carries the test process's pid, so parallel or crashed runs never collide, and
``cleanup_stale()`` removes the leftovers of runs whose process is gone. ``NetnsLab.teardown()``
kills the processes it started first (a namespace lives on while a process is inside it), then
deletes the iptables rules, qdiscs and namespaces; deleting a namespace also deletes its veth ends
and, with them, their peers in the root namespace.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field

from tests.support import privilege

PREFIX = "na"  # namespaces are named na<pid>-<key>
_NS_RE = re.compile(rf"^{PREFIX}(\d+)-\w+$")


def available() -> str | None:
    """Why the lab cannot run here, or None when it can."""
    if (reason := privilege.unavailable()) is not None:
        return f"network namespaces, tc and iptables: {reason}"
    for tool in ("ip", "tc", "iptables", "iperf3"):
        if privilege.which(tool) is None:
            return f"needs the {tool!r} command"
    return None


def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``cmd`` as root (itself, or through sudo)."""
    return privilege.run(*cmd, check=check, timeout=30)


def cleanup_stale() -> None:
    """Delete lab namespaces left behind by test processes that no longer exist."""
    listing = sh("ip", "netns", "list", check=False).stdout
    for line in listing.splitlines():
        name = line.split()[0] if line.strip() else ""
        match = _NS_RE.match(name)
        if match and not os.path.exists(f"/proc/{match.group(1)}"):
            sh("ip", "netns", "delete", name, check=False)


@dataclass
class Link:
    a: str  # namespace keys
    b: str
    dev_a: str  # interface inside a's namespace
    dev_b: str
    ip_a: str
    ip_b: str


@dataclass
class NetnsLab:
    """Namespaces joined pairwise by veth, each with a management veth to the root namespace."""

    tag: str = field(default_factory=lambda: str(os.getpid()))
    namespaces: dict[str, str] = field(default_factory=dict)  # key -> namespace name
    mgmt_ip: dict[str, str] = field(default_factory=dict)  # key -> address reachable from the root ns
    links: list[Link] = field(default_factory=list)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _rules: list[tuple[str, list[str]]] = field(default_factory=list)
    _qdiscs: list[tuple[str, str]] = field(default_factory=list)
    _root_devs: list[str] = field(default_factory=list)

    def ns(self, key: str) -> str:
        return self.namespaces[key]

    def add_namespace(self, key: str) -> str:
        name = f"{PREFIX}{self.tag}-{key}"
        sh("ip", "netns", "add", name)
        self.namespaces[key] = name
        self.exec(key, "ip", "link", "set", "lo", "up")
        # management veth: root end na<tag><i>, namespace end "mgmt"; /30 per namespace
        index = len(self.namespaces)
        root_dev = f"{PREFIX}{self.tag}m{index}"[:15]
        third = int(self.tag) % 250
        root_ip, ns_ip = f"10.250.{third}.{4 * index + 1}", f"10.250.{third}.{4 * index + 2}"
        sh("ip", "link", "add", "name", root_dev, "type", "veth", "peer", "name", "mgmt", "netns", name)
        self._root_devs.append(root_dev)
        sh("ip", "addr", "add", f"{root_ip}/30", "dev", root_dev)
        sh("ip", "link", "set", root_dev, "up")
        self.exec(key, "ip", "addr", "add", f"{ns_ip}/30", "dev", "mgmt")
        self.exec(key, "ip", "link", "set", "mgmt", "up")
        self.mgmt_ip[key] = ns_ip
        return name

    def connect(self, a: str, b: str) -> Link:
        """A veth pair between two namespaces, /30 addresses 10.0.<n>.1 (a) and .2 (b)."""
        n = len(self.links) + 1
        dev_a, dev_b = f"to-{b}", f"to-{a}"
        sh("ip", "link", "add", "name", dev_a, "netns", self.ns(a), "type", "veth",
           "peer", "name", dev_b, "netns", self.ns(b))
        link = Link(a=a, b=b, dev_a=dev_a, dev_b=dev_b, ip_a=f"10.0.{n}.1", ip_b=f"10.0.{n}.2")
        for key, dev, ip in ((a, dev_a, link.ip_a), (b, dev_b, link.ip_b)):
            self.exec(key, "ip", "addr", "add", f"{ip}/30", "dev", dev)
            self.exec(key, "ip", "link", "set", dev, "up")
        self.links.append(link)
        return link

    def address_of(self, key: str, seen_from: str) -> str:
        """``key``'s address on its direct link with ``seen_from``."""
        for link in self.links:
            if (link.a, link.b) == (key, seen_from):
                return link.ip_a
            if (link.a, link.b) == (seen_from, key):
                return link.ip_b
        raise KeyError(f"no link between {key} and {seen_from}")

    def shape(self, key: str, dev: str, *, rate: str = "20mbit", burst: str = "32kbit",
              latency: str = "50ms") -> None:
        """Token-bucket rate limit on the egress of ``dev`` inside namespace ``key``."""
        self.exec(key, "tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate, "burst", burst,
                  "latency", latency)
        self._qdiscs.append((key, dev))

    def drop_randomly(self, key: str, rule: Sequence[str], probability: float) -> None:
        """``iptables -A <rule> -m statistic --mode random --probability p -j DROP`` in ``key``."""
        spec = [*rule, "-m", "statistic", "--mode", "random", "--probability", str(probability), "-j", "DROP"]
        self.exec(key, "iptables", "-A", *spec)
        self._rules.append((key, spec))

    def exec(self, key: str, *cmd: str) -> subprocess.CompletedProcess[str]:
        return sh("ip", "netns", "exec", self.ns(key), *cmd)

    def prefix(self, key: str) -> list[str]:
        """Run a command inside ``key``'s namespace (as root: through sudo it gets no environment of
        ours, so pass what it needs in its argv)."""
        return privilege.as_root("ip", "netns", "exec", self.ns(key))

    def track(self, process: subprocess.Popen[bytes]) -> None:
        self.processes.append(process)

    def pids_in(self, key: str) -> list[int]:
        out = sh("ip", "netns", "pids", self.ns(key), check=False).stdout.split()
        return [int(pid) for pid in out if pid.isdigit()]

    def teardown(self) -> list[str]:
        """Undo everything; returns the problems met (teardown itself never raises)."""
        problems: list[str] = []
        # What runs inside belongs to root (and through sudo the started process is sudo itself,
        # which the user cannot signal): signal the namespaces' processes, then reap ours.
        for key in self.namespaces:
            privilege.kill(self.pids_in(key), signal.SIGTERM)
        for process in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
        for key in self.namespaces:  # anything still inside (e.g. an orphaned iperf3)
            privilege.kill(self.pids_in(key), signal.SIGKILL)
        for process in self.processes:
            process.wait(timeout=30)
        for key, spec in reversed(self._rules):
            result = sh("ip", "netns", "exec", self.ns(key), "iptables", "-D", *spec, check=False)
            if result.returncode:
                problems.append(f"iptables -D in {key}: {result.stderr.strip()}")
        for key, dev in self._qdiscs:
            sh("ip", "netns", "exec", self.ns(key), "tc", "qdisc", "del", "dev", dev, "root", check=False)
        for name in self.namespaces.values():
            result = sh("ip", "netns", "delete", name, check=False)
            if result.returncode:
                problems.append(f"ip netns delete {name}: {result.stderr.strip()}")
        for dev in self._root_devs:  # normally gone with their namespace peer
            if os.path.exists(f"/sys/class/net/{dev}"):
                sh("ip", "link", "delete", dev, check=False)
        return problems
