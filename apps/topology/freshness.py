"""Is the current topology fresh? Decided when it is *read*, not when it was built.

A rebuild only runs when the pipeline is alive, so a stale flag set at rebuild time can never
appear once the worker or beat stops: the last snapshot would be served as fresh forever. Every
reader (API, dashboard, extender, /metrics) therefore asks ``assess`` with the current time.

Framework-free (no Django): the inputs are plain numbers and strings.
"""

from __future__ import annotations

from dataclasses import dataclass

MEASURED = "measured"


@dataclass(frozen=True)
class Freshness:
    stale: bool
    reason: str  # empty when fresh
    age_seconds: float  # age of the newest data the snapshot was derived from (>= 0)


def assess(
    *,
    now: float,
    created_at: float,
    data_until: float | None,
    source: str,
    flagged_reason: str,
    stale_after_seconds: float,
) -> Freshness:
    """Freshness of a snapshot at ``now`` (epoch seconds).

    * Age is ``now - data_until`` (the newest sample it was derived from), or ``now - created_at``
      when the snapshot has no sample time.
    * A reason recorded when the snapshot was stored or flagged (e.g. Prometheus unreachable) keeps
      it stale.
    * A *measured* snapshot whose newest data is older than ``stale_after_seconds`` is stale: no new
      measurement has made it through probes -> Prometheus -> pull -> rebuild since. (The same limit
      drops single pairs at rebuild time, so a rebuild now would find every pair stale too.)
    * An *imported* (user-defined) topology is not a measurement and does not age.
    """
    reference = data_until if data_until is not None else created_at
    age = max(0.0, now - reference)
    if flagged_reason:
        return Freshness(True, flagged_reason, age)
    if source == MEASURED and age > stale_after_seconds:
        return Freshness(
            True,
            # Stable text (the age is reported separately): readers cache on the reason.
            f"no measurement in the last {stale_after_seconds:g} s: the metrics pipeline (Celery worker or "
            "beat) or the probes have stopped",
            age,
        )
    return Freshness(False, "", age)
