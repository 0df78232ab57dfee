"""Query layer over the Prometheus HTTP API, for any engine that serves it (Prometheus, Thanos Query,
Grafana Mimir, VictoriaMetrics; docs/scale.md).

Only ``/api/v1/query_range`` and ``/api/v1/query`` with explicit times and an explicit timeout. No
client-side retries: retries belong to the Celery task, where they back off with jitter instead of
blocking a worker. Long queries (sharded pulls name hundreds of nodes) go as a form-encoded POST,
which every engine accepts; short ones as GET.

An answer is used only when it is complete: a response flagged partial (``warnings`` from Prometheus
or Thanos, ``isPartial`` from VictoriaMetrics) raises :class:`PrometheusPartialData` and a query
refused for its size (too many samples or series) raises :class:`PrometheusLimitError`; neither is
ever stored as zeros or as a window with pairs missing.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import requests

logger = logging.getLogger(__name__)

_MAX_GET_QUERY = 3000  # characters of PromQL sent in a URL; longer ones are POSTed
_LIMIT_RE = re.compile(
    r"too many samples|would load too many|max(imum)?[ _.-]?(samples|series|unique ?time ?series|points)|"
    r"exceed|limit", re.IGNORECASE)


class PrometheusUnavailable(Exception):
    """Prometheus could not be reached, timed out or answered with a server error (retryable)."""


class PrometheusPartialData(PrometheusUnavailable):
    """The engine answered with partial data (a store, replica or remote read failed): retry later."""


class PrometheusQueryError(Exception):
    """Prometheus rejected a query (4xx, e.g. bad PromQL): retrying will not help."""


class PrometheusLimitError(PrometheusQueryError):
    """The query touched more samples or series than the engine allows: pull in more shards."""


@dataclass(frozen=True)
class Window:
    """One aligned pull window ``(start, end]``; points are stamped with ``end``."""

    start: int  # epoch seconds, multiple of the window width
    end: int


def align_down(epoch: float, width: int) -> int:
    return math.floor(epoch / width) * width


def windows_between(after: int, until: int, width: int) -> Iterator[Window]:
    """Aligned windows whose end lies in ``(after, until]``."""
    end = align_down(after, width) + width
    while end <= until:
        yield Window(end - width, end)
        end += width


def _error_text(response: requests.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:500]
    if isinstance(body, dict):
        return str(body.get("error") or body)[:500]
    return str(body)[:500]


class PrometheusClient:
    def __init__(self, url: str, *, timeout: float) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._session = requests.Session()

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> PrometheusClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, path: str, params: dict[str, str]) -> list[dict]:
        endpoint = f"{self.url}{path}"
        try:
            if len(params.get("query", "")) > _MAX_GET_QUERY:
                response = self._session.post(endpoint, data=params, timeout=self.timeout)
            else:
                response = self._session.get(endpoint, params=params, timeout=self.timeout)
        except requests.Timeout as exc:
            raise PrometheusUnavailable(f"prometheus at {self.url} timed out after {self.timeout}s") from exc
        except requests.RequestException as exc:
            raise PrometheusUnavailable(f"prometheus at {self.url} unreachable: {exc}") from exc
        status = response.status_code
        if status in (408, 429) or status >= 500:
            raise PrometheusUnavailable(f"prometheus at {self.url}: HTTP {status}: {_error_text(response)[:300]}")
        if status >= 400:
            text = _error_text(response)
            if status == 422 and _LIMIT_RE.search(text):
                raise PrometheusLimitError(f"prometheus at {self.url} refused the query as too large (HTTP 422): "
                                           f"{text} -- split the pull into more shards (NETAWARE_PULL_SHARDS)")
            raise PrometheusQueryError(f"prometheus at {self.url} rejected the query (HTTP {status}): {text}")
        try:  # orjson: a 40k-series answer decodes ~3x faster than with the standard library
            body: Any = orjson.loads(response.content)
        except ValueError as exc:  # a non-JSON body, e.g. something else listening on the port
            raise PrometheusUnavailable(f"prometheus at {self.url} sent an invalid response: {exc}") from exc
        if not isinstance(body, dict) or body.get("status") != "success":
            text = str(body.get("error") if isinstance(body, dict) else body)[:500]
            raise PrometheusUnavailable(f"prometheus at {self.url} answered without success: {text}")
        warnings = body.get("warnings") or []
        if body.get("isPartial") or warnings:
            detail = "; ".join(str(w) for w in warnings)[:500] or "isPartial=true"
            raise PrometheusPartialData(f"prometheus at {self.url} answered with partial data ({detail}); "
                                        "nothing stored, the window is pulled again")
        data = body.get("data")
        result = data.get("result") if isinstance(data, dict) else None
        if not isinstance(result, list):
            raise PrometheusUnavailable(f"prometheus at {self.url} sent no result list")
        return result

    def range_points(self, query: str, *, first_end: int, last_end: int, step: int) -> list[dict]:
        """Evaluate ``query`` at every aligned window end in ``[first_end, last_end]``.

        Returns the raw matrix: ``[{"metric": {...}, "values": [[ts, "value"], ...]}, ...]``.
        """
        return self._call("/api/v1/query_range", {"query": query, "start": str(first_end), "end": str(last_end),
                                                  "step": str(step), "timeout": f"{self.timeout:g}s"})

    def instant(self, query: str, *, at: int) -> list[dict]:
        return self._call("/api/v1/query", {"query": query, "time": str(at), "timeout": f"{self.timeout:g}s"})
