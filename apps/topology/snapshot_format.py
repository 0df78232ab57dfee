"""How a topology snapshot is stored: payload formats 2 and 3 (pure: no Django; models.TopologySnapshot uses it).

magic (8 bytes) | header length (uint32 LE) | header (JSON) | zero padding to 8 bytes | sections.
Sections: latency_ms, bandwidth_mbps, loss_pct as little-endian float32 (n x n, row-major), then
inferred and stale as np.packbits bit masks. Fixed offsets let a reader fetch the value arrays in
slices (SQL ``substring``) straight into the float64 arrays of a ``Topology``, so loading 5,000
nodes never holds the whole blob and the arrays at once. Format 1 (``np.savez``, a zip) is
recognised by its "PK" signature and still decoded.

Format 3 (written since 2026-11-24) is a format-2 payload cut into fixed-size chunks, each stored
zstd-compressed (level 1) or raw when that does not pay: magic | header length | header (JSON: chunk
size, logical size, (offset, length, codec) per chunk) | padding | chunks. Rebuilt topologies are
97-99 % zone and region fills, so 292 MiB at 5,000 nodes shrink to a few MiB and the write stops
dominating the rebuild. ``open_payload`` turns either format into a reader of the format-2 bytes, so
slice reads (and their bounded memory) work unchanged: one chunk is decompressed at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
import zstandard

from .topomath import Topology

SNAPSHOT_MAGIC = b"NATOPO2\n"
CHUNKED_MAGIC = b"NATOPO3\n"
_PREFIX = len(SNAPSHOT_MAGIC) + 4
_VALUE_SECTIONS = ("latency_ms", "bandwidth_mbps", "loss_pct")
_FLAG_SECTIONS = ("inferred", "stale")
SNAPSHOT_DECIMALS = 4
_CHUNK_BYTES = 16 * 2**20
PAYLOAD_CHUNK_BYTES = 4 * 2**20
Buffer = bytes | bytearray | memoryview
Reader = Callable[[int, int], Buffer]
RAW, ZSTD = 0, 1


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


def snapshot_header_bytes(head: Buffer, magic: bytes = SNAPSHOT_MAGIC) -> int:
    """How many leading bytes hold the header, given at least the first 12 bytes of a payload."""
    if bytes(head[: len(magic)]) != magic or len(head) < _PREFIX:
        raise ValueError("not a NetworkTopology snapshot payload (bad magic)")
    return _PREFIX + int.from_bytes(bytes(head[len(magic):_PREFIX]), "little")


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
    """Decode a whole in-memory format-2 or format-3 payload (format 2: zero-copy slices)."""
    view = memoryview(payload)
    read, size = open_payload(view[:_PREFIX], lambda off, length: view[off:off + length], len(view))
    layout = parse_snapshot_header(read(0, snapshot_header_bytes(read(0, _PREFIX))))
    if size != layout.total_bytes:
        raise ValueError(f"snapshot payload has {size} bytes, header says {layout.total_bytes}")
    return layout, decode_snapshot_arrays(layout, read)


def snapshot_payload(topology: Topology, *, chunk_bytes: int = PAYLOAD_CHUNK_BYTES) -> bytearray:
    """What a snapshot stores: the format-2 payload of ``topology`` as chunked format 3."""
    return chunk_payload(encode_snapshot(topology), chunk_bytes=chunk_bytes)


def chunk_payload(raw: bytearray, *, chunk_bytes: int = PAYLOAD_CHUNK_BYTES) -> bytearray:
    """Format 3: ``raw`` (a format-2 payload) in chunks, each zstd level 1 unless that saves < 1/8.

    zstd, not zlib: at 5,000 nodes zlib level 1 took 0.7 s on fill-dominated payloads and 8.7 s on
    mostly measured (noisy) ones; zstd 0.3 s and 2.5 s for the same or better ratios."""
    view = memoryview(raw)
    compressor = zstandard.ZstdCompressor(level=1)
    stored: list[Buffer] = []
    chunks: list[list[int]] = []
    offset = 0
    for start in range(0, len(raw), chunk_bytes):
        piece = view[start:start + chunk_bytes]
        packed = compressor.compress(piece)
        keep: Buffer
        keep, codec = (packed, ZSTD) if len(packed) < len(piece) - len(piece) // 8 else (piece, RAW)
        stored.append(keep)
        chunks.append([offset, len(keep), codec])
        offset += len(keep)
    header = orjson.dumps({"format": 3, "chunk_bytes": chunk_bytes, "raw_bytes": len(raw), "chunks": chunks})
    start = -(-(_PREFIX + len(header)) // 8) * 8
    out = bytearray(start + offset)
    out[: len(CHUNKED_MAGIC)] = CHUNKED_MAGIC
    out[len(CHUNKED_MAGIC):_PREFIX] = len(header).to_bytes(4, "little")
    out[_PREFIX:_PREFIX + len(header)] = header
    for (chunk_offset, length, _), data in zip(chunks, stored, strict=True):
        out[start + chunk_offset:start + chunk_offset + length] = data
    return out


@dataclass(frozen=True)
class ChunkIndex:
    """Parsed header of a format-3 payload: where each chunk of the format-2 bytes is stored."""

    chunk_bytes: int
    raw_bytes: int
    data_start: int
    chunks: tuple[tuple[int, int, int], ...]  # (offset after data_start, stored length, codec)


def parse_chunk_index(head: Buffer) -> ChunkIndex:
    end = snapshot_header_bytes(head, CHUNKED_MAGIC)
    if len(head) < end:
        raise ValueError(f"snapshot header needs {end} bytes, got {len(head)}")
    meta = orjson.loads(bytes(head[_PREFIX:end]))
    return ChunkIndex(chunk_bytes=int(meta["chunk_bytes"]), raw_bytes=int(meta["raw_bytes"]),
                      data_start=-(-end // 8) * 8,
                      chunks=tuple((int(o), int(n), int(c)) for o, n, c in meta["chunks"]))


def open_payload(head: Buffer, read: Reader, size: int) -> tuple[Reader, int]:
    """A reader of the format-2 bytes and their size, given a payload's first bytes (at least 12),
    ``read(offset, length)`` over the stored payload and its stored size. Format 2 is returned as it
    is; format 3 decompresses the chunks a read touches, keeping only the last one."""
    if bytes(head[: len(CHUNKED_MAGIC)]) != CHUNKED_MAGIC:
        return read, size
    needed = snapshot_header_bytes(head, CHUNKED_MAGIC)
    index = parse_chunk_index(head if needed <= len(head) else read(0, needed))
    if index.chunks:
        last_offset, last_length, _ = index.chunks[-1]
        if index.data_start + last_offset + last_length != size:
            raise ValueError(f"payload has {size} bytes, header says "
                             f"{index.data_start + last_offset + last_length}")
    cache: dict[int, bytes] = {}
    decompressor = zstandard.ZstdDecompressor()

    def chunk(number: int) -> bytes:
        if number not in cache:
            cache.clear()
            offset, length, codec = index.chunks[number]
            data = bytes(read(index.data_start + offset, length))
            try:
                cache[number] = decompressor.decompress(data) if codec == ZSTD else data
            except zstandard.ZstdError as exc:
                raise ValueError(f"payload chunk {number} does not decompress: {exc}") from exc
        return cache[number]

    def read_raw(offset: int, length: int) -> bytes:
        if offset < 0 or offset + length > index.raw_bytes:
            raise ValueError(f"snapshot read of {length} bytes at {offset} is outside {index.raw_bytes} bytes")
        pieces = []
        step = index.chunk_bytes
        for number in range(offset // step, -(-(offset + length) // step)):
            data = chunk(number)
            lo = max(offset - number * step, 0)
            pieces.append(data[lo:min(offset + length - number * step, len(data))])
        return b"".join(pieces)

    return read_raw, index.raw_bytes
