"""Names, labels and buckets of the metrics a probe agent exports (docs/metrics.md).

The real agent and the emulator both build their registries from these definitions, so the
pipeline's PromQL cannot tell them apart.
"""

from __future__ import annotations

RTT_HISTOGRAM = "netaware_probe_rtt_seconds"
PACKETS_SENT = "netaware_probe_packets_sent_total"
PACKETS_RECEIVED = "netaware_probe_packets_received_total"
BANDWIDTH = "netaware_probe_bandwidth_bits_per_second"
BANDWIDTH_TIMESTAMP = "netaware_probe_bandwidth_last_test_timestamp_seconds"
NODE_INFO = "netaware_node_info"

PAIR_LABELS = ("source", "target")
NODE_INFO_LABELS = ("node", "zone", "region")

# 50 µs .. 10 s: 1-1.2-1.5-2-2.5-3-4-5-6-8 steps up to 100 ms, where node-to-node RTTs live, so
# histogram_quantile's linear interpolation stays within ~10 % there; coarser from 100 ms to 10 s.
RTT_BUCKETS: tuple[float, ...] = (
    0.00005, 0.0001, 0.00015, 0.0002, 0.0003, 0.0004, 0.0005, 0.0006, 0.0008,
    0.001, 0.0012, 0.0015, 0.002, 0.0025, 0.003, 0.004, 0.005, 0.006, 0.008,
    0.01, 0.012, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.06, 0.08,
    0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0,
)

# Compact export (``--rtt-export quantiles``, the default; docs/scale.md): instead of the histogram and
# the two packet counters, each probed pair exports exact sample quantiles of the RTTs answered within
# the agent's quantile window and the loss ratio over the same probes -- 4 series per pair instead of 45.
RTT_QUANTILE = "netaware_probe_rtt_quantile_seconds"
LOSS_RATIO = "netaware_probe_loss_ratio"
QUANTILE_LABELS = ("source", "target", "quantile")
QUANTILES: tuple[float, ...] = (0.5, 0.9, 0.99)
EXPORT_QUANTILES = "quantiles"
EXPORT_HISTOGRAM = "histogram"
EXPORT_MODES = (EXPORT_QUANTILES, EXPORT_HISTOGRAM)


def quantile_label(q: float) -> str:
    """``0.5`` -> ``"0.5"``, as Prometheus summaries label quantiles."""
    return repr(float(q))


def sample_quantile(ordered: list[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default) of an ascending, non-empty list."""
    h = (len(ordered) - 1) * q
    lo = int(h)
    if lo + 1 >= len(ordered):
        return ordered[-1]
    return ordered[lo] + (h - lo) * (ordered[lo + 1] - ordered[lo])
