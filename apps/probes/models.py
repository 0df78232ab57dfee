"""Time-series tables filled by the Celery pipeline from Prometheus.

Samples are keyed by (series, source, target, ts) with ``ts`` the end of an aligned pull window, so
re-pulling a window is an upsert that changes nothing. The unique index leads with ``ts``: a new
window's rows all land at the right edge of the B-tree, so inserts stay fast however large the
table grows (with ``series`` first, a 200-node window slowed from 1.3 s to 7+ s after 20 windows),
and the same index serves "newest per pair since T" scans. ``ts`` also carries a BRIN index for
cheap time-range scans.

Both raw tables are partitioned by ``ts``, one partition per hour (migration 0005; partitions are made
ahead by ``services.ensure_partitions``), and retention drops whole partitions after rolling them up.
"""

from django.contrib.postgres.indexes import BrinIndex
from django.db import models

from .choices import NodeSeries, PairSeries


class PairSample(models.Model):
    ts = models.DateTimeField(help_text="End of the aligned pull window")
    series = models.CharField(max_length=16, choices=PairSeries.choices)
    source = models.CharField(max_length=253)
    target = models.CharField(max_length=253)
    value = models.FloatField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["ts", "series", "source", "target"], name="pairsample_unique_point"),
            models.CheckConstraint(condition=models.Q(value__gte=0), name="pairsample_value_non_negative"),
        ]
        indexes = [BrinIndex(fields=["ts"], name="pairsample_ts_brin")]

    def __str__(self) -> str:
        return f"{self.series} {self.source}->{self.target} @ {self.ts:%Y-%m-%d %H:%M:%S}: {self.value:g}"


class NodeSample(models.Model):
    ts = models.DateTimeField()
    series = models.CharField(max_length=24, choices=NodeSeries.choices)
    node = models.CharField(max_length=253)
    value = models.FloatField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["ts", "series", "node"], name="nodesample_unique_point"),
        ]
        indexes = [BrinIndex(fields=["ts"], name="nodesample_ts_brin")]

    def __str__(self) -> str:
        return f"{self.series} {self.node} @ {self.ts:%Y-%m-%d %H:%M:%S}: {self.value:g}"


class Rollup(models.Model):
    """One hour of raw samples reduced to what retention keeps after the raw rows are dropped."""

    bucket = models.DateTimeField()
    count = models.PositiveIntegerField()
    minimum = models.FloatField()
    maximum = models.FloatField()
    mean = models.FloatField()

    class Meta:
        abstract = True


class PairRollup(Rollup):
    """Hourly roll-up of raw pair samples, kept after the raw rows are dropped."""

    series = models.CharField(max_length=16, choices=PairSeries.choices)
    source = models.CharField(max_length=253)
    target = models.CharField(max_length=253)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["bucket", "series", "source", "target"], name="pairrollup_unique"),
        ]
        indexes = [BrinIndex(fields=["bucket"], name="pairrollup_bucket_brin")]

    def __str__(self) -> str:
        return f"{self.series} {self.source}->{self.target} hour {self.bucket:%Y-%m-%d %H}:00"


class NodeRollup(Rollup):
    series = models.CharField(max_length=24, choices=NodeSeries.choices)
    node = models.CharField(max_length=253)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["bucket", "series", "node"], name="noderollup_unique")]
        indexes = [BrinIndex(fields=["bucket"], name="noderollup_bucket_brin")]

    def __str__(self) -> str:
        return f"{self.series} {self.node} hour {self.bucket:%Y-%m-%d %H}:00"


class PullWatermark(models.Model):
    """End of the newest window stored for one named query; the next pull starts there."""

    query = models.CharField(max_length=64, unique=True)
    last_end = models.DateTimeField()
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.query}: {self.last_end:%Y-%m-%d %H:%M:%S}"


class WindowDigest(models.Model):
    """Which pairs one stored window of one pair series holds: count and an order-independent hash.

    Lets ``latest_pair_values`` skip every older window whose pair set equals the newest window's
    (they cannot hold a newer sample for any pair), so reading the newest value of 40k pairs costs
    one window, not the whole look-back. ``digest`` is NULL when unknown (a window re-stored with a
    different pair set); such windows are always scanned.
    """

    series = models.CharField(max_length=16, choices=PairSeries.choices)
    ts = models.DateTimeField()
    pair_count = models.PositiveIntegerField()
    digest = models.BigIntegerField(null=True, blank=True)
    shard = models.CharField(max_length=16, default="", blank=True,
                             help_text="Pull shard that stored these pairs, e.g. 2/4; empty when unsharded")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["series", "ts", "shard"], name="windowdigest_unique")]

    def __str__(self) -> str:
        return f"{self.series} @ {self.ts:%Y-%m-%d %H:%M:%S}: {self.pair_count} pairs"


class PairLatest(models.Model):
    """The newest sample of every (series, source, target), kept by database triggers on PairSample.

    With a rotating probe fan-out every window holds a different pair set, so "newest value per pair"
    over the raw table would scan every window of the look-back (minutes at 1,000 nodes); this table
    answers it by reading one row per pair. Statement-level triggers (migration 0006) upsert each
    inserted or updated batch of raw rows, newest ``ts`` wins, whoever writes them (pipeline, tests,
    hand-made inserts). Retention prunes rows older than the raw-retention cutoff.
    """

    series = models.CharField(max_length=16, choices=PairSeries.choices)
    source = models.CharField(max_length=253)
    target = models.CharField(max_length=253)
    ts = models.DateTimeField()
    value = models.FloatField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["series", "source", "target"], name="pairlatest_unique")]

    def __str__(self) -> str:
        return f"{self.series} {self.source}->{self.target} @ {self.ts:%Y-%m-%d %H:%M:%S}: {self.value:g}"
