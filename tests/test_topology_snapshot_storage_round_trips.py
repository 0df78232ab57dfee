"""A large snapshot stores and loads through the real services (binary parameters, format 3: format 2
in zstd chunks) with the same arrays back; format-2 and format-1 (np.savez) snapshots written before
still load, identically."""

from __future__ import annotations

import io

import numpy as np
import psycopg
import pytest
from django.db import connection

from apps.topology import selectors, services
from apps.topology.models import TopologySnapshot
from apps.topology.snapshot_format import (
    CHUNKED_MAGIC,
    RAW,
    ZSTD,
    chunk_payload,
    decode_snapshot,
    decode_snapshot_arrays,
    encode_snapshot,
    parse_chunk_index,
)
from apps.topology.topomath import Topology

pytestmark = pytest.mark.django_db

N = 1500


def random_topology(n: int, seed: int = 7) -> Topology:
    rng = np.random.default_rng(seed)
    zones = tuple(f"z{i % 30}" for i in range(n))
    regions = tuple(f"r{i % 3}" for i in range(n))
    latency = np.round(rng.uniform(0.05, 900.0, (n, n)), 4)
    bandwidth = np.round(rng.lognormal(5.0, 1.5, (n, n)), 4)
    loss = np.round(rng.uniform(0.0, 100.0, (n, n)), 4)
    for matrix, share in ((latency, 0.05), (bandwidth, 0.1), (loss, 0.02)):
        matrix[rng.random((n, n)) < share] = np.nan
    np.fill_diagonal(latency, 0.0)
    np.fill_diagonal(loss, 0.0)
    np.fill_diagonal(bandwidth, np.nan)
    inferred = rng.random((n, n)) < 0.3
    stale = rng.random((n, n)) < 0.01
    return Topology(
        nodes=tuple(f"node-{i:05d}" for i in range(n)), zones=zones, regions=regions,
        latency_ms=latency, bandwidth_mbps=bandwidth, loss_pct=loss, inferred=inferred, stale=stale,
        min_latency=0.05, max_latency=900.0, min_bandwidth=1.0, max_bandwidth=1e5, min_lossrate=0.0,
        max_lossrate=100.0, zone_costs={("z0", "z1"): 2.0}, region_costs={("r0", "r1"): 7.5}, cost_unit_ms=0.5,
    )


def assert_same(loaded: Topology, original: Topology) -> None:
    assert loaded.nodes == original.nodes and loaded.zones == original.zones and loaded.regions == original.regions
    for key in ("latency_ms", "bandwidth_mbps", "loss_pct"):
        got, want = getattr(loaded, key), getattr(original, key)
        assert got.dtype == np.float64, key  # the Topology contract
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=key)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0, equal_nan=True, err_msg=key)
    # float32 keeps 7 significant digits and loading rounds to 4 decimals: below 1,000 that is exact.
    np.testing.assert_array_equal(loaded.latency_ms, original.latency_ms)
    np.testing.assert_array_equal(loaded.loss_pct, original.loss_pct)
    np.testing.assert_array_equal(loaded.inferred, original.inferred)
    np.testing.assert_array_equal(loaded.stale, original.stale)
    assert loaded.zone_costs == {("z0", "z1"): 2.0} and loaded.region_costs == {("r0", "r1"): 7.5}
    assert loaded.cost_unit_ms == 0.5 and loaded.max_bandwidth == 1e5


def payload_info(pk: int) -> tuple[int, bytes]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT octet_length(payload), substring(payload FROM 1 FOR 8) FROM "
                       "topology_topologysnapshot WHERE id = %s", [pk])
        size, head = cursor.fetchone()
    return size, bytes(head)


def test_large_snapshot_round_trips_through_the_services():
    topology = random_topology(N)
    snapshot = services.store_topology(topology=topology, source="imported")
    size, head = payload_info(snapshot.pk)
    assert head == CHUNKED_MAGIC
    # Uncompressed: 3 float32 values + 2 bits per pair, plus a header naming the nodes. These values are
    # random (the worst case), so only the 4-decimal rounding and the packed flags compress.
    assert size < N * N * 12 + N * N // 4
    assert_same(selectors.current_topology(), topology)
    # A fresh instance (payload deferred) reads the blob back from the database in slices.
    assert_same(TopologySnapshot.objects.defer("payload").get(pk=snapshot.pk).to_topology(), topology)
    assert selectors.current_topology().version == snapshot.version
    # The API document is built from the stored arrays.
    doc = selectors.topology_document(snapshot=selectors.current_snapshot())
    assert doc["spec"]["latency"]["node-00000"]["node-00001"] == topology.latency_ms[0, 1] or np.isnan(
        topology.latency_ms[0, 1])


def test_small_slices_give_the_same_arrays():
    topology = random_topology(37, seed=3)
    blob = encode_snapshot(topology)
    layout, arrays = decode_snapshot(blob)
    assert layout.nodes == topology.nodes
    np.testing.assert_array_equal(arrays["latency_ms"], topology.latency_ms)
    view = memoryview(blob)
    sliced = decode_snapshot_arrays(layout, lambda off, size: view[off:off + size], chunk_bytes=1)
    for key, value in arrays.items():
        np.testing.assert_array_equal(sliced[key], value, err_msg=key)


def test_chunked_payloads_decode_like_the_format_2_payload_inside():
    topology = random_topology(37, seed=3)
    raw = encode_snapshot(topology)
    # 64-byte chunks: the float32 values do not compress (stored raw), the flag bits and header do.
    chunked = chunk_payload(raw, chunk_bytes=64)
    index = parse_chunk_index(chunked)
    assert {codec for _, _, codec in index.chunks} == {RAW, ZSTD}
    assert index.raw_bytes == len(raw) and len(index.chunks) == -(-len(raw) // 64)
    layout2, arrays2 = decode_snapshot(raw)
    layout3, arrays3 = decode_snapshot(chunked)
    assert layout3 == layout2
    for key, value in arrays2.items():
        np.testing.assert_array_equal(arrays3[key], value, err_msg=key)


def write_raw_payload(pk: int, payload: bytes | bytearray) -> None:
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute("UPDATE topology_topologysnapshot SET payload = %b WHERE id = %s", [payload, pk])


def test_format_2_and_format_3_snapshots_load_identically():
    topology = random_topology(300, seed=13)
    chunked = services.store_topology(topology=topology, source="measured")
    plain = services.store_topology(topology=topology, source="measured")
    write_raw_payload(plain.pk, encode_snapshot(topology))  # exactly what format 2 stored
    assert payload_info(chunked.pk)[1] == CHUNKED_MAGIC and payload_info(plain.pk)[1] == b"NATOPO2\n"
    from_chunked = TopologySnapshot.objects.defer("payload").get(pk=chunked.pk).to_topology()
    from_plain = TopologySnapshot.objects.defer("payload").get(pk=plain.pk).to_topology()
    assert from_plain.nodes == from_chunked.nodes
    for key in ("latency_ms", "bandwidth_mbps", "loss_pct", "inferred", "stale"):
        np.testing.assert_array_equal(getattr(from_plain, key), getattr(from_chunked, key), err_msg=key)
    assert_same(from_chunked, topology)
    # In memory (payload loaded through the ORM) both decode the same way too.
    assert_same(TopologySnapshot.objects.get(pk=plain.pk).to_topology(), topology)
    assert_same(TopologySnapshot.objects.get(pk=chunked.pk).to_topology(), topology)


def test_payload_column_is_stored_uncompressed_for_slicing():
    with connection.cursor() as cursor:
        cursor.execute("SELECT attstorage FROM pg_attribute WHERE attrelid = 'topology_topologysnapshot'::regclass "
                       "AND attname = 'payload'")
        assert cursor.fetchone()[0] == "e"


def legacy_payload(topology: Topology) -> bytes:
    """Exactly what storage format 1 wrote (np.savez, float32 values, packed flags)."""
    buffer = io.BytesIO()
    np.savez(
        buffer,
        nodes=np.asarray(topology.nodes, dtype=str), zones=np.asarray(topology.zones, dtype=str),
        regions=np.asarray(topology.regions, dtype=str),
        latency_ms=topology.latency_ms.astype(np.float32), bandwidth_mbps=topology.bandwidth_mbps.astype(np.float32),
        loss_pct=topology.loss_pct.astype(np.float32),
        inferred=np.packbits(topology.inferred, axis=None), stale=np.packbits(topology.stale, axis=None),
    )
    return buffer.getvalue()


def test_format_1_snapshots_still_load():
    topology = random_topology(200, seed=11)
    snapshot = services.store_topology(topology=topology, source="measured")
    write_raw_payload(snapshot.pk, legacy_payload(topology))
    assert payload_info(snapshot.pk)[1][:2] == b"PK"
    assert_same(TopologySnapshot.objects.defer("payload").get(pk=snapshot.pk).to_topology(), topology)
    assert_same(selectors.current_topology(), topology)
    # Loaded through the ORM (payload in memory), the legacy decoder is used too.
    assert_same(TopologySnapshot.objects.get(pk=snapshot.pk).to_topology(), topology)


def test_a_corrupt_payload_is_a_clear_error():
    topology = random_topology(20, seed=5)
    snapshot = services.store_topology(topology=topology, source="measured")
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute("UPDATE topology_topologysnapshot SET payload = substring(payload FROM 1 FOR 100) "
                       "WHERE id = %s", [snapshot.pk])
    with pytest.raises(ValueError, match=r"topology snapshot id=\d+: payload (truncated|has)"):
        TopologySnapshot.objects.defer("payload").get(pk=snapshot.pk).to_topology()


def test_storing_and_pruning_never_send_or_fetch_the_payload_as_text(settings):
    from django.test.utils import CaptureQueriesContext

    settings.NETAWARE = {**settings.NETAWARE, "TOPOLOGY_KEEP_SNAPSHOTS": 1}
    first = services.store_topology(topology=random_topology(30, seed=1), source="measured")
    with CaptureQueriesContext(connection) as queries:
        second = services.store_topology(topology=random_topology(30, seed=2), source="measured")
    assert not TopologySnapshot.objects.filter(pk=first.pk).exists()  # pruned
    sqls = [q["sql"] for q in queries.captured_queries]
    assert any(sql.startswith("DELETE") for sql in sqls)
    # Through the ORM only an empty payload goes out, and no query reads it back.
    assert not any(sql.startswith("SELECT") and '"topology_topologysnapshot"."payload"' in sql for sql in sqls)
    assert not any("\\x4e41544f504f" in sql.lower() for sql in sqls)  # hex of the magic "NATOPO"
    loaded = TopologySnapshot.objects.defer("payload").get(pk=second.pk).to_topology()
    np.testing.assert_array_equal(loaded.inferred, random_topology(30, seed=2).inferred)
