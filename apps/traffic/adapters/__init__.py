"""The traffic sources netaware reads, one module each (docs/traffic.md)."""

from __future__ import annotations

from . import hubble, istio, linkerd, otel
from .base import MEASURES, Adapter, EdgeLabels

ADAPTERS: dict[str, Adapter] = {a.name: a for a in (istio.ADAPTER, linkerd.ADAPTER, otel.ADAPTER, hubble.ADAPTER)}

__all__ = ["ADAPTERS", "MEASURES", "Adapter", "EdgeLabels"]
