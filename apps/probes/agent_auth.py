"""Shared-secret authentication between probe agents (docs/metrics.md, "Security").

* **Leases** (``POST /iperf/lease``, ``DELETE /iperf/lease/<token>``): the client sends
  ``X-Netaware-Date`` (Unix seconds), ``X-Netaware-Nonce`` (random hex) and
  ``Authorization: NetawareHMAC <hex>``, an HMAC-SHA256 under the shared secret over the method, the
  path, the date, the nonce and the SHA-256 of the body. The server accepts a request only within
  ``MAX_SKEW_SECONDS`` of its own clock and only once per nonce (replays inside the skew window are
  refused), and answers 401 otherwise, never a lease.
* **UDP echo**: every probe and reply carries an 8-byte truncated HMAC over its header, so an agent
  answers only its peers (no reflection of spoofed packets) and only counts genuine replies.

The secret comes from ``NETAWARE_PROBE_SECRET`` or the file named by ``NETAWARE_PROBE_SECRET_FILE``
(a Kubernetes Secret); every agent of a cluster shares it. Standard library only.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path

SCHEME = "NetawareHMAC"
DATE_HEADER = "X-Netaware-Date"
NONCE_HEADER = "X-Netaware-Nonce"
MAX_SKEW_SECONDS = 30.0
MIN_SECRET_BYTES = 16
PACKET_MAC_BYTES = 8
_MAX_NONCES = 100_000


class SecretError(ValueError):
    """The shared secret is missing or unusable; the message names the variable."""


def load_secret(env: Mapping[str, str]) -> bytes:
    """The shared secret from ``NETAWARE_PROBE_SECRET_FILE`` (preferred) or ``NETAWARE_PROBE_SECRET``."""
    path = env.get("NETAWARE_PROBE_SECRET_FILE", "")
    if path:
        try:
            raw = Path(path).read_bytes().strip()
        except OSError as exc:
            raise SecretError(f"NETAWARE_PROBE_SECRET_FILE: cannot read {path!r}: {exc.strerror}") from None
        where = "NETAWARE_PROBE_SECRET_FILE"
    else:
        raw = env.get("NETAWARE_PROBE_SECRET", "").strip().encode()
        where = "NETAWARE_PROBE_SECRET"
    if not raw:
        raise SecretError("NETAWARE_PROBE_SECRET (or NETAWARE_PROBE_SECRET_FILE) must be set: agents "
                          "authenticate leases and probes with it")
    if len(raw) < MIN_SECRET_BYTES:
        raise SecretError(f"{where}: at least {MIN_SECRET_BYTES} bytes, got {len(raw)}")
    return raw


def _message(method: str, path: str, date: str, nonce: str, body: bytes) -> bytes:
    return "\n".join((method.upper(), path, date, nonce, hashlib.sha256(body).hexdigest())).encode()


def sign_request(secret: bytes, method: str, path: str, body: bytes = b"", *,
                 now: float | None = None, nonce: str | None = None) -> dict[str, str]:
    """Headers authenticating one request."""
    date = str(int(time.time() if now is None else now))
    nonce = nonce or secrets.token_hex(12)
    mac = hmac.new(secret, _message(method, path, date, nonce, body), hashlib.sha256).hexdigest()
    return {DATE_HEADER: date, NONCE_HEADER: nonce, "Authorization": f"{SCHEME} {mac}"}


class RequestVerifier:
    """Checks signed requests; remembers nonces for twice the allowed skew to refuse replays."""

    def __init__(self, secret: bytes, *, max_skew: float = MAX_SKEW_SECONDS) -> None:
        self._secret = secret
        self._max_skew = max_skew
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def verify(self, method: str, path: str, headers: Mapping[str, str], body: bytes, *,
               now: float | None = None) -> str | None:
        """None when the request is authentic and fresh, else the reason it is refused."""
        now = time.time() if now is None else now
        auth = headers.get("Authorization") or ""
        date = headers.get(DATE_HEADER) or ""
        nonce = headers.get(NONCE_HEADER) or ""
        scheme, _, mac = auth.partition(" ")
        if scheme != SCHEME or not mac:
            return f"missing Authorization: {SCHEME} signature"
        if not date.isdigit() or not nonce or len(nonce) > 64:
            return f"missing or malformed {DATE_HEADER}/{NONCE_HEADER}"
        if abs(now - int(date)) > self._max_skew:
            return f"{DATE_HEADER} is more than {self._max_skew:g} s away from this agent's clock"
        expected = hmac.new(self._secret, _message(method, path, date, nonce, body), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, mac.strip().lower()):
            return "bad signature"
        with self._lock:
            horizon = now - 2 * self._max_skew
            while self._seen and (next(iter(self._seen.values())) < horizon or len(self._seen) > _MAX_NONCES):
                self._seen.popitem(last=False)
            if nonce in self._seen:
                return "replayed request"
            self._seen[nonce] = now
        return None


class PacketMac:
    """Truncated HMAC-SHA256 appended to every UDP probe and reply."""

    def __init__(self, secret: bytes) -> None:
        self._key = hashlib.sha256(b"netaware-probe-echo\x00" + secret).digest()

    def tag(self, header: bytes) -> bytes:
        return hmac.new(self._key, header, hashlib.sha256).digest()[:PACKET_MAC_BYTES]

    def check(self, header: bytes, tag: bytes) -> bool:
        return hmac.compare_digest(self.tag(header), tag)


def random_secret() -> str:
    """A fresh secret for a Secret manifest or a test (``python -c`` in the docs)."""
    return secrets.token_urlsafe(32)


__all__ = [
    "DATE_HEADER",
    "MAX_SKEW_SECONDS",
    "NONCE_HEADER",
    "PACKET_MAC_BYTES",
    "SCHEME",
    "PacketMac",
    "RequestVerifier",
    "SecretError",
    "load_secret",
    "random_secret",
    "sign_request",
]

if __name__ == "__main__":  # convenience: ``python -m apps.probes.agent_auth`` prints a new secret
    print(random_secret())
