"""A trivial scheduler extender for bench/bench_rollout.py's ratio: the same HTTP server (granian,
one process) answering fixed results — filter keeps every candidate, prioritize gives each 0 — with
no state, no scoring and no logging. The floor of what any extender costs kube-scheduler."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import orjson


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    length = int(environ.get("CONTENT_LENGTH") or 0)
    args = orjson.loads(environ["wsgi.input"].read(length) or b"{}")
    names = args.get("NodeNames") or []
    if environ.get("PATH_INFO", "").endswith("/prioritize"):
        body = orjson.dumps([{"Host": n, "Score": 0} for n in names])
    else:
        body = orjson.dumps({"Nodes": None, "NodeNames": names, "FailedNodes": {},
                             "FailedAndUnresolvableNodes": {}, "Error": ""})
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]
