"""Query layer over prometheus-api-client: aligned range queries with explicit timeouts.

Only ``custom_query_range`` and ``custom_query`` are used, always with explicit start/end (never
``get_metric_range_data``, whose default times are frozen at import). The library's own urllib3
retry loop is switched off: retries belong to the Celery task, where they back off with jitter
instead of blocking a worker for seconds per call.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import requests
from prometheus_api_client import PrometheusApiClientException, PrometheusConnect
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError, ReadTimeoutError
from urllib3.util.retry import Retry

logger = logging.getLogger(__name__)


class PrometheusUnavailable(Exception):
    """Prometheus could not be reached, timed out or answered with a server error (retryable)."""


class PrometheusQueryError(Exception):
    """Prometheus rejected a query (4xx, e.g. bad PromQL): retrying will not help."""


@dataclass(frozen=True)
class Window:
    """One aligned pull window ``(start, end]``; points are stamped with ``end``."""

    start: int  # epoch seconds, multiple of the window width
    end: int

    @property
    def end_datetime(self) -> datetime:
        return datetime.fromtimestamp(self.end, tz=UTC)


def align_down(epoch: float, width: int) -> int:
    return math.floor(epoch / width) * width


def windows_between(after: int, until: int, width: int) -> Iterator[Window]:
    """Aligned windows whose end lies in ``(after, until]``."""
    end = align_down(after, width) + width
    while end <= until:
        yield Window(end - width, end)
        end += width


def _timed_out(exc: requests.RequestException) -> bool:
    """With retries off, urllib3 wraps a timeout in MaxRetryError, which requests reports as a ConnectionError."""
    if isinstance(exc, requests.Timeout):
        return True
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return isinstance(reason, (ReadTimeoutError, ConnectTimeoutError)) and not isinstance(reason, NewConnectionError)


class PrometheusClient:
    def __init__(self, url: str, *, timeout: float) -> None:
        self.url = url
        self.timeout = timeout
        self._conn = PrometheusConnect(
            url=url, disable_ssl=True, timeout=timeout, retry=Retry(total=0, raise_on_status=False)
        )

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> PrometheusClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, func, *args, **kwargs) -> list[dict]:  # type: ignore[no-untyped-def]
        try:
            return func(*args, timeout=self.timeout, **kwargs)
        except requests.RequestException as exc:
            if _timed_out(exc):
                raise PrometheusUnavailable(f"prometheus at {self.url} timed out after {self.timeout}s") from exc
            raise PrometheusUnavailable(f"prometheus at {self.url} unreachable: {exc}") from exc
        except PrometheusApiClientException as exc:
            message = str(exc)
            if any(f"HTTP Status Code {code}" in message for code in (408, 429, 500, 502, 503, 504)):
                raise PrometheusUnavailable(f"prometheus at {self.url}: {message[:300]}") from exc
            raise PrometheusQueryError(f"prometheus at {self.url} rejected the query: {message[:500]}") from exc
        except ValueError as exc:  # a non-JSON body, e.g. something else listening on the port
            raise PrometheusUnavailable(f"prometheus at {self.url} sent an invalid response: {exc}") from exc

    def range_points(self, query: str, *, first_end: int, last_end: int, step: int) -> list[dict]:
        """Evaluate ``query`` at every aligned window end in ``[first_end, last_end]``.

        Returns the raw matrix: ``[{"metric": {...}, "values": [[ts, "value"], ...]}, ...]``.
        """
        return self._call(
            self._conn.custom_query_range,
            query,
            start_time=datetime.fromtimestamp(first_end, tz=UTC),
            end_time=datetime.fromtimestamp(last_end, tz=UTC),
            step=str(step),
        )

    def instant(self, query: str, *, at: int) -> list[dict]:
        return self._call(self._conn.custom_query, query, params={"time": at})
