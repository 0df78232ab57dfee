"""Resource use of one probe agent with 20 peers: median RSS (MiB) and average CPU (mCPU).

Run: ``python bench/bench_probe_agent.py [--duration 60] [--peers 20]`` (Linux; iperf3 installed).

The agent under test runs with its defaults (2 probes/s per peer, one 2-second iperf3 test every
30 s) on 127.0.0.1; its 20 peers are real agents with no peers of their own on 127.0.0.2..21
(echo responder, lease endpoint and iperf3 server each). A scraper reads ``/metrics`` every 15 s
like Prometheus would. RSS is sampled from /proc/<pid>/status every second; CPU is the growth of
utime+stime in /proc/<pid>/stat after a 5-second warm-up, over wall time. The agent's own process
is what the source paper's ``kubectl top`` figures compare to; the iperf3 children (server and
client tests) are reported separately.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_MIB = 1 / 1024


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * PAGE_MIB
    return float("nan")


def cpu_seconds(pid: int, *, children: bool = False) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    total = utime + stime + ((cutime + cstime) if children else 0)
    return total / CLK_TCK


def child_pids(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            out += [int(p) for p in (task / "children").read_text().split()]
    return out


def start(node: str, bind: str, peers: str = "", extra: tuple[str, ...] = ()) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "apps.probes.agent", "--node", node, "--bind", bind, "--log-level", "WARNING",
           *extra]
    if peers:
        cmd += ["--peers", peers]
    # agents authenticate probes and leases with a shared secret (docs/metrics.md, "Security")
    env = {**os.environ, "NETAWARE_PROBE_SECRET": os.environ.get("NETAWARE_PROBE_SECRET", "bench-secret-0123456789abcdef")}
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)


def wait_ready(url: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(url)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--peers", type=int, default=20)
    parser.add_argument("--port", type=int, default=19105)
    args = parser.parse_args()

    peers = [start(f"peer{i}", f"127.0.0.{i + 2}", extra=("--metrics-port", str(args.port),
                                                          "--iperf-port", str(args.port + 1)))
             for i in range(args.peers)]
    agent = None
    try:
        for i in range(args.peers):
            wait_ready(f"http://127.0.0.{i + 2}:{args.port}/metrics")
        spec = ",".join(f"peer{i}=127.0.0.{i + 2}:{args.port}" for i in range(args.peers))
        agent = start("bench", "127.0.0.1", spec, extra=("--metrics-port", str(args.port),
                                                         "--iperf-port", str(args.port + 1)))
        metrics_url = f"http://127.0.0.1:{args.port}/metrics"
        wait_ready(metrics_url)
        time.sleep(5.0)  # warm-up: imports and first probes
        t0, cpu0, cpu0_children = time.monotonic(), cpu_seconds(agent.pid), cpu_seconds(agent.pid, children=True)
        server_pids = child_pids(agent.pid)
        server_cpu0 = {p: cpu_seconds(p) for p in server_pids}
        rss: list[float] = []
        next_scrape = t0
        while time.monotonic() - t0 < args.duration:
            rss.append(rss_mib(agent.pid))
            if time.monotonic() >= next_scrape:
                with urllib.request.urlopen(metrics_url, timeout=5) as resp:
                    body = resp.read().decode()
                next_scrape += 15.0
            time.sleep(1.0)
        wall = time.monotonic() - t0
        cpu = cpu_seconds(agent.pid) - cpu0
        cpu_children = cpu_seconds(agent.pid, children=True) - cpu0_children - cpu
        server_cpu = sum(cpu_seconds(p) - c for p, c in server_cpu0.items() if Path(f"/proc/{p}").exists())
        tests = [line for line in body.splitlines() if line.startswith("netaware_probe_iperf_tests_total")]
        sent = sum(float(line.rsplit(" ", 1)[1]) for line in body.splitlines()
                   if line.startswith("netaware_probe_packets_sent_total"))
        answered = sum(1 for line in body.splitlines()
                       if line.startswith("netaware_probe_rtt_quantile_seconds") and 'quantile="0.9"' in line)
    finally:
        for process in ([agent] if agent else []) + peers:
            process.terminate()
        for process in ([agent] if agent else []) + peers:
            process.wait(timeout=15)

    m_cpu = 1000 * cpu / wall
    print(f"## Probe agent with {args.peers} peers ({wall:.0f} s, 2-core machine)\n")
    print("| measure | value | target | source paper |")
    print("|---|---|---|---|")
    print(f"| median RSS of the agent process | {statistics.median(rss):.1f} MiB (max {max(rss):.1f}) "
          "| ≤ 30 MiB | 16–20 MiB |")
    print(f"| average CPU of the agent process | {m_cpu:.1f} mCPU | ≤ 10 mCPU | 1–4 mCPU |")
    print(f"| + iperf3 client tests (children) | {1000 * cpu_children / wall:.1f} mCPU | – | – |")
    print(f"| + idle/serving iperf3 server child | {1000 * server_cpu / wall:.1f} mCPU | – | – |")
    print(f"| ratio to target (RSS, CPU) | {statistics.median(rss) / 30:.2f}, {m_cpu / 10:.2f} | ≤ 1 | – |")
    print(f"\nProbes sent (histogram export) at the last scrape: {sent:.0f}; peers with RTT quantiles "
          f"(quantile export): {answered}; iperf3 tests: "
          + ", ".join(t.split("{", 1)[1].replace('"}', "").replace('result="', "") for t in tests))
    return 0


if __name__ == "__main__":
    sys.exit(main())
