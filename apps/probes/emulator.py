"""Emulated cluster: serve, per scenario node, the metrics a real probe agent and node_exporter export.

The emulator is the demo's and the tests' stand-in for a cluster of probe agents (docs/scenarios.md).
Everything is drawn lazily: on each ``render`` the samples for the wall-clock time elapsed since the
previous one are generated at ``ping_rate_hz`` per directed pair in one vectorized step, so
counters and histograms advance exactly as if probes had been running all along and a Prometheus
scraping it sees the same ``rate()``/``increase()`` shapes as with real agents.

Distributions (documented in docs/scenarios.md):

* RTT: lognormal with shape ``sigma = jitter`` scaled so that its **p90 equals the scenario's
  ``latency_ms``** (the scenario's latency is the RTT the topology reports, and the topology
  reports p90 by default); p50 sits below and p99 above, so the three quantiles differ.
* loss: every probe is lost independently with probability ``loss_pct / 100``.
* bandwidth: a periodic "iperf3 test" per pair draws ``N(nominal, (0.03 nominal)^2)``.
* unreachable pairs: probes are sent but never answered; no RTT observation and no bandwidth.
* unmeasured pairs: never probed (no series at all); stale pairs: probed until ``after_s`` seconds
  after the start, then dropped like a pair leaving the fan-out (their series disappear).
"""

from __future__ import annotations

import bisect
import json
import math
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

import numpy as np
from prometheus_client.utils import floatToGoString
from scipy.special import ndtri

from apps.probes import metrics
from apps.probes.fanout import (
    DEFAULT_BANDWIDTH_PEERS,
    FanoutNode,
    FanoutSettings,
    layout,
    node_epoch,
    peers_of,
)
from apps.probes.scenario import LinkSpec, Scenario

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_Z90 = 1.2815515655446004  # standard normal 0.9 quantile
_BANDWIDTH_NOISE = 0.03
_MAX_CELLS = 2_000_000  # pair x sample cells per vectorized step: bounds memory after a long idle
_NODE_PATH = re.compile(r"^/nodes/([^/]+)/metrics/?$")
# prometheus_client's process collector on Linux: what every real agent adds to its pair series.
_PROCESS_SERIES: tuple[tuple[str, str, float], ...] = (
    ("process_virtual_memory_bytes", "gauge", 180e6),
    ("process_resident_memory_bytes", "gauge", 26e6),
    ("process_start_time_seconds", "gauge", 0.0),
    ("process_cpu_seconds_total", "counter", 1.0),
    ("process_open_fds", "gauge", 9.0),
    ("process_max_fds", "gauge", 1048576.0),
)


def _labels(**labels: str) -> str:
    inner = ",".join(f'{key}="{_escape(value)}"' for key, value in labels.items())
    return "{" + inner + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _num(value: float) -> str:
    return cast(str, floatToGoString(value))


@dataclass
class EmulatorServer:
    """A running HTTP server for an :class:`Emulator`; ``stop()`` shuts it down."""

    httpd: ThreadingHTTPServer
    thread: threading.Thread
    host: str

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


class Emulator:
    """Metrics of every node of a scenario, advancing with the clock, following the fan-out."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        seed: int = 0,
        ping_rate_hz: float = 5.0,
        clock: Callable[[], float] = time.time,
        bandwidth_interval_s: float = 60.0,
        export: str = metrics.EXPORT_QUANTILES,
        fanout: FanoutSettings | None = None,
        bandwidth_peers: int = DEFAULT_BANDWIDTH_PEERS,
        quantile_window_s: float = 300.0,
    ) -> None:
        if ping_rate_hz <= 0:
            raise ValueError("ping_rate_hz must be positive")
        if bandwidth_interval_s <= 0:
            raise ValueError("bandwidth_interval_s must be positive")
        if export not in metrics.EXPORT_MODES:
            raise ValueError(f"export must be one of {metrics.EXPORT_MODES}, got {export!r}")
        if quantile_window_s <= 0:
            raise ValueError("quantile_window_s must be positive")
        if bandwidth_peers < 0:
            raise ValueError("bandwidth_peers must be >= 0")
        self.scenario = scenario
        self.ping_rate_hz = float(ping_rate_hz)
        self.bandwidth_interval_s = float(bandwidth_interval_s)
        self.export = export
        self.histograms = export == metrics.EXPORT_HISTOGRAM
        self.fanout = fanout if fanout is not None else FanoutSettings()  # the agents' default fan-out (K = 24, docs/scale.md)
        self.bandwidth_fanout = FanoutSettings(max_peers=bandwidth_peers, min_pairs=self.fanout.min_pairs,
                                                  rotation_seconds=self.fanout.rotation_seconds)
        self.quantile_window_s = float(quantile_window_s)
        self._clock = clock
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()
        self.renders = 0

        names = scenario.node_names
        self.node_names = names
        self._index = {name: i for i, name in enumerate(names)}
        self._spec = {node.name: node for node in scenario.nodes}
        self._fanout_nodes = [FanoutNode(n.name, n.zone, n.region) for n in scenario.nodes]
        self._layout = layout(self._fanout_nodes)
        self._buckets = np.asarray(metrics.RTT_BUCKETS, dtype=float)
        self._bucket_labels = [_num(b) for b in metrics.RTT_BUCKETS] + ["+Inf"]
        self._quantile_labels = [metrics.quantile_label(q) for q in metrics.QUANTILES]

        n_nodes = len(names)
        self._cpus = [max(1, math.ceil(node.cpu_millicores / 1000)) for node in scenario.nodes]
        self._cpu_util = np.array([node.cpu_utilization for node in scenario.nodes])
        self._mem_util = np.array([node.memory_utilization for node in scenario.nodes])
        self._mem_total = np.array([node.memory_bytes for node in scenario.nodes], dtype=float)
        self._cpu_seconds = np.zeros((n_nodes, 3))  # idle, user, system summed over the node's cpus
        self._tx_bytes = np.zeros(n_nodes)
        self._mem_available = self._mem_total * (1.0 - self._mem_util)

        self._start = float(clock())
        self._last = self._start
        self._pings_done = 0
        self._epoch: tuple[int, ...] | None = None
        self._hidden: frozenset[tuple[str, str]] = frozenset()
        self._stale_times = sorted(scenario.stale.values())
        self._stale_expired = -1
        self._unobserved_now: frozenset[tuple[str, str]] = frozenset()
        self._links_changed = False
        self._pairs: list[tuple[str, str]] = []
        self._rows_of: dict[str, range] = {}
        self._activate(self._start)
        self._advance(self._start)

    # -- the fan-out ------------------------------------------------------------------------------
    def _epochs(self, now: float) -> tuple[int, ...]:
        return tuple(node_epoch(self._layout, name, self.fanout, now) for name in self.node_names)

    def fanout_at(self, now: float) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
        """(probe fan-out, bandwidth fan-out) of every node at ``now``: what real agents would do."""
        epochs = dict(zip(self.node_names, self._epochs(now), strict=True))
        probes = {name: peers_of(self._layout, name, self.fanout, epochs[name]) for name in self.node_names}
        if self.bandwidth_fanout.max_peers == 0:
            bandwidth = {name: tuple(n for n in self.node_names if n != name) for name in self.node_names}
        else:
            bandwidth = {name: peers_of(self._layout, name, self.bandwidth_fanout, epochs[name])
                         for name in self.node_names}
        hidden = self._unobserved(now)
        if hidden:  # the scenario's unmeasured pairs, and its stale ones once their agent stopped
            probes = {s: tuple(t for t in peers if (s, t) not in hidden) for s, peers in probes.items()}
            bandwidth = {s: tuple(t for t in peers if (s, t) not in hidden) for s, peers in bandwidth.items()}
        return probes, bandwidth

    def _unobserved(self, now: float) -> frozenset[tuple[str, str]]:
        """The scenario's hidden pairs at ``now``, rebuilt only when another stale pair's time has come
        (this runs on every render)."""
        expired = bisect.bisect_right(self._stale_times, now - self._start)
        if expired != self._stale_expired:
            self._stale_expired = expired
            self._unobserved_now = self.scenario.unobserved(now - self._start)
        return self._unobserved_now

    def _link(self, source: str, target: str) -> LinkSpec | None:
        sc = self.scenario
        if (source, target) in sc.unreachable:
            return None
        link = sc.node_links.get((source, target))
        if link is not None:
            return link
        return sc.zone_links.get((self._spec[source].zone, self._spec[target].zone))

    def _activate(self, now: float) -> None:
        """Switch to the fan-out of ``now``'s epoch, keeping the state of pairs that stay."""
        epoch = self._epochs(now)  # every node's own (staggered) epoch
        hidden = self._unobserved(now)
        if epoch == self._epoch and hidden == self._hidden and not self._links_changed:
            return
        self._hidden = hidden
        self._links_changed = False
        probes, bandwidth = self.fanout_at(now)
        pairs: list[tuple[str, str]] = []
        probed: list[bool] = []
        tested: list[bool] = []
        rows_of: dict[str, range] = {}
        for name in self.node_names:
            first = len(pairs)
            p_set, b_set = set(probes[name]), set(bandwidth[name])
            for target in sorted(p_set | b_set, key=self._index.__getitem__):
                pairs.append((name, target))
                probed.append(target in p_set)
                tested.append(target in b_set)
            rows_of[name] = range(first, len(pairs))
        n = len(pairs)
        old = {pair: row for row, pair in enumerate(self._pairs)} if self._epoch is not None else {}
        keep_new = np.fromiter((i for i, pair in enumerate(pairs) if pair in old), dtype=np.int64)
        keep_old = np.fromiter((old[pairs[i]] for i in keep_new), dtype=np.int64, count=keep_new.size)

        latency = np.full(n, np.nan)
        jitter = np.zeros(n)
        loss = np.ones(n)
        bw = np.full(n, np.nan)
        for i, (s, t) in enumerate(pairs):
            link = self._link(s, t)
            if link is None:
                continue
            latency[i] = link.latency_ms / 1000.0
            jitter[i] = link.jitter
            loss[i] = link.loss_pct / 100.0
            bw[i] = link.bandwidth_mbps * 1e6
        reachable = ~np.isnan(latency)
        new_probed = np.asarray(probed, dtype=bool)
        new_tested = np.asarray(tested, dtype=bool)

        def carried(name: str, fill: float | int, dtype: Any, shape: tuple[int, ...] = ()) -> np.ndarray:
            out = np.full((n, *shape), fill, dtype=dtype)
            prev = getattr(self, name, None)
            if prev is not None and keep_new.size:
                out[keep_new] = prev[keep_old]
            return out

        n_buckets = len(self._buckets) + 1
        hist = carried("_hist", 0, np.int64, (n_buckets,))
        rtt_sum = carried("_rtt_sum", 0.0, float)
        sent = carried("_sent", 0, np.int64)
        received = carried("_received", 0, np.int64)
        bw_value = carried("_bw_value", np.nan, float)
        bw_ts = carried("_bw_ts", np.nan, float)
        bw_next = carried("_bw_next", np.nan, float)
        since = carried("_since", now, float)
        # A pair leaving the probe fan-out is forgotten by its agent (series removed, counters restart
        # from 0 when it comes back); one leaving the bandwidth fan-out loses its bandwidth gauges.
        was_probed = carried("_probed", False, bool)
        was_tested = carried("_tested", False, bool)
        restart = new_probed & ~was_probed
        hist[restart] = 0
        rtt_sum[restart] = 0.0
        sent[restart] = 0
        received[restart] = 0
        # a real agent switched at its own rotation instant, not when the emulator next looked
        switched = {name: max(self._start, (e + self._layout.rank_of[name] /
                                            len(self._layout.zones[self._layout.zone_of[name]].members))
                              * self.fanout.rotation_seconds)
                    for name, e in zip(self.node_names, epoch, strict=True)}
        rows = np.flatnonzero(restart)
        since[rows] = np.fromiter((min(now, switched[pairs[i][0]]) for i in rows), dtype=float, count=rows.size)
        untested = new_tested & ~was_tested
        bw_value[untested] = np.nan
        bw_ts[untested] = np.nan
        # a newly planned pair's first test comes within 5 s (at most one interval)
        bw_next[untested] = now + self._rng.uniform(0.0, min(5.0, self.bandwidth_interval_s), int(untested.sum()))
        bw_next[~(new_tested & reachable)] = np.inf

        self._pairs, self._rows_of, self._epoch = pairs, rows_of, epoch
        self._probed, self._tested, self._reachable = new_probed, new_tested, reachable
        self._sigma = jitter
        # lognormal median m with p90 == nominal: m = nominal * exp(-z90 * sigma)
        self._log_median = np.where(reachable, np.log(np.where(reachable, latency, 1.0)) - _Z90 * jitter, 0.0)
        self._loss = loss
        self._bandwidth_nominal = bw
        self._hist, self._rtt_sum, self._sent, self._received = hist, rtt_sum, sent, received
        self._bw_value, self._bw_ts, self._bw_next, self._since = bw_value, bw_ts, bw_next, since
        self._probed_rows = np.flatnonzero(new_probed)

    def degrade(self, zone_a: str, zone_b: str, *, rtt_ms: float, loss: float) -> tuple[LinkSpec, LinkSpec]:
        """Change the link between two zones (both directions) from now on: its RTT (the p90, like a
        scenario's ``latency_ms``) and its loss (a fraction). The demo's "a link degrades"; the pairs'
        counters carry on, as real agents' would. Returns the new (a->b, b->a) links."""
        zones = set(self.scenario.zones())
        for name, zone in (("zone_a", zone_a), ("zone_b", zone_b)):
            if zone not in zones:
                raise ValueError(f"{name}: unknown zone {zone!r} (the scenario's: {', '.join(sorted(zones))})")
        if not (math.isfinite(rtt_ms) and rtt_ms > 0):
            raise ValueError("rtt_ms must be a positive number of milliseconds")
        if not (math.isfinite(loss) and 0 <= loss < 1):
            raise ValueError("loss must be a fraction in [0, 1)")
        links = dict(self.scenario.zone_links)
        changed = []
        for pair in ((zone_a, zone_b), (zone_b, zone_a)):
            old = links.get(pair) or LinkSpec(latency_ms=rtt_ms, loss_pct=0.0, bandwidth_mbps=1000.0, jitter=0.1)
            links[pair] = LinkSpec(latency_ms=float(rtt_ms), loss_pct=float(loss) * 100.0,
                                   bandwidth_mbps=old.bandwidth_mbps, jitter=old.jitter)
            changed.append(links[pair])
        with self._lock:
            self.scenario = replace(self.scenario, zone_links=links)
            self._links_changed = True
            self._activate(float(self._clock()))
        return changed[0], changed[1]

    @property
    def active_pairs(self) -> int:
        """Directed pairs probed right now."""
        return int(self._probed.sum())

    # -- simulation -------------------------------------------------------------------------------
    def _advance(self, now: float) -> None:
        elapsed = now - self._last
        if elapsed > 0:
            self._advance_nodes(elapsed)
            self._last = now
        due = math.floor((now - self._start) * self.ping_rate_hz) - self._pings_done
        if self.histograms:
            rows = max(1, self._probed_rows.size)
            while due > 0:
                chunk = min(due, max(1, _MAX_CELLS // rows))
                self._ping(chunk)
                self._pings_done += chunk
                due -= chunk
        else:  # quantile export keeps no per-probe state: drawn at render time
            self._pings_done += max(due, 0)
        self._bandwidth_tests(now)
        self._activate(now)

    def _ping(self, n: int) -> None:
        rows = self._probed_rows
        if rows.size == 0:
            return
        n_rows = rows.size
        n_cols = len(self._buckets) + 2
        self._sent[rows] += n
        answered = self._rng.random((n_rows, n)) >= self._loss[rows, None]
        answered &= self._reachable[rows, None]
        z = self._rng.standard_normal((n_rows, n))
        rtt = np.exp(self._log_median[rows, None] + self._sigma[rows, None] * z)
        self._received[rows] += answered.sum(axis=1)
        self._rtt_sum[rows] += np.where(answered, rtt, 0.0).sum(axis=1)
        # bucket index per sample; le semantics: value <= bound falls in that bucket
        idx = np.searchsorted(self._buckets, rtt, side="left")
        idx = np.where(answered, idx, len(self._buckets) + 1)  # unanswered -> a discard column
        flat = idx + (np.arange(n_rows)[:, None] * n_cols)
        counts = np.bincount(flat.ravel(), minlength=n_rows * n_cols)
        self._hist[rows] += counts.reshape(n_rows, n_cols)[:, : len(self._buckets) + 1]

    def _bandwidth_tests(self, now: float) -> None:
        due = (self._bw_next <= now) & self._reachable & self._tested
        if not due.any():
            return
        rows = np.flatnonzero(due)
        draws = self._bandwidth_nominal[rows] * (1.0 + _BANDWIDTH_NOISE * self._rng.standard_normal(rows.size))
        self._bw_value[rows] = np.maximum(draws, 0.0)
        # the latest test that was due happened at the last scheduled slot before now
        missed = np.floor((now - self._bw_next[rows]) / self.bandwidth_interval_s)
        self._bw_ts[rows] = self._bw_next[rows] + missed * self.bandwidth_interval_s
        self._bw_next[rows] = self._bw_ts[rows] + self.bandwidth_interval_s

    def _quantiles(self, rows: np.ndarray, now: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(probes sent in the window, loss ratio, RTT quantiles (rows x 3)) as an agent would export them.

        The k-th smallest of n answered RTTs is ``exp(mu + sigma * Phi^-1(U_(k)))`` with ``U_(k)`` the
        k-th order statistic of n uniforms, drawn exactly and jointly for the three quantiles:
        ``U_(k1) ~ Beta(k1, n+1-k1)``, then each next one fills the rest of (U_(k1), 1) with a Beta of
        the ranks between -- no per-probe samples needed, so 1,000 nodes cost microseconds per render.
        """
        window = np.minimum(self.quantile_window_s, now - self._since[rows])
        sent = np.floor(np.maximum(window, 0.0) * self.ping_rate_hz).astype(np.int64)
        p_answer = np.where(self._reachable[rows], 1.0 - self._loss[rows], 0.0)
        answered = self._rng.binomial(sent, p_answer)
        with np.errstate(invalid="ignore", divide="ignore"):
            loss = np.where(sent > 0, 1.0 - answered / np.maximum(sent, 1), np.nan)
        values = np.full((rows.size, len(metrics.QUANTILES)), np.nan)
        ok = answered > 0
        if ok.any():
            n = answered[ok].astype(float)
            u = np.zeros(n.size)
            prev_k = np.zeros(n.size)
            for j, q in enumerate(metrics.QUANTILES):
                k = np.clip(np.ceil(q * n), 1, n)
                gap = k - prev_k
                step = np.where(gap > 0, self._rng.beta(np.maximum(gap, 1e-9), n + 1 - k), 0.0)
                u = u + (1.0 - u) * step
                prev_k = k
                z = ndtri(np.clip(u, 1e-12, 1 - 1e-12))
                values[ok, j] = np.exp(self._log_median[rows][ok] + self._sigma[rows][ok] * z)
        return sent, loss, values

    def _advance_nodes(self, elapsed: float) -> None:
        n_nodes = len(self.node_names)
        noise = self._rng.normal(0.0, 0.05, n_nodes)
        busy = np.clip(self._cpu_util + noise, 0.0, 1.0)
        cpus = np.asarray(self._cpus, dtype=float)
        self._cpu_seconds[:, 0] += (1.0 - busy) * elapsed * cpus
        self._cpu_seconds[:, 1] += 0.7 * busy * elapsed * cpus
        self._cpu_seconds[:, 2] += 0.3 * busy * elapsed * cpus
        mem = np.clip(self._mem_util + self._rng.normal(0.0, 0.02, n_nodes), 0.0, 1.0)
        self._mem_available = self._mem_total * (1.0 - mem)
        # background traffic: 1 MB/s per unit of CPU utilisation, plus noise
        rate = np.clip(1e6 * (0.2 + busy) * (1.0 + self._rng.normal(0.0, 0.1, n_nodes)), 0.0, None)
        self._tx_bytes += rate * elapsed

    # -- exposition -------------------------------------------------------------------------------
    def render(self, node: str) -> bytes:
        """Prometheus text exposition (0.0.4) of everything ``node``'s agent and node_exporter export."""
        if node not in self._index:
            raise KeyError(node)
        with self._lock:
            now = float(self._clock())
            self._advance(now)
            self.renders += 1
            return self._render_locked(node, now)

    def _render_locked(self, node: str, now: float) -> bytes:
        spec = self._spec[node]
        rows = self._rows_of[node]
        out: list[str] = []
        add = out.append

        add(f"# HELP {metrics.NODE_INFO} Node placement of this probe agent.")
        add(f"# TYPE {metrics.NODE_INFO} gauge")
        add(f"{metrics.NODE_INFO}{_labels(node=node, zone=spec.zone, region=spec.region)} 1.0")

        probed = [row for row in rows if self._probed[row]]
        if self.histograms:
            add(f"# HELP {metrics.RTT_HISTOGRAM} Round-trip time of UDP echo probes.")
            add(f"# TYPE {metrics.RTT_HISTOGRAM} histogram")
            for row in probed:
                count = int(self._received[row])
                if count == 0:
                    continue  # a real agent creates the histogram child on its first answered probe
                target = self._pairs[row][1]
                cumulative = np.cumsum(self._hist[row])
                for le, value in zip(self._bucket_labels, cumulative, strict=True):
                    add(f'{metrics.RTT_HISTOGRAM}_bucket{{source="{node}",target="{target}",le="{le}"}} {_num(float(value))}')
                add(f'{metrics.RTT_HISTOGRAM}_count{{source="{node}",target="{target}"}} {_num(float(count))}')
                add(f'{metrics.RTT_HISTOGRAM}_sum{{source="{node}",target="{target}"}} {_num(float(self._rtt_sum[row]))}')

            self._add_pair_family(add, node, metrics.PACKETS_SENT, "counter", "Probe packets sent.",
                                  probed, self._sent)
            self._add_pair_family(add, node, metrics.PACKETS_RECEIVED, "counter", "Probe replies received in time.",
                                  probed, self._received)
        else:
            index = np.asarray(probed, dtype=np.int64)
            sent, loss, values = self._quantiles(index, now)
            add(f"# HELP {metrics.RTT_QUANTILE} RTT quantiles of the probes answered within the agent's "
                "quantile window.")
            add(f"# TYPE {metrics.RTT_QUANTILE} gauge")
            for i, row in enumerate(probed):
                if np.isnan(values[i, 0]):
                    continue
                target = self._pairs[row][1]
                for label, value in zip(self._quantile_labels, values[i], strict=True):
                    add(f'{metrics.RTT_QUANTILE}{{source="{node}",target="{target}",quantile="{label}"}} '
                        f"{_num(float(value))}")
            add(f"# HELP {metrics.LOSS_RATIO} Share of the probes sent within the agent's quantile window "
                "that got no reply in time.")
            add(f"# TYPE {metrics.LOSS_RATIO} gauge")
            for i, row in enumerate(probed):
                if sent[i] > 0:
                    add(f'{metrics.LOSS_RATIO}{{source="{node}",target="{self._pairs[row][1]}"}} '
                        f"{_num(float(loss[i]))}")

        for name, values, help_text in (
            (metrics.BANDWIDTH, self._bw_value, "Throughput of the latest iperf3 test."),
            (metrics.BANDWIDTH_TIMESTAMP, self._bw_ts, "Unix time of the latest iperf3 test."),
        ):
            tested = [row for row in rows if self._tested[row] and not math.isnan(values[row])]
            self._add_pair_family(add, node, name, "gauge", help_text, tested, values)

        self._render_agent_self(add, node, len(probed), now)

        i = self._index[node]
        cpus = self._cpus[i]
        add("# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.")
        add("# TYPE node_cpu_seconds_total counter")
        for cpu in range(cpus):
            for col, mode in enumerate(("idle", "user", "system")):
                add(f'node_cpu_seconds_total{{cpu="{cpu}",mode="{mode}"}} {_num(float(self._cpu_seconds[i, col] / cpus))}')
        add("# HELP node_memory_MemTotal_bytes Memory information field MemTotal_bytes.")
        add("# TYPE node_memory_MemTotal_bytes gauge")
        add(f"node_memory_MemTotal_bytes {_num(float(self._mem_total[i]))}")
        add("# HELP node_memory_MemAvailable_bytes Memory information field MemAvailable_bytes.")
        add("# TYPE node_memory_MemAvailable_bytes gauge")
        add(f"node_memory_MemAvailable_bytes {_num(float(self._mem_available[i]))}")
        add("# HELP node_network_transmit_bytes_total Network device statistic transmit_bytes.")
        add("# TYPE node_network_transmit_bytes_total counter")
        add(f'node_network_transmit_bytes_total{{device="eth0"}} {_num(float(self._tx_bytes[i]))}')
        return ("\n".join(out) + "\n").encode()

    def _add_pair_family(self, add: Callable[[str], None], node: str, name: str, kind: str, help_text: str,
                         rows: Sequence[int], values: np.ndarray) -> None:
        """One metric family with a sample per (node, target) row, as the agent exports it."""
        add(f"# HELP {name} {help_text}")
        add(f"# TYPE {name} {kind}")
        for row in rows:
            add(f'{name}{{source="{node}",target="{self._pairs[row][1]}"}} {_num(float(values[row]))}')

    def _render_agent_self(self, add: Callable[[str], None], node: str, peers: int, now: float) -> None:
        """The agent's self-metrics (same families and label sets), so series counts match a real agent."""
        uptime = now - self._start
        tests = math.floor(uptime / 30.0)
        for name, kind, help_text, samples in (
            ("netaware_probe_iperf_tests_total", "counter", "Bandwidth tests run by this agent.",
             [('{result="ok"}', tests), ('{result="busy"}', 0), ('{result="error"}', 0)]),
            ("netaware_probe_iperf_server_starts_total", "counter", "Starts of this agent's iperf3 server child.",
             [("", 1)]),
            ("netaware_probe_iperf_leases_total", "counter", "Lease requests answered by this agent.",
             [('{result="granted"}', tests), ('{result="busy"}', 0), ('{result="unavailable"}', 0),
              ('{result="unauthorized"}', 0)]),
            ("netaware_probe_echo_replies_total", "counter", "Probe requests answered for peers.",
             [("", math.floor(uptime * self.ping_rate_hz) * peers)]),
            ("netaware_probe_echo_rejected_total", "counter",
             "UDP packets dropped for a bad or missing authentication tag.", [("", 0)]),
            ("netaware_probe_peers", "gauge", "Peers currently probed.", [("", peers)]),
            ("netaware_probe_discovery_total", "counter", "Peer discovery attempts.",
             [('{result="ok"}', 1 + math.floor(uptime / 60.0))]),
        ):
            add(f"# HELP {name} {help_text}")
            add(f"# TYPE {name} {kind}")
            for labels, value in samples:
                add(f"{name}{labels} {_num(float(value))}")
        for pname, pkind, pvalue in _PROCESS_SERIES:
            add(f"# TYPE {pname} {pkind}")
            add(f"{pname} {_num(pvalue if pname != 'process_start_time_seconds' else self._start)}")

    def render_self(self) -> bytes:
        """The emulator's own metrics (served at ``/metrics``)."""
        lines = [
            "# HELP netaware_emulator_nodes Nodes in the emulated scenario.",
            "# TYPE netaware_emulator_nodes gauge",
            f'netaware_emulator_nodes{{scenario="{_escape(self.scenario.name)}"}} {len(self.node_names)}.0',
            "# HELP netaware_emulator_renders_total Node metric pages rendered.",
            "# TYPE netaware_emulator_renders_total counter",
            f"netaware_emulator_renders_total {float(self.renders)}",
            "# HELP netaware_emulator_ping_rate_hz Emulated probes per second per directed pair.",
            "# TYPE netaware_emulator_ping_rate_hz gauge",
            f"netaware_emulator_ping_rate_hz {self.ping_rate_hz}",
            "# HELP netaware_emulator_active_pairs Directed pairs probed under the current fan-out.",
            "# TYPE netaware_emulator_active_pairs gauge",
            f"netaware_emulator_active_pairs {float(self.active_pairs)}",
        ]
        return ("\n".join(lines) + "\n").encode()

    # -- serving ----------------------------------------------------------------------------------
    def static_configs(self, address: str) -> list[dict[str, Any]]:
        """Prometheus ``static_configs`` for every node, all served from ``address`` (host:port)."""
        return [
            {"targets": [address], "labels": {"node": name, "__metrics_path__": f"/nodes/{name}/metrics"}}
            for name in self.node_names
        ]

    def prometheus_config(self, address: str, *, scrape_interval: str = "5s",
                          job: str = "netaware-emulator") -> dict[str, Any]:
        """A complete prometheus.yml (as a dict) scraping every emulated node at ``address``."""
        return {
            "global": {"scrape_interval": scrape_interval, "evaluation_interval": scrape_interval},
            "scrape_configs": [
                {"job_name": job, "scrape_interval": scrape_interval, "static_configs": self.static_configs(address)}
            ],
        }

    def serve(self, host: str = "127.0.0.1", port: int = 0) -> EmulatorServer:
        emulator = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                """``POST /links/degrade`` {"zones": [a, b], "rtt_ms": 40, "loss": 0.02}: ``degrade``."""
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(min(length, 65536)) if length else b""
                if self.path.split("?", 1)[0] != "/links/degrade":
                    self._send(404, b"not found: POST /links/degrade\n")
                    return
                try:
                    body = json.loads(raw or b"{}")
                    zones = body.get("zones") if isinstance(body, dict) else None
                    if not (isinstance(zones, list) and len(zones) == 2 and all(isinstance(z, str) for z in zones)):
                        raise ValueError("zones: a list of two zone names")
                    a_b, _ = emulator.degrade(zones[0], zones[1], rtt_ms=float(body.get("rtt_ms", 0)),
                                              loss=float(body.get("loss", 0)))
                except (ValueError, TypeError) as exc:
                    self._send(400, f"{exc}\n".encode())
                    return
                self._send(200, f"{zones[0]} <-> {zones[1]}: rtt {a_b.latency_ms:g} ms, loss "
                                f"{a_b.loss_pct:g} %\n".encode())

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                match = _NODE_PATH.match(path)
                if path == "/metrics":
                    self._send(200, emulator.render_self())
                elif match and match.group(1) in emulator._index:
                    self._send(200, emulator.render(match.group(1)))
                elif match:
                    self._send(404, f"unknown node {match.group(1)!r}\n".encode())
                else:
                    self._send(404, b"not found: use /nodes/<node>/metrics or /metrics\n")

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        httpd = ThreadingHTTPServer((host, port), Handler)
        httpd.daemon_threads = True
        thread = threading.Thread(target=httpd.serve_forever, name="emulator-http", daemon=True)
        thread.start()
        return EmulatorServer(httpd=httpd, thread=thread, host=host)
