"""Bandwidth side of the probe agent: the iperf3 server child, the lease that serialises tests against
it, and the client that takes a peer's lease before running a short iperf3 test.

An iperf3 server refuses a second concurrent client, and two tests sharing a link would each read
half the bandwidth. So every agent guards its own iperf3 server with a lease (docs/metrics.md):
``POST /iperf/lease`` answers 200 with a token, or 409 while another client holds an unexpired
lease; ``DELETE /iperf/lease/<token>`` releases it. Leases expire by themselves (a crashed client
cannot block a server), and clients back off with random jitter on 409 so they do not retry in
lock-step. No Django here: the agent must stay small.
"""

from __future__ import annotations

import json
import logging
import secrets
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from apps.probes.agent_auth import sign_request

log = logging.getLogger("netaware.agent")

MAX_TEST_SECONDS = 3.0
LEASE_GRACE_SECONDS = 8.0  # lease TTL = test duration + this; the client kills iperf3 before it
WAITING_GRACE_SECONDS = 5.0  # how long after the lease ends a turned-away client keeps its claim


@dataclass
class Lease:
    token: str
    holder: str
    expires: float  # monotonic


class LeaseTable:
    """The single lease on this agent's iperf3 server."""

    def __init__(self, iperf_port: int, *, max_ttl: float = MAX_TEST_SECONDS + LEASE_GRACE_SECONDS) -> None:
        self.iperf_port = iperf_port
        self.max_ttl = max_ttl
        self._lease: Lease | None = None
        self._lock = threading.Lock()
        # Clients turned away recently (holder -> claim expiry, monotonic). While any is waiting, a free
        # server goes to one of them first, so a client testing back to back cannot starve others.
        self._waiting: dict[str, float] = {}
        self.server_ready = True

    def acquire(self, holder: str, ttl: float) -> tuple[int, dict[str, Any]]:
        """HTTP status and JSON body for a lease request."""
        ttl = min(max(ttl, 1.0), self.max_ttl)
        now = time.monotonic()
        with self._lock:
            if not self.server_ready:
                return 503, {"error": "iperf3 server is not running", "retry_after": 1.0}
            self._waiting = {h: until for h, until in self._waiting.items() if until > now}
            if self._lease is not None and self._lease.expires > now:
                # a turned-away client keeps its claim until a while after it was told to come back
                self._waiting[holder] = self._lease.expires + WAITING_GRACE_SECONDS
                return 409, {"error": "busy", "holder": self._lease.holder,
                             "retry_after": round(self._lease.expires - now, 3)}
            if self._waiting and holder not in self._waiting:
                return 409, {"error": "others are waiting", "holder": None, "retry_after": 1.0}
            self._waiting.pop(holder, None)
            self._lease = Lease(token=secrets.token_hex(8), holder=holder, expires=now + ttl)
            return 200, {"token": self._lease.token, "iperf_port": self.iperf_port, "ttl": ttl}

    def release(self, token: str) -> bool:
        with self._lock:
            if self._lease is not None and secrets.compare_digest(self._lease.token, token):
                self._lease = None
                return True
            return False

    def busy(self) -> bool:
        with self._lock:
            return self._lease is not None and self._lease.expires > time.monotonic()


class IperfServer:
    """``iperf3 -s -p PORT`` as a child process, restarted by ``check()`` when it dies."""

    def __init__(self, binary: str, port: int, bind: str | None) -> None:
        self.binary = binary
        self.port = port
        self.bind = bind
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def check(self) -> bool:
        """Start or restart the server if needed; True when one is running."""
        if self.process is not None and self.process.poll() is None:
            return True
        if self.process is not None:
            log.warning("iperf3 server exited with %s; restarting", self.process.returncode)
        cmd = [self.binary, "-s", "-p", str(self.port)]
        if self.bind and self.bind not in {"0.0.0.0", "::"}:
            cmd += ["-B", self.bind]
        try:
            self.process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL)
        except OSError as exc:
            log.error("cannot start %s: %s", self.binary, exc)
            self.process = None
            return False
        self.starts += 1
        return True

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class LeaseBusy(Exception):
    def __init__(self, retry_after: float) -> None:
        super().__init__(f"busy, retry after {retry_after:.1f}s")
        self.retry_after = retry_after


def _request(method: str, url: str, body: dict[str, Any] | None, timeout: float,
             secret: bytes | None = None) -> tuple[int, dict[str, Any]]:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if data else {}
    if secret is not None:
        headers.update(sign_request(secret, method, urllib.parse.urlsplit(url).path, data or b""))
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
            return resp.status, (json.loads(raw) if raw else {})
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            payload = json.loads(raw) if raw else {}
        except ValueError:
            payload = {}
        return exc.code, payload


def take_lease(base_url: str, holder: str, ttl: float, timeout: float = 3.0, *,
               secret: bytes | None = None) -> tuple[str, int]:
    """(token, iperf_port) of a fresh lease on the peer at ``base_url``; LeaseBusy on 409/503.

    The request is signed with the shared ``secret`` (agent_auth.py); a 401 raises OSError.
    """
    status, payload = _request("POST", f"{base_url}/iperf/lease", {"client": holder, "ttl": ttl}, timeout,
                               secret)
    if status == 200:
        return str(payload["token"]), int(payload["iperf_port"])
    if status in (409, 503):
        raise LeaseBusy(float(payload.get("retry_after", 1.0)))
    if status == 401:
        raise OSError(f"lease request to {base_url} refused (401): {payload.get('error', '')} -- "
                      "do both agents share NETAWARE_PROBE_SECRET?")
    raise OSError(f"lease request to {base_url} answered {status}")


def release_lease(base_url: str, token: str, timeout: float = 3.0, *, secret: bytes | None = None) -> None:
    try:
        _request("DELETE", f"{base_url}/iperf/lease/{token}", None, timeout, secret)
    except OSError as exc:  # the lease expires by itself
        log.info("releasing lease at %s failed: %s", base_url, exc)


def run_iperf3(binary: str, host: str, port: int, duration: float, *,
               stop: threading.Event | None = None) -> float:
    """Bits per second received by the peer in a ``duration``-second TCP test (``iperf3 -J``)."""
    seconds = max(1, min(round(duration), int(MAX_TEST_SECONDS)))
    cmd = [binary, "-c", host, "-p", str(port), "-t", str(seconds), "-J", "--connect-timeout", "2000"]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + seconds + LEASE_GRACE_SECONDS - 2.0
    try:
        while proc.poll() is None:
            if time.monotonic() > deadline or (stop is not None and stop.is_set()):
                raise TimeoutError(f"iperf3 to {host}:{port} did not finish in time")
            time.sleep(0.1)
        out = proc.stdout.read() if proc.stdout else b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()
    return parse_iperf3_json(out)


def parse_iperf3_json(raw: bytes | str) -> float:
    """``end.sum_received.bits_per_second`` of an iperf3 -J report; ValueError on an error report."""
    try:
        report = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"iperf3 printed no JSON: {exc}") from None
    if not isinstance(report, dict):
        raise ValueError("iperf3 JSON is not an object")
    if report.get("error"):
        raise ValueError(f"iperf3: {report['error']}")
    try:
        value = float(report["end"]["sum_received"]["bits_per_second"])
    except (KeyError, TypeError, ValueError):
        raise ValueError("iperf3 JSON has no end.sum_received.bits_per_second") from None
    if value < 0 or value != value:
        raise ValueError(f"iperf3 reported {value} bits/s")
    return value
