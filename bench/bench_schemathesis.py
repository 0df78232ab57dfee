#!/usr/bin/env python
"""Schemathesis against a running web server for a given time, as four identities at once: an
administrator's API token, an administrator's session (logged in through /login), a viewer's token
and nobody; response-conformance checks on (status code, content type, headers, body against the
OpenAPI schema) and no 5xx (issue 21).

    bench/bench_schemathesis.py --url http://127.0.0.1:8000 --duration 900 \
        --token nat_... --viewer-token nat_... --user admin --password ... [--seed N] [--out DIR]

Each identity is one ``schemathesis run`` with ``--max-time`` = duration, run in parallel; the seed
is printed (and reused for every identity) so a failure replays. Prints, per identity, the test
cases generated, the failures found, and the load average. The server should run with a high
``NETAWARE_LOGIN_FAILURE_LIMIT`` and ``NETAWARE_LOGIN_ADDRESS_FAILURE_LIMIT``: schemathesis sends
wrong credentials on purpose, and a lockout (429) would then hide the operations behind it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

CHECKS = ("not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,"
          "response_schema_conformance")
SCHEMATHESIS = str(Path(sys.executable).parent / "schemathesis")


def session_cookie(url: str, user: str, password: str) -> str:
    browser = requests.Session()
    page = browser.get(f"{url}/login", timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    if not token:
        raise SystemExit(f"no login form at {url}/login")
    done = browser.post(f"{url}/login", data={"username": user, "password": password,
                                              "csrfmiddlewaretoken": token.group(1)},
                        headers={"Referer": f"{url}/login"}, allow_redirects=False, timeout=30)
    if done.status_code != 302:
        raise SystemExit(f"login as {user} failed: HTTP {done.status_code}")
    return "; ".join(f"{k}={v}" for k, v in browser.cookies.items())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--duration", type=int, default=900, help="seconds per identity (run in parallel)")
    parser.add_argument("--token", required=True)
    parser.add_argument("--viewer-token", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--seed", type=int, default=random.SystemRandom().randrange(2**31))
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    url = args.url.rstrip("/")
    out = Path(args.out or tempfile.mkdtemp(prefix="bench-schemathesis-"))
    out.mkdir(parents=True, exist_ok=True)
    schema = out / "schema.json"
    answer = requests.get(f"{url}/api/schema/?format=json", headers={"Authorization": f"Bearer {args.token}"},
                          timeout=60)
    answer.raise_for_status()
    schema.write_bytes(answer.content)
    identities = {
        "token": ["-H", f"Authorization: Bearer {args.token}"],
        "session": ["-H", f"Cookie: {session_cookie(url, args.user, args.password)}"],
        "viewer": ["-H", f"Authorization: Bearer {args.viewer_token}"],
        "anonymous": [],
    }
    print(f"seed {args.seed}, {args.duration} s per identity, output in {out}", flush=True)
    started = time.monotonic()
    runs = {}
    for name, headers in identities.items():
        workdir = out / name
        workdir.mkdir(exist_ok=True)
        runs[name] = subprocess.Popen(
            [SCHEMATHESIS, "run", str(schema), "--url", url, "--checks", CHECKS, "--phases", "examples,fuzzing",
             "--max-time", str(args.duration), "--max-examples", "100000", "--seed", str(args.seed),
             "--request-timeout", "30", "--no-color", *headers],
            cwd=workdir, stdout=(workdir / "run.txt").open("w"), stderr=subprocess.STDOUT)
    results = {}
    for name, proc in runs.items():
        proc.wait()
        text = (out / name / "run.txt").read_text(errors="replace")
        generated = re.search(r"(\d+) generated", text)
        failures = re.search(r"found (\d+) unique failures?", text)
        results[name] = {"exit": proc.returncode, "generated": int(generated.group(1)) if generated else None,
                         "failures": int(failures.group(1)) if failures else 0,
                         "summary": text.strip().splitlines()[-1] if text.strip() else ""}
    results_meta = {"seed": args.seed, "seconds": round(time.monotonic() - started),
                    "load_average": [round(x, 2) for x in os.getloadavg()]}
    print(json.dumps({"identities": results, **results_meta}, indent=2))
    return 0 if all(r["exit"] == 0 for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
