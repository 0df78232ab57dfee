"""Dashboard performance (issue 12 targets): topology page and its data for 200 nodes (server time
<= 300 ms, data <= 1 MB compressed), the placements map for 1,000 pods (<= 1 s), cold load of the
topology page in Chromium (<= 1 s); and (issue 23) the cold load of every other page of ours until its
main content is drawn (<= 1 s).

Seeds a scratch database through the real services (pipeline windows via ``store_window``, a
rebuild, AppGroups and placements via ``record_placement``), then measures:

1. server time of ``/`` and ``/dashboard/data/heatmap`` (cold: cache cleared; warm; 304 poll) and the
   heatmap's size raw and gzip-compressed, through Django's test client (no network);
2. the same for ``/dashboard/data/placements`` with 1,000 placed pods;
3. cold loads in Debian's Chromium (new browser context each time: empty cache) against gunicorn
   serving collected, compressed static files: navigation start until the heatmap is drawn, until
   the topology page's zone graph (plotly, below the fold) is drawn too, and until the placements
   map shows every pod.

The database must be a scratch one (its name must contain "bench"): it is flushed first.

With the tests' role (scripts/test.sh; it may create databases):

    psql "$(sed 's|/[^/]*$|/postgres|' var/secrets/test-database-url)" -c 'CREATE DATABASE netaware_dash_bench'
    DATABASE_URL="$(sed 's|/[^/]*$|/netaware_dash_bench|' var/secrets/test-database-url)" REDIS_URL=redis://127.0.0.1:6379/5 \\
        nice -n 10 .venv/bin/python bench/bench_dashboard.py
"""

from __future__ import annotations

import argparse
import gzip
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "netaware_site.settings")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.cache import cache  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils import timezone  # noqa: E402

PASSWORD = "bench-password"


def seed(nodes: int, windows: int, pods: int) -> None:
    from apps.appgroups import services as appgroups
    from apps.probes.services import store_window
    from apps.topology import services as topology

    zones = [f"z{i}" for i in range(10)]
    names = [f"node-{i:03d}" for i in range(nodes)]
    zone_of = {n: zones[i % len(zones)] for i, n in enumerate(names)}
    for n in names:
        topology.upsert_node(name=n, zone=zone_of[n], region="r0" if zone_of[n] < "z5" else "r1", source="metrics")
    src = [s for s in names for d in names if s != d]
    dst = [d for s in names for d in names if s != d]
    rng = np.random.default_rng(0)
    base = np.array([0.0005 if zone_of[s] == zone_of[d] else 0.005 for s, d in zip(src, dst, strict=True)])
    now = timezone.now().replace(microsecond=0)
    for w in range(windows):
        noise = 1 + 0.1 * rng.random(len(src))
        store_window(ts=now - timedelta(seconds=60 * (windows - w)), pairs={
            "rtt_p50": (src, dst, base * noise * 0.7), "rtt_p90": (src, dst, base * noise),
            "rtt_p99": (src, dst, base * noise * 2), "loss_ratio": (src, dst, 0.01 * rng.random(len(src))),
            "bandwidth_bps": (src, dst, 1e9 / (1 + 9 * (base > 0.001)))})
    topology.rebuild_topology(now=now)
    doc: dict[str, Any] = {"apiVersion": "netaware.io/v1alpha1", "kind": "AppGroup", "metadata": {"namespace": "", "name": "shop"},
           "spec": {"workloads": [
               {"name": "web", "selector": {"matchLabels": {"app": "web"}},
                "dependencies": [{"name": "api", "metrics": {"latency": 1, "bandwidth": 0.5, "lossrate": 0.2}}]},
               {"name": "api", "selector": {"matchLabels": {"app": "api"}},
                "dependencies": [{"name": "db", "metrics": {"latency": 1, "bandwidth": 1, "lossrate": 0}}]},
               {"name": "db", "selector": {"matchLabels": {"app": "db"}}}]}}
    per_group = 50
    for g in range(max(1, pods // per_group)):
        doc["metadata"]["namespace"] = f"team-{g:02d}"
        appgroups.import_document(document=doc)
        for p in range(per_group):
            app = ("web", "api", "db")[p % 3]
            appgroups.record_placement(pod_namespace=f"team-{g:02d}", pod_name=f"{app}-{p}", pod_uid="",
                                       node_name=names[(g * 7 + p) % nodes], labels={"app": app}, source="watcher")


def timed(client: Client, url: str, repeat: int, *, clear: bool, headers: dict | None = None) -> tuple[float, Any]:
    times, response = [], None
    for _ in range(repeat):
        if clear:
            cache.clear()
        started = time.perf_counter()
        response = client.get(url, **(headers or {}))
        if getattr(response, "streaming", False):
            b"".join(response.streaming_content)  # type: ignore[attr-defined]  # a StreamingHttpResponse
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), response


def server_figures(repeat: int) -> None:
    client = Client()
    client.force_login(get_user_model().objects.get(username="bench"))
    rows = []
    for label, url in (("topology page HTML", "/"), ("heatmap data (p90)", "/dashboard/data/heatmap?metric=latency_p90"),
                       ("heatmap data (p50, from samples)", "/dashboard/data/heatmap?metric=latency_p50"),
                       ("zone data", "/dashboard/data/zones"), ("placements page HTML", "/placements/"),
                       ("placements data", "/dashboard/data/placements")):
        cold, response = timed(client, url, repeat, clear=True, headers={"HTTP_ACCEPT_ENCODING": "gzip"})
        warm, response = timed(client, url, repeat, clear=False, headers={"HTTP_ACCEPT_ENCODING": "gzip"})
        etag = response.get("ETag")
        poll = timed(client, url, repeat, clear=False, headers={"HTTP_IF_NONE_MATCH": etag})[0] if etag else None
        body = response.content
        raw = len(gzip.decompress(body)) if response.get("Content-Encoding") == "gzip" else len(body)
        rows.append((label, cold, warm, poll, raw, len(body)))
    print(f"{'server (median of ' + str(repeat) + ')':36} {'cold ms':>8} {'warm ms':>8} {'304 ms':>7} {'raw KB':>8} {'sent KB':>8}")
    for label, cold, warm, poll, raw, sent in rows:
        print(f"{label:36} {cold:8.1f} {warm:8.1f} {poll if poll is not None else float('nan'):7.1f} {raw / 1024:8.1f} {sent / 1024:8.1f}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def browser_figures(repeat: int, pods: int) -> None:
    from playwright.sync_api import sync_playwright

    from apps.appgroups.models import AppGroup
    from apps.topology.models import Node

    call_command("collectstatic", interactive=False, verbosity=0)
    # Read before Playwright runs its event loop in this thread (the ORM refuses async contexts).
    group = AppGroup.objects.order_by("pk").first()
    node = Node.objects.exclude(zone="").order_by("name").first()
    peer = Node.objects.exclude(name=getattr(node, "name", "")).order_by("name").first()
    assert group is not None and node is not None and peer is not None
    port = free_port()
    # DEBUG off as in production: {% static %} then names the hashed, pre-compressed copies.
    env = {**os.environ, "ALLOWED_HOSTS": "127.0.0.1", "DEBUG": "false"}
    server = subprocess.Popen([sys.executable, "-m", "gunicorn", "netaware_site.wsgi:application", "--bind",
                               f"127.0.0.1:{port}", "--workers", "2", "--threads", "4", "--log-level", "warning"],
                              cwd=ROOT, env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            login = browser.new_context()
            page = login.new_page()
            page.set_default_timeout(120000)  # a loaded machine: slow, not broken (the figures say how slow)
            page.goto(base + "/login/")
            page.fill("input[name=username]", "bench")
            page.fill("input[name=password]", PASSWORD)
            page.click("#login-form button[type=submit]")
            page.wait_for_selector("#current-user")
            state = login.storage_state()
            login.close()
            # Every other page of ours, until its main content is drawn (issue 23).
            pages = [
                ("worst pairs", "/", "() => document.querySelectorAll('#worst-table tbody tr[data-pair]').length > 0"),
                ("link", f"/links/{node.name}/{peer.name}/",
                 "() => Number(document.getElementById('link-latency')?.dataset.points) > 0"),
                ("node", f"/nodes/{node.name}/", "() => document.querySelectorAll('#node-links tbody tr').length > 0"),
                ("zone", f"/zones/{node.zone}/", "() => document.querySelectorAll('#zone-pairs tbody tr').length > 0"),
                ("search", "/search/?q=n", "() => !!document.getElementById('search-results')"),
                ("appgroups", "/appgroups/", "() => !!document.getElementById('appgroup-table')"),
                ("appgroup", f"/appgroups/{group.pk}", "() => !!document.querySelector('#graph svg.graph')"),
                ("history", f"/appgroups/{group.pk}/history", "() => !!document.getElementById('history')"),
                ("editor", f"/appgroups/{group.pk}/edit", "() => document.getElementById('editor')?.dataset.valid === 'true'"),
                ("decisions", "/decisions/", "() => document.querySelectorAll('#decision-table tbody tr').length > 0"),
                ("evaluation", "/evaluation/", "() => !!document.getElementById('run-evaluation')"),
                ("diagnose", "/diagnose/?labels=app%3Dfrontend", "() => !!document.getElementById('diagnosis-sentences')"),
            ]
            figures: dict[str, list[float]] = {"topology": [], "placements": [], "zone graph": [],
                                               **{name: [] for name, _p, _r in pages}}
            transferred: dict[str, int] = {}
            for _ in range(repeat):
                for name, path, ready in (
                        ("topology", "/", "() => { const h = document.getElementById('heatmap'); return h && h.dataset.version; }"),
                        ("placements", "/placements/", f"() => document.querySelectorAll('.chip').length === {pods}"),
                        *pages):
                    context = browser.new_context(storage_state=state, viewport={"width": 1400, "height": 1000})
                    page = context.new_page()
                    sizes: list[int] = []
                    page.on("response", lambda r, sizes=sizes: sizes.append(int(r.headers.get("content-length") or 0)))  # type: ignore[call-overload]
                    page.goto(base + path, wait_until="commit")
                    page.wait_for_function(ready, timeout=120000)
                    elapsed = page.evaluate("() => performance.now()")  # ms since navigation start
                    figures[name].append(elapsed)
                    transferred[name] = sum(sizes)
                    if name == "topology":  # the rest of the page: the zone graph (plotly) below the fold
                        page.wait_for_function("() => Number(document.getElementById('zone-graph').dataset.edges) > 0",
                                               timeout=120000)
                        figures["zone graph"].append(page.evaluate("() => performance.now()"))
                        transferred["zone graph"] = sum(sizes)
                    context.close()
            browser.close()
        print(f"\nChromium cold load (new context each time, empty cache; median / min / max of {repeat}):")
        for name, values in figures.items():
            print(f"  {name:12} {statistics.median(values):7.0f} ms  ({min(values):.0f} / {max(values):.0f})"
                  f"  ~{transferred[name] / 1024:.0f} KB transferred (Content-Length sum)")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--windows", type=int, default=10, help="pipeline windows stored (samples per cell)")
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    name = settings.DATABASES["default"]["NAME"]
    if "bench" not in name:
        sys.exit(f"refusing to flush database {name!r}: use a scratch database whose name contains 'bench'")
    call_command("migrate", interactive=False, verbosity=0)
    call_command("flush", interactive=False, verbosity=0)
    cache.clear()
    user = get_user_model().objects.create_user("bench", password=PASSWORD)
    from django.contrib.auth.models import Group

    user.groups.add(Group.objects.get(name="editor"))  # the editor page too
    started = time.perf_counter()
    seed(args.nodes, args.windows, args.pods)
    print(f"seeded {args.nodes} nodes x {args.windows} windows, {args.pods} pods in {time.perf_counter() - started:.0f} s")
    server_figures(args.repeat)
    if not args.no_browser:
        browser_figures(args.repeat, args.pods)


if __name__ == "__main__":
    main()
