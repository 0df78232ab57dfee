"""Re-pulling a window, overlapping and out-of-order windows, and duplicate points change nothing."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import numpy as np
import pytest

from apps.probes import services
from apps.probes.models import NodeSample, PairSample, PullWatermark
from tests.support.pipeline import at as _at
from tests.support.pipeline import configure_pipeline, emulated_cluster

WIDTH = 5


@pytest.fixture(scope="module")
def cluster():
    with emulated_cluster(warmup_s=12.0) as running:
        yield running


@pytest.fixture
def pipeline_settings(settings, cluster):
    return configure_pipeline(settings, cluster.url, width=WIDTH)


def _table() -> list[tuple]:
    pairs = list(PairSample.objects.order_by("id").values_list("id", "ts", "series", "source", "target", "value"))
    nodes = list(NodeSample.objects.order_by("id").values_list("id", "ts", "series", "node", "value"))
    return pairs + nodes


@pytest.mark.django_db
def test_rerunning_a_window_changes_nothing(pipeline_settings):
    end = int(time.time()) - 2
    first = services.pull_window(start=_at(end - WIDTH), end=_at(end))
    before = _table()
    assert first.rows_written == len(before) > 20
    time.sleep(1.5)  # Prometheus keeps scraping; the window's points must not move
    again = services.pull_window(start=_at(end - WIDTH), end=_at(end))
    assert again.rows_written == 0
    assert _table() == before  # same ids, same values, no extra rows


@pytest.mark.django_db
def test_overlapping_and_out_of_order_windows(pipeline_settings):
    now = datetime.now(tz=UTC)
    services.pull_metrics(now=now)  # the three newest windows, watermarks at the newest end
    marks = dict(PullWatermark.objects.values_list("query", "last_end"))
    reference = _table()
    newest = int(max(marks.values()).timestamp())
    assert reference

    # The same windows again, newest first, then one wide window overlapping all of them.
    for end in (newest, newest - 2 * WIDTH, newest - WIDTH):
        assert services.pull_window(start=_at(end - WIDTH), end=_at(end)).rows_written == 0
    assert services.pull_window(start=_at(newest - 3 * WIDTH), end=_at(newest)).rows_written == 0
    assert _table() == reference
    assert dict(PullWatermark.objects.values_list("query", "last_end")) == marks  # never rewound

    # An operator moves one watermark back: the next run re-pulls from there, changing nothing.
    PullWatermark.objects.filter(query="pair:rtt_p90").update(last_end=_at(newest - 2 * WIDTH))
    rerun = services.pull_metrics(now=now)
    assert rerun.windows == 2 and rerun.rows_written == 0
    assert _table() == reference
    assert PullWatermark.objects.get(query="pair:rtt_p90").last_end == _at(newest)


@pytest.mark.django_db
def test_store_window_drops_non_finite_and_duplicates():
    ts = _at(4_000_000_000)
    nan, inf = float("nan"), float("inf")
    result = services.store_window(
        ts=ts,
        pairs={
            "rtt_p90": (["a", "a", "b", "c", "d"], ["b", "b", "a", "d", "c"], np.array([0.001, 0.002, nan, inf, -1.0])),
            "loss_ratio": (["a", "b", "c"], ["b", "a", "d"], np.array([1.5, -0.25, -inf])),
        },
        nodes={"cpu_utilization": (["a", "b", "a"], np.array([0.5, nan, 0.7]))},
        watermark_keys=["pair:rtt_p90"],
    )
    rows = {(s, a, b): v for s, a, b, v in PairSample.objects.values_list("series", "source", "target", "value")}
    # NaN, +Inf, -Inf and negative RTT skipped (never 0); loss clipped into [0, 1]; last duplicate wins.
    assert rows == {("rtt_p90", "a", "b"): 0.002, ("loss_ratio", "a", "b"): 1.0, ("loss_ratio", "b", "a"): 0.0}
    assert dict(NodeSample.objects.values_list("node", "value")) == {"a": 0.7}
    assert result.rows_written == 4
    assert PullWatermark.objects.get(query="pair:rtt_p90").last_end == ts

    # The same points again (any order): nothing changes; a changed value is updated in place.
    again = services.store_window(ts=ts, pairs={"rtt_p90": (["a"], ["b"], np.array([0.002]))})
    assert again.rows_written == 0
    changed = services.store_window(ts=ts, pairs={"rtt_p90": (["a"], ["b"], np.array([0.003]))})
    assert changed.rows_written == 1
    assert PairSample.objects.get(series="rtt_p90").value == 0.003
    assert PairSample.objects.count() == 3
