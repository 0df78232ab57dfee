from django.db import models


class PairSeries(models.TextChoices):
    """Per directed node pair series, stored in Prometheus base units (seconds, ratio, bits/s)."""

    RTT_P50 = "rtt_p50", "RTT p50 (s)"
    RTT_P90 = "rtt_p90", "RTT p90 (s)"
    RTT_P99 = "rtt_p99", "RTT p99 (s)"
    LOSS = "loss_ratio", "Loss ratio (0..1)"
    BANDWIDTH = "bandwidth_bps", "Bandwidth (bit/s)"


class NodeSeries(models.TextChoices):
    CPU = "cpu_utilization", "CPU utilisation (0..1)"
    MEMORY = "memory_utilization", "Memory utilisation (0..1)"
    NET_USED = "net_used_bps", "Network use (bit/s)"
