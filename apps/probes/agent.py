"""netaware probe agent: one process per node measuring RTT, loss and bandwidth to its peers.

Run as ``python -m apps.probes.agent`` (flags and environment in ``--help`` and docs/metrics.md).
No Django import anywhere on this path: the agent runs as a DaemonSet on every node and must stay
around 20 MiB RSS and a few mCPU with 20 peers (bench/bench_probe_agent.py).

Threads: one UDP loop (echo responder for the peers' probes *and* sender/receiver of our own
probes, on one socket), one HTTP server (``/metrics`` and the iperf3 lease), one supervisor
(iperf3 server child, bandwidth tests, peer discovery). All metric names come from
apps/probes/metrics.py, which the emulator shares.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import logging
import os
import random
import re
import select
import signal
import socket
import struct
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

from apps.probes import metrics
from apps.probes.agent_auth import (
    DATE_HEADER,
    NONCE_HEADER,
    PacketMac,
    RequestVerifier,
    SecretError,
    load_secret,
)
from apps.probes.agent_auth import PACKET_MAC_BYTES as PACKET_TAG_BYTES
from apps.probes.agent_iperf import (
    LEASE_GRACE_SECONDS,
    MAX_TEST_SECONDS,
    IperfServer,
    LeaseBusy,
    LeaseTable,
    release_lease,
    run_iperf3,
    take_lease,
)
from apps.probes.fanout import (
    DEFAULT_BANDWIDTH_PEERS,
    DEFAULT_MAX_PEERS,
    DEFAULT_MIN_PAIRS,
    DEFAULT_ROTATION_SECONDS,
    FanoutError,
    FanoutNode,
    FanoutSettings,
    layout,
    node_epoch,
    peers_of,
)

log = logging.getLogger("netaware.agent")

DEFAULT_PORT = 9105
_N = TypeVar("_N", int, float)
# magic, kind (1 request, 2 reply), sequence number, sender's perf_counter_ns at send time; then an
# 8-byte HMAC tag over these 15 bytes (agent_auth.PacketMac)
_PACKET = struct.Struct("!2sBIQ")
_MAGIC = b"NA"
_REQUEST, _REPLY = 1, 2
AUTH_HEADERS = ("Authorization", DATE_HEADER, NONCE_HEADER)
_NAME_RE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


class ConfigError(ValueError):
    """Bad agent configuration; the message names the flag or environment variable."""


@dataclass(frozen=True)
class Peer:
    name: str
    host: str
    port: int  # the peer agent's port: TCP for /metrics + lease, UDP for echo
    zone: str = ""  # placement, for the fan-out (apps/probes/fanout.py)
    region: str = ""

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def _split_host_port(text: str, default_port: int, where: str) -> tuple[str, int]:
    text = text.strip()
    if text.startswith("["):  # [v6]:port
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    else:
        host, port_text = text, ""
    if not host:
        raise ConfigError(f"{where}: empty address")
    if not port_text:
        return host, default_port
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ConfigError(f"{where}: {port_text!r} is not a port")
    return host, int(port_text)


def parse_peers(spec: str, *, default_port: int = DEFAULT_PORT, where: str = "PEERS") -> dict[str, Peer]:
    """``"name=ip[:port][@zone[/region]],..."`` to peers by name."""
    peers: dict[str, Peer] = {}
    for i, entry in enumerate(item for item in spec.replace(";", ",").split(",") if item.strip()):
        name, sep, address = entry.strip().partition("=")
        if not sep or not _NAME_RE.match(name.strip()):
            raise ConfigError(f"{where}[{i}]: {entry.strip()!r} is not name=ip[:port][@zone[/region]]")
        address, _, placement = address.partition("@")
        zone, _, region = placement.partition("/")
        host, port = _split_host_port(address, default_port, f"{where}[{i}]")
        peers[name.strip()] = Peer(name.strip(), host, port, zone.strip(), region.strip())
    return peers


def peers_from_api(payload: Any, *, default_port: int) -> dict[str, Peer]:
    """Peers from ``GET /api/nodes/``: a list, or a DRF page ``{"results": [...]}``, of node objects."""
    items = payload.get("results") if isinstance(payload, Mapping) else payload
    if not isinstance(items, list):
        raise ValueError("expected a JSON list of nodes or {'results': [...]}")
    peers: dict[str, Peer] = {}
    for item in items:
        if not isinstance(item, Mapping):
            continue
        name, address = item.get("name"), item.get("address")
        if not isinstance(name, str) or not isinstance(address, str) or not address:
            continue
        port = item.get("probe_port") or item.get("port") or default_port
        try:
            host, port = _split_host_port(address, int(port), "address")
        except (ConfigError, ValueError):
            continue
        zone, region = item.get("zone"), item.get("region")
        peers[name] = Peer(name, host, port, zone if isinstance(zone, str) else "",
                           region if isinstance(region, str) else "")
    return peers


def fetch_api_peers(url: str, *, default_port: int, timeout: float = 5.0, token: str = "") -> dict[str, Peer]:
    """All pages of ``{url}/api/nodes/`` (with ``Authorization: Bearer <token>`` when given)."""
    peers: dict[str, Peer] = {}
    next_url: str | None = url.rstrip("/") + "/api/nodes/"
    pages = 0
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    while next_url and pages < 100:
        req = urllib.request.Request(next_url, headers=headers)
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            payload = json.loads(resp.read())
        peers.update(peers_from_api(payload, default_port=default_port))
        nxt = payload.get("next") if isinstance(payload, Mapping) else None
        next_url = urllib.parse.urljoin(next_url, nxt) if isinstance(nxt, str) and nxt else None
        pages += 1
    return peers


@dataclass
class Config:
    node: str
    zone: str | None
    region: str | None
    static_peers: dict[str, Peer]
    netaware_url: str | None
    bind: str
    port: int
    iperf_port: int
    probe_rate: float
    probe_timeout: float
    iperf_interval: float
    iperf_duration: float
    iperf_binary: str
    iperf_enabled: bool
    discovery_interval: float
    secret: bytes
    api_token: str = ""
    rtt_export: str = metrics.EXPORT_QUANTILES
    quantile_window: float = 300.0
    fanout: FanoutSettings = field(default_factory=FanoutSettings)
    bandwidth_peers: int = DEFAULT_BANDWIDTH_PEERS


def _env_value(env: Mapping[str, str], key: str, default: _N, parse: Callable[[str], _N], what: str) -> _N:
    """``key`` parsed, ``default`` when unset or empty (the agent runs without Django, so not netaware_core.env)."""
    raw = env.get(key)
    if raw is None or raw == "":
        return default
    try:
        return parse(raw)
    except ValueError:
        raise ConfigError(f"{key}: {raw!r} is not {what}") from None


def _env_float(env: Mapping[str, str], key: str, default: float) -> float:
    return _env_value(env, key, default, float, "a number")


def _env_port(env: Mapping[str, str], key: str, default: int) -> int:
    port = _env_value(env, key, default, int, "a port number")
    if not 0 < port < 65536:
        raise ConfigError(f"{key}: {port} is not a port number (1-65535)")
    return port


def _env_int(env: Mapping[str, str], key: str, default: int) -> int:
    return _env_value(env, key, default, int, "an integer")


def _read_token(env: Mapping[str, str]) -> str:
    path = env.get("NETAWARE_API_TOKEN_FILE", "")
    if path:
        try:
            return Path(path).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(f"NETAWARE_API_TOKEN_FILE: cannot read {path!r}: {exc.strerror}") from None
    return env.get("NETAWARE_API_TOKEN", "").strip()


def build_parser(env: Mapping[str, str]) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m apps.probes.agent", description=__doc__.splitlines()[0])
    p.add_argument("--node", default=env.get("NODE_NAME"), help="this node's name [NODE_NAME]")
    p.add_argument("--zone", default=env.get("NODE_ZONE"), help="zone for netaware_node_info [NODE_ZONE]")
    p.add_argument("--region", default=env.get("NODE_REGION"), help="region for netaware_node_info [NODE_REGION]")
    p.add_argument("--peers", default=env.get("PEERS", ""), help="static peers name=ip[:port],... [PEERS]")
    p.add_argument("--netaware-url", default=env.get("NETAWARE_URL"),
                   help="discover peers from GET <url>/api/nodes/ [NETAWARE_URL]")
    p.add_argument("--bind", default=env.get("PROBE_BIND") or env.get("NODE_IP") or "",
                   help="the one address to listen on: the node's IP [PROBE_BIND, else NODE_IP; required]")
    p.add_argument("--metrics-port", type=int, default=_env_port(env, "METRICS_PORT", DEFAULT_PORT),
                   help="TCP port of /metrics and /iperf/lease, and UDP port of the echo responder "
                        "[METRICS_PORT, default 9105]")
    p.add_argument("--iperf-port", type=int, default=_env_port(env, "IPERF_PORT", 5201),
                   help="port of this agent's iperf3 server [IPERF_PORT, default 5201]")
    p.add_argument("--probe-rate", type=float, default=_env_float(env, "PROBE_RATE", 2.0),
                   help="UDP probes per second per peer; 0 sends none [PROBE_RATE, default 2]")
    p.add_argument("--probe-timeout", type=float, default=_env_float(env, "PROBE_TIMEOUT", 1.0),
                   help="seconds after which an unanswered probe counts as lost [default 1]")
    p.add_argument("--iperf-interval", type=float, default=_env_float(env, "IPERF_INTERVAL", 30.0),
                   help="seconds between this agent's bandwidth tests (round-robin over peers) [default 30]")
    p.add_argument("--iperf-duration", type=float, default=_env_float(env, "IPERF_DURATION", 2.0),
                   help="seconds per iperf3 test, at most 3 [default 2]")
    p.add_argument("--iperf-binary", default=env.get("IPERF_BINARY", "iperf3"))
    p.add_argument("--no-iperf", action="store_true", help="no bandwidth tests and no iperf3 server")
    p.add_argument("--discovery-interval", type=float, default=_env_float(env, "DISCOVERY_INTERVAL", 60.0),
                   help="seconds between peer refreshes from the netaware API [default 60]")
    p.add_argument("--rtt-export", default=env.get("PROBE_RTT_EXPORT", metrics.EXPORT_QUANTILES),
                   help="quantiles: per pair p50/p90/p99 and loss over --quantile-window (4 series); histogram: "
                        "the full RTT histogram and packet counters (45 series) [PROBE_RTT_EXPORT, default quantiles]")
    p.add_argument("--quantile-window", type=float, default=_env_float(env, "PROBE_QUANTILE_WINDOW", 300.0),
                   help="seconds of probes behind the exported quantiles and loss [PROBE_QUANTILE_WINDOW, default 300]")
    p.add_argument("--max-peers", type=int, default=_env_int(env, "PROBE_MAX_PEERS", DEFAULT_MAX_PEERS),
                   help="K: peers probed at once, 0 = full mesh [PROBE_MAX_PEERS, default 24]")
    p.add_argument("--min-pairs", type=int, default=_env_int(env, "PROBE_MIN_PAIRS", DEFAULT_MIN_PAIRS),
                   help="m: measured node pairs per zone pair the fan-out guarantees [PROBE_MIN_PAIRS, default 3]")
    p.add_argument("--rotation-seconds", type=float,
                   default=_env_float(env, "PROBE_ROTATION_SECONDS", DEFAULT_ROTATION_SECONDS),
                   help="how long one sample of peers is kept [PROBE_ROTATION_SECONDS, default 21600]")
    p.add_argument("--bandwidth-peers", type=int,
                   default=_env_int(env, "PROBE_BANDWIDTH_PEERS", DEFAULT_BANDWIDTH_PEERS),
                   help="K of the iperf3 fan-out, 0 = every peer [PROBE_BANDWIDTH_PEERS, default 8]")
    p.add_argument("--log-level", default=env.get("LOG_LEVEL", "INFO"))
    return p


def load_config(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> Config:
    env = os.environ if env is None else env
    args = build_parser(env).parse_args(argv)
    logging.basicConfig(level=getattr(logging, str(args.log_level).upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not args.node or not _NAME_RE.match(args.node):
        raise ConfigError(f"NODE_NAME/--node: {args.node!r} is not a node name (required)")
    for flag, value in (("--metrics-port", args.metrics_port), ("--iperf-port", args.iperf_port)):
        if not 0 < value < 65536:
            raise ConfigError(f"{flag}: {value} is not a port")
    if not 0 <= args.probe_rate <= 1000:
        raise ConfigError(f"--probe-rate: must be in [0, 1000] (0: answer echoes, send none), got {args.probe_rate}")
    if not 0 < args.probe_timeout <= 10:
        raise ConfigError(f"--probe-timeout: must be in (0, 10], got {args.probe_timeout}")
    if not 0 < args.iperf_duration <= MAX_TEST_SECONDS:
        raise ConfigError(f"--iperf-duration: must be in (0, {MAX_TEST_SECONDS:g}], got {args.iperf_duration}")
    if args.iperf_interval <= 0 or args.discovery_interval <= 0:
        raise ConfigError("--iperf-interval/--discovery-interval: must be positive")
    if args.rtt_export not in metrics.EXPORT_MODES:
        raise ConfigError(f"PROBE_RTT_EXPORT/--rtt-export: {args.rtt_export!r} is not one of "
                          f"{', '.join(metrics.EXPORT_MODES)}")
    if not 10 <= args.quantile_window <= 3600:
        raise ConfigError(f"PROBE_QUANTILE_WINDOW/--quantile-window: must be in [10, 3600] s, got {args.quantile_window}")
    if args.bandwidth_peers < 0:
        raise ConfigError(f"PROBE_BANDWIDTH_PEERS/--bandwidth-peers: must be >= 0, got {args.bandwidth_peers}")
    try:
        fanout_settings = FanoutSettings(max_peers=args.max_peers, min_pairs=args.min_pairs,
                                          rotation_seconds=args.rotation_seconds)
    except FanoutError as exc:
        flag = str(exc).split(":", 1)[0].replace("_", "-")
        raise ConfigError(f"--{flag}: {str(exc).split(':', 1)[1].strip()}") from None
    static = parse_peers(args.peers or "", default_port=args.metrics_port,
                         where="PEERS/--peers")
    static.pop(args.node, None)
    if not args.bind:
        raise ConfigError("PROBE_BIND/--bind (or NODE_IP): set the node's IP address; the agent listens on that "
                          "one address, not on all of them")
    try:
        secret = load_secret(env)
    except SecretError as exc:
        raise ConfigError(str(exc)) from None
    if not static and not args.netaware_url:
        log.warning("no peers: set PEERS/--peers or NETAWARE_URL/--netaware-url")
    return Config(
        node=args.node, zone=args.zone or None, region=args.region or None, static_peers=static,
        netaware_url=args.netaware_url or None, bind=args.bind, port=args.metrics_port,
        iperf_port=args.iperf_port, probe_rate=args.probe_rate, probe_timeout=args.probe_timeout,
        iperf_interval=args.iperf_interval, iperf_duration=args.iperf_duration,
        iperf_binary=args.iperf_binary, iperf_enabled=not args.no_iperf,
        discovery_interval=args.discovery_interval, secret=secret, api_token=_read_token(env),
        rtt_export=args.rtt_export, quantile_window=args.quantile_window, fanout=fanout_settings,
        bandwidth_peers=args.bandwidth_peers,
    )


class _QuantileCollector:
    """Per probed pair: exact RTT quantiles and the loss ratio over the agent's quantile window."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.labels = [metrics.quantile_label(q) for q in metrics.QUANTILES]

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Any:
        agent = self.agent
        node = agent.config.node
        rtt = GaugeMetricFamily(metrics.RTT_QUANTILE, "RTT quantiles of the probes answered within the "
                                "agent's quantile window.", labels=metrics.QUANTILE_LABELS)
        loss = GaugeMetricFamily(metrics.LOSS_RATIO, "Share of the probes sent within the agent's quantile "
                                 "window that got no reply in time.", labels=metrics.PAIR_LABELS)
        horizon = time.perf_counter_ns() - int(agent.config.quantile_window * 1e9)
        for state in list(agent._states.values()):
            outcomes = state.outcomes
            while outcomes and outcomes[0][0] < horizon:
                outcomes.popleft()
            snapshot = list(outcomes)  # one C-level copy: safe while the UDP thread appends
            if not snapshot:
                continue
            answered = sorted(r for _, r in snapshot if r >= 0.0)
            loss.add_metric([node, state.peer.name], (len(snapshot) - len(answered)) / len(snapshot))
            if answered:
                for label, q in zip(self.labels, metrics.QUANTILES, strict=True):
                    rtt.add_metric([node, state.peer.name, label], metrics.sample_quantile(answered, q))
        yield rtt
        yield loss


class AgentMetrics:
    """The agent's registry: the shared probe metrics plus self-metrics."""

    def __init__(self, node: str, rtt_export: str) -> None:
        disable_created_metrics()  # *_created series only cost scrape bytes here
        self.node = node
        self.histograms = rtt_export == metrics.EXPORT_HISTOGRAM
        self.registry = CollectorRegistry(auto_describe=True)
        ProcessCollector(registry=self.registry)
        r = self.registry
        if self.histograms:
            # prometheus_client appends _total to counters; strip it from the shared names.
            self.rtt = Histogram(metrics.RTT_HISTOGRAM, "Round-trip time of UDP echo probes.",
                                 metrics.PAIR_LABELS, buckets=metrics.RTT_BUCKETS, registry=r)
            self.sent = Counter(metrics.PACKETS_SENT.removesuffix("_total"), "Probe packets sent.",
                                metrics.PAIR_LABELS, registry=r)
            self.received = Counter(metrics.PACKETS_RECEIVED.removesuffix("_total"),
                                    "Probe replies received before the timeout.", metrics.PAIR_LABELS, registry=r)
        self.bandwidth = Gauge(metrics.BANDWIDTH, "Throughput of the latest iperf3 test.",
                               metrics.PAIR_LABELS, registry=r)
        self.bandwidth_ts = Gauge(metrics.BANDWIDTH_TIMESTAMP, "Unix time of the latest iperf3 test.",
                                  metrics.PAIR_LABELS, registry=r)
        self.node_info = Gauge(metrics.NODE_INFO, "Node placement of this probe agent.",
                               metrics.NODE_INFO_LABELS, registry=r)
        self.iperf_tests = Counter("netaware_probe_iperf_tests", "Bandwidth tests run by this agent.",
                                   ["result"], registry=r)
        self.iperf_server_starts = Counter("netaware_probe_iperf_server_starts",
                                           "Starts of this agent's iperf3 server child.", registry=r)
        self.leases = Counter("netaware_probe_iperf_leases", "Lease requests answered by this agent.",
                              ["result"], registry=r)
        self.echo_replies = Counter("netaware_probe_echo_replies", "Probe requests answered for peers.",
                                    registry=r)
        self.echo_rejected = Counter("netaware_probe_echo_rejected", "UDP packets dropped for a bad or "
                                     "missing authentication tag.", registry=r)
        self.peers = Gauge("netaware_probe_peers", "Peers currently probed.", registry=r)
        self.discovery = Counter("netaware_probe_discovery", "Peer discovery attempts.", ["result"], registry=r)
        for result in ("ok", "busy", "error"):
            self.iperf_tests.labels(result)
        for result in ("granted", "busy", "unavailable", "unauthorized"):
            self.leases.labels(result)

    def forget(self, peer: str) -> None:
        families = (self.rtt, self.sent, self.received) if self.histograms else ()
        for family in families:
            with contextlib.suppress(KeyError):
                family.remove(self.node, peer)

    def forget_bandwidth(self, peer: str) -> None:
        for family in (self.bandwidth, self.bandwidth_ts):
            with contextlib.suppress(KeyError):
                family.remove(self.node, peer)


class _PeerState:
    """Cached metric children of one probed peer (label lookups are not free at 40 packets/s)."""

    __slots__ = ("addr", "hist", "outcomes", "peer", "received", "sent")

    def __init__(self, peer: Peer, m: AgentMetrics, addr: tuple[str, int], max_outcomes: int) -> None:
        self.peer = peer
        self.addr = addr
        self.sent: Any = m.sent.labels(m.node, peer.name) if m.histograms else None
        self.received: Any = m.received.labels(m.node, peer.name) if m.histograms else None
        self.hist: Any = None  # created on the first answered probe, like the emulator
        # quantile export: (perf_counter_ns at send, RTT seconds or -1.0 when lost), oldest first
        self.outcomes: collections.deque[tuple[int, float]] = collections.deque(maxlen=max_outcomes)


class Agent:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.m = AgentMetrics(config.node, config.rtt_export)
        if not self.m.histograms:
            self.m.registry.register(_QuantileCollector(self))
        self.stop = threading.Event()
        self._known: dict[str, Peer] = {}  # every peer discovered or configured
        self._peers: dict[str, Peer] = {}  # the ones the fan-out probes now
        self._bandwidth_peers: tuple[str, ...] = ()
        self._states: dict[str, _PeerState] = {}
        self._peers_lock = threading.Lock()
        self._placement = (config.zone or "", config.region or "")
        self._exported_placement: tuple[str, str] | None = None
        self._epoch: int | None = None
        self._layout = layout([FanoutNode(config.node)])
        self._max_outcomes = int(max(config.probe_rate, 0.1) * config.quantile_window * 1.2) + 16
        self._mac = PacketMac(config.secret)
        self._verifier = RequestVerifier(config.secret)
        self.leases = LeaseTable(config.iperf_port)
        self.iperf_server = IperfServer(config.iperf_binary, config.iperf_port, config.bind)
        family = socket.AF_INET6 if ":" in config.bind else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_DGRAM)
        self.sock.bind((config.bind, config.port))
        self.sock.setblocking(False)
        server_class = type("AgentHTTPServer", (ThreadingHTTPServer,), {"address_family": family})
        self.httpd = server_class((config.bind, config.port), self._handler())
        self.httpd.daemon_threads = True
        self._set_placement(*self._placement)
        self.set_peers(dict(config.static_peers))
        self._threads: list[threading.Thread] = []

    # -- peers and the fan-out -----------------------------------------------------------------------
    def _set_placement(self, zone: str, region: str) -> None:
        if (zone or region) and (zone, region) != self._exported_placement:
            self.m.node_info.clear()
            self.m.node_info.labels(self.config.node, zone, region).set(1)
            self._exported_placement = (zone, region)
        self._placement = (zone, region)

    def set_peers(self, peers: dict[str, Peer], now: float | None = None) -> None:
        """Record every known peer and probe the ones this node's fan-out names for the current epoch."""
        me = peers.pop(self.config.node, None)
        if me is not None and (me.zone or me.region):  # the node list's placement, as every agent sees it
            self._set_placement(me.zone, me.region)
        with self._peers_lock:
            self._known = peers
            self._apply_fanout(time.time() if now is None else now)

    def _plan_for(self, max_peers: int, epoch: int) -> tuple[str, ...]:
        settings = FanoutSettings(max_peers=max_peers, min_pairs=self.config.fanout.min_pairs,
                                     rotation_seconds=self.config.fanout.rotation_seconds)
        return peers_of(self._layout, self.config.node, settings, epoch)

    def _current_epoch(self, now: float) -> int:
        return node_epoch(self._layout, self.config.node, self.config.fanout, now)

    def _apply_fanout(self, now: float) -> None:
        """Called with the peers lock held."""
        zone, region = self._placement
        nodes = [FanoutNode(self.config.node, zone, region)]
        nodes += [FanoutNode(p.name, p.zone, p.region) for p in self._known.values()]
        self._layout = layout(nodes)
        epoch = self._current_epoch(now)  # staggered by rank inside the zone (node_epoch)
        self._epoch = epoch
        wanted = {name: self._known[name] for name in self._plan_for(self.config.fanout.max_peers, epoch)}
        states = dict(self._states)
        for name in set(states) - set(wanted):
            del states[name]
            self.m.forget(name)
        for name, peer in wanted.items():
            if name in states and states[name].peer == peer:
                continue
            try:
                info = socket.getaddrinfo(peer.host, peer.port, self.sock.family, socket.SOCK_DGRAM)
            except OSError as exc:
                log.warning("cannot resolve peer %s (%s): %s", name, peer.host, exc)
                states.pop(name, None)
                continue
            sockaddr = info[0][4]
            states[name] = _PeerState(peer, self.m, (str(sockaddr[0]), int(sockaddr[1])), self._max_outcomes)
        self._states = states  # swapped atomically; the UDP loop reads the reference
        self._peers = {name: s.peer for name, s in states.items()}
        bandwidth = self._plan_for(self.config.bandwidth_peers, epoch) if self.config.bandwidth_peers else tuple(
            sorted(self._known))
        for name in set(self._bandwidth_peers) - set(bandwidth):
            self.m.forget_bandwidth(name)
        self._bandwidth_peers = bandwidth
        self.m.peers.set(len(states))

    def peers(self) -> dict[str, Peer]:
        return dict(self._peers)

    def _discover(self) -> None:
        assert self.config.netaware_url
        try:
            found = fetch_api_peers(self.config.netaware_url, default_port=self.config.port,
                                    token=self.config.api_token)
        except (OSError, ValueError) as exc:
            self.m.discovery.labels("error").inc()
            log.warning("peer discovery from %s failed: %s", self.config.netaware_url, exc)
            return
        self.m.discovery.labels("ok").inc()
        self.set_peers({**found, **self.config.static_peers})

    # -- UDP probes and echo ----------------------------------------------------------------------
    def _udp_loop(self) -> None:
        sock = self.sock
        pending: collections.OrderedDict[int, tuple[_PeerState, int]] = collections.OrderedDict()
        # rate 0: only answer peers' probes (e.g. bandwidth-only beside smokeping_prober)
        period = 1.0 / self.config.probe_rate if self.config.probe_rate > 0 else float("inf")
        timeout_ns = int(self.config.probe_timeout * 1e9)
        histograms = self.m.histograms
        seq = random.getrandbits(32)
        next_send = time.monotonic() + random.uniform(0, min(period, 1.0)) if period < float("inf") else period
        pack, unpack, size = _PACKET.pack, _PACKET.unpack_from, _PACKET.size
        tag, check, tag_size = self._mac.tag, self._mac.check, PACKET_TAG_BYTES
        while not self.stop.is_set():
            wait = max(0.0, next_send - time.monotonic())
            try:
                readable, _, _ = select.select([sock], [], [], min(wait, 0.5))
            except (OSError, ValueError):
                break
            if readable:
                while True:
                    try:
                        data, addr = sock.recvfrom(64)
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError:
                        break
                    now_ns = time.perf_counter_ns()
                    if len(data) != size + tag_size:
                        continue
                    header = data[:size]
                    magic, kind, number, sent_ns = unpack(header)
                    if magic != _MAGIC:
                        continue
                    if not check(header, data[size:]):
                        self.m.echo_rejected.inc()
                        continue
                    if kind == _REQUEST:
                        try:
                            reply = pack(_MAGIC, _REPLY, number, sent_ns)
                            sock.sendto(reply + tag(reply), addr)
                            self.m.echo_replies.inc()
                        except OSError:
                            pass
                    elif kind == _REPLY:
                        entry = pending.pop(number, None)
                        if entry is None or entry[1] != sent_ns:
                            continue  # late (already counted lost) or foreign
                        rtt_ns = now_ns - sent_ns
                        state = entry[0]
                        if rtt_ns > timeout_ns:
                            if not histograms:
                                state.outcomes.append((sent_ns, -1.0))
                            continue
                        if histograms:
                            state.received.inc()
                            if state.hist is None:
                                state.hist = self.m.rtt.labels(self.m.node, state.peer.name)
                            state.hist.observe(rtt_ns / 1e9)
                        else:
                            state.outcomes.append((sent_ns, rtt_ns / 1e9))
            now = time.monotonic()
            if now >= next_send:
                next_send += period
                if next_send < now:  # fell behind (suspended): skip, do not burst
                    next_send = now + period
                for state in list(self._states.values()):
                    seq = (seq + 1) & 0xFFFFFFFF
                    sent_ns = time.perf_counter_ns()
                    pending[seq] = (state, sent_ns)
                    if histograms:
                        state.sent.inc()
                    request = pack(_MAGIC, _REQUEST, seq, sent_ns)
                    try:  # noqa: SIM105 - hot path, suppress() costs a context manager per packet
                        sock.sendto(request + tag(request), state.addr)
                    except OSError:
                        pass  # counted as sent and lost
                # expire unanswered probes (insertion order == send order)
                horizon = time.perf_counter_ns() - timeout_ns
                while pending:
                    first = next(iter(pending))
                    if pending[first][1] >= horizon:
                        break
                    expired, expired_ns = pending.popitem(last=False)[1]
                    if not histograms:
                        expired.outcomes.append((expired_ns, -1.0))

    # -- bandwidth --------------------------------------------------------------------------------
    def _supervise(self) -> None:
        cfg = self.config
        next_test = time.monotonic() + random.uniform(0.2, 1.0) * min(cfg.iperf_interval, 10.0)
        next_discovery = time.monotonic()
        rr = 0
        while not self.stop.is_set():
            now = time.monotonic()
            if cfg.iperf_enabled:
                starts = self.iperf_server.starts
                self.leases.server_ready = self.iperf_server.check()
                if self.iperf_server.starts != starts:
                    self.m.iperf_server_starts.inc(self.iperf_server.starts - starts)
            if cfg.netaware_url and now >= next_discovery:
                self._discover()
                next_discovery = now + cfg.discovery_interval
            if self._current_epoch(time.time()) != self._epoch:  # rotation: a new sample of peers
                with self._peers_lock:
                    self._apply_fanout(time.time())
            if cfg.iperf_enabled and now >= next_test:
                names = [name for name in self._bandwidth_peers if name in self._known]
                if names:
                    peer = self._known.get(names[rr % len(names)])
                    rr += 1
                    if peer is not None:
                        self._bandwidth_test(peer)
                next_test = time.monotonic() + cfg.iperf_interval * random.uniform(0.9, 1.1)
            self.stop.wait(min(1.0, max(0.05, next_test - time.monotonic())))

    def _bandwidth_test(self, peer: Peer, attempts: int = 4) -> None:
        cfg = self.config
        ttl = cfg.iperf_duration + LEASE_GRACE_SECONDS
        for attempt in range(attempts):
            if self.stop.is_set():
                return
            try:
                token, iperf_port = take_lease(peer.base_url, cfg.node, ttl, secret=cfg.secret)
            except LeaseBusy as busy:
                # the lease TTL is generous; the holder's test is usually over after its duration
                delay = min(busy.retry_after, cfg.iperf_duration + 0.5) + random.uniform(0.1, 1.0) * (attempt + 1)
                log.debug("%s busy; retrying in %.1fs", peer.name, delay)
                if self.stop.wait(delay):
                    return
                continue
            except (OSError, ValueError, KeyError) as exc:
                self.m.iperf_tests.labels("error").inc()
                log.info("lease from %s failed: %s", peer.name, exc)
                return
            try:
                bps = run_iperf3(cfg.iperf_binary, peer.host, iperf_port, cfg.iperf_duration, stop=self.stop)
            except (OSError, ValueError, TimeoutError) as exc:
                self.m.iperf_tests.labels("error").inc()
                log.info("iperf3 to %s failed: %s", peer.name, exc)
                return
            finally:
                release_lease(peer.base_url, token, secret=cfg.secret)
            if peer.name in self._bandwidth_peers:
                self.m.bandwidth.labels(cfg.node, peer.name).set(bps)
                self.m.bandwidth_ts.labels(cfg.node, peer.name).set(time.time())
            self.m.iperf_tests.labels("ok").inc()
            log.debug("bandwidth %s -> %s: %.1f Mbit/s", cfg.node, peer.name, bps / 1e6)
            return
        self.m.iperf_tests.labels("busy").inc()

    # -- HTTP: /metrics and the lease -------------------------------------------------------------
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        agent = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, generate_latest(agent.m.registry), CONTENT_TYPE_LATEST)
                elif path == "/healthz":
                    self._json(200, {"node": agent.config.node, "peers": sorted(agent._peers),
                                     "known": len(agent._known), "epoch": agent._epoch})
                else:
                    self._json(404, {"error": f"no such path {path}"})

            def _body(self) -> bytes | None:
                try:
                    length = int(self.headers.get("Content-Length") or 0)
                except ValueError:
                    length = -1
                if not 0 <= length <= 4096:
                    self._json(413 if length > 4096 else 400, {"error": "Content-Length: 0..4096 bytes"})
                    return None
                return self.rfile.read(length) if length else b""

            def _authentic(self, body: bytes) -> bool:
                headers = {name: self.headers.get(name) or "" for name in AUTH_HEADERS}  # case-insensitive
                reason = agent._verifier.verify(self.command, self.path, headers, body)
                if reason is None:
                    return True
                agent.m.leases.labels("unauthorized").inc()
                log.info("refused %s %s from %s: %s", self.command, self.path, self.client_address[0], reason)
                self._json(401, {"error": reason}, extra={"WWW-Authenticate": "NetawareHMAC"})
                return False

            def do_POST(self) -> None:
                if self.path.split("?", 1)[0] != "/iperf/lease":
                    self._json(404, {"error": "no such path"})
                    return
                raw = self._body()
                if raw is None or not self._authentic(raw):
                    return
                try:
                    body = json.loads(raw or b"{}")
                    if not isinstance(body, dict):
                        raise ValueError
                    ttl = float(body.get("ttl", MAX_TEST_SECONDS + LEASE_GRACE_SECONDS))
                    holder = str(body.get("client", "?"))[:253]
                except (ValueError, TypeError):
                    self._json(400, {"ttl": "must be a number of seconds", "client": "must be a node name"})
                    return
                if not agent.config.iperf_enabled:
                    status, payload = 503, {"error": "bandwidth tests disabled", "retry_after": 60.0}
                else:
                    status, payload = agent.leases.acquire(holder, ttl)
                agent.m.leases.labels({200: "granted", 409: "busy"}.get(status, "unavailable")).inc()
                self._json(status, payload)

            def do_DELETE(self) -> None:
                path = self.path.split("?", 1)[0]
                if not path.startswith("/iperf/lease/"):
                    self._json(404, {"error": "no such path"})
                    return
                raw = self._body()
                if raw is None or not self._authentic(raw):
                    return
                released = agent.leases.release(path.rsplit("/", 1)[1])
                self._json(200 if released else 404, {"released": released})

            def _json(self, status: int, payload: Any, extra: Mapping[str, str] | None = None) -> None:
                self._send(status, json.dumps(payload).encode(), "application/json", extra)

            def _send(self, status: int, body: bytes, ctype: str, extra: Mapping[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for key, value in (extra or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> None:
        if self.config.iperf_enabled:
            self.leases.server_ready = self.iperf_server.check()
            self.m.iperf_server_starts.inc(self.iperf_server.starts)
        for name, target in (("udp", self._udp_loop), ("http", self.httpd.serve_forever),
                             ("supervisor", self._supervise)):
            thread = threading.Thread(target=target, name=f"agent-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        k = self.config.fanout.max_peers
        log.info("agent %s listening on %s:%d (udp echo + http), %d static peers, fan-out K=%s, %s export, "
                 "iperf3 server :%d%s", self.config.node, self.config.bind, self.config.port,
                 len(self.config.static_peers), k or "full mesh", self.config.rtt_export,
                 self.config.iperf_port, "" if self.config.iperf_enabled else " (disabled)")

    def shutdown(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        for thread in self._threads:
            thread.join(timeout=10)
        self.sock.close()
        self.iperf_server.stop()
        log.info("agent %s stopped", self.config.node)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        config = load_config(argv)
    except ConfigError as exc:
        print(f"netaware-agent: error: {exc}", file=sys.stderr)
        return 2
    try:
        agent = Agent(config)
    except OSError as exc:
        print(f"netaware-agent: error: --metrics-port: cannot listen on {config.bind}:{config.port}: {exc}",
              file=sys.stderr)
        return 2
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        log.info("signal %d: shutting down", signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    agent.start()
    while not stop.wait(3600):
        pass
    agent.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
