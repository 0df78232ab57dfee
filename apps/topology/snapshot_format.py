"""How a topology snapshot is stored: payload format 2 (pure: no Django; models.TopologySnapshot uses it).

magic (8 bytes) | header length (uint32 LE) | header (JSON) | zero padding to 8 bytes | sections.
Sections: latency_ms, bandwidth_mbps, loss_pct as little-endian float32 (n x n, row-major), then
inferred and stale as np.packbits bit masks. Fixed offsets let a reader fetch the value arrays in
slices (SQL ``substring``) straight into the float64 arrays of a ``Topology``, so loading 5,000
nodes never holds the whole blob and the arrays at once. Format 1 (``np.savez``, a zip) is
recognised by its "PK" signature and still decoded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from .topomath import Topology

SNAPSHOT_MAGIC = b"NATOPO2\n"
_PREFIX = len(SNAPSHOT_MAGIC) + 4
_VALUE_SECTIONS = ("latency_ms", "bandwidth_mbps", "loss_pct")
_FLAG_SECTIONS = ("inferred", "stale")
SNAPSHOT_DECIMALS = 4
_CHUNK_BYTES = 16 * 2**20
Buffer = bytes | bytearray | memoryview


@dataclass(frozen=True)
class SnapshotLayout:
    """Parsed header of a format-2 payload: node identity and (offset, length) of each section."""

    nodes: tuple[str, ...]
    zones: tuple[str, ...]
    regions: tuple[str, ...]
    sections: Mapping[str, tuple[int, int]]
    total_bytes: int


def is_legacy_snapshot(head: Buffer) -> bool:
    """Format 1 payloads are ``np.savez`` zip archives."""
    return bytes(head[:2]) == b"PK"


def snapshot_header_bytes(head: Buffer) -> int:
    """How many leading bytes hold the header, given at least the first 12 bytes of a payload."""
    if bytes(head[: len(SNAPSHOT_MAGIC)]) != SNAPSHOT_MAGIC or len(head) < _PREFIX:
        raise ValueError("not a NetworkTopology snapshot payload (bad magic)")
    return _PREFIX + int.from_bytes(bytes(head[len(SNAPSHOT_MAGIC):_PREFIX]), "little")


def parse_snapshot_header(head: Buffer) -> SnapshotLayout:
    end = snapshot_header_bytes(head)
    if len(head) < end:
        raise ValueError(f"snapshot header needs {end} bytes, got {len(head)}")
    meta = orjson.loads(bytes(head[_PREFIX:end]))
    return SnapshotLayout(
        nodes=tuple(meta["nodes"]), zones=tuple(meta["zones"]), regions=tuple(meta["regions"]),
        sections={k: (int(v[0]), int(v[1])) for k, v in meta["sections"].items()},
        total_bytes=int(meta["total_bytes"]),
    )


def encode_snapshot(topology: Topology) -> bytearray:
    """The format-2 payload, written into one preallocated buffer (no per-array temporaries)."""
    n = topology.size
    value_bytes, flag_bytes = 4 * n * n, (n * n + 7) // 8
    names = {"nodes": list(topology.nodes), "zones": list(topology.zones), "regions": list(topology.regions)}
    # The header's size depends on the offsets it lists: size it with a generous placeholder first.
    probe = len(orjson.dumps({**names, "sections": {k: [2**62, 2**62] for k in (*_VALUE_SECTIONS, *_FLAG_SECTIONS)},
                              "total_bytes": 2**62, "format": 2}))
    start = -(-(_PREFIX + probe) // 8) * 8
    sections: dict[str, list[int]] = {}
    offset = start
    for key in _VALUE_SECTIONS:
        sections[key] = [offset, value_bytes]
        offset += value_bytes
    for key in _FLAG_SECTIONS:
        sections[key] = [offset, flag_bytes]
        offset += flag_bytes
    header = orjson.dumps({**names, "sections": sections, "total_bytes": offset, "format": 2})
    buffer = bytearray(offset)
    buffer[: len(SNAPSHOT_MAGIC)] = SNAPSHOT_MAGIC
    buffer[len(SNAPSHOT_MAGIC):_PREFIX] = len(header).to_bytes(4, "little")
    buffer[_PREFIX:_PREFIX + len(header)] = header
    for key in _VALUE_SECTIONS:
        off, size = sections[key]
        target = np.frombuffer(buffer, dtype="<f4", count=n * n, offset=off).reshape(n, n)
        target[...] = getattr(topology, key)  # cast float64 -> float32 in place, no temporary
    for key in _FLAG_SECTIONS:
        off, size = sections[key]
        buffer[off:off + size] = np.packbits(getattr(topology, key), axis=None).tobytes()
    return buffer


def decode_snapshot_arrays(
    layout: SnapshotLayout, read: Any, *, chunk_bytes: int = _CHUNK_BYTES
) -> dict[str, np.ndarray]:
    """The five (n x n) arrays of a format-2 payload; ``read(offset, length) -> bytes`` fetches a slice.

    Values are widened to float64 (the ``Topology`` contract) slice by slice and rounded to
    ``SNAPSHOT_DECIMALS`` like the API serves them, so the peak is the arrays plus one slice.
    """
    n = len(layout.nodes)
    out: dict[str, np.ndarray] = {}
    rows_per_chunk = max(1, chunk_bytes // max(1, 4 * n))
    for key in _VALUE_SECTIONS:
        offset, size = layout.sections[key]
        if size != 4 * n * n:
            raise ValueError(f"snapshot section {key} has {size} bytes, expected {4 * n * n}")
        values = np.empty((n, n), dtype=np.float64)
        for row in range(0, n, rows_per_chunk):
            stop = min(n, row + rows_per_chunk)
            raw = read(offset + 4 * n * row, 4 * n * (stop - row))
            block = values[row:stop]
            block[...] = np.frombuffer(raw, dtype="<f4").reshape(stop - row, n)
            np.round(block, SNAPSHOT_DECIMALS, out=block)
            del raw
        out[key] = values
    for key in _FLAG_SECTIONS:
        offset, size = layout.sections[key]
        bits = np.frombuffer(read(offset, size), dtype=np.uint8)
        out[key] = np.unpackbits(bits, count=n * n).view(bool).reshape(n, n)
    return out


def decode_snapshot(payload: Buffer) -> tuple[SnapshotLayout, dict[str, np.ndarray]]:
    """Decode a whole in-memory format-2 payload (zero-copy slices of ``payload``)."""
    view = memoryview(payload)
    layout = parse_snapshot_header(view[: snapshot_header_bytes(view[:_PREFIX])])
    if len(view) != layout.total_bytes:
        raise ValueError(f"snapshot payload has {len(view)} bytes, header says {layout.total_bytes}")
    return layout, decode_snapshot_arrays(layout, lambda off, size: view[off:off + size])
