"""The run command's mesh emulator (``manage.py run_mesh_emulator``) reports bad arguments by name, and the
Prometheus config the run command writes scrapes it (``run_emulator --extra-target``); idle periods count
from the emulator's start, so every edge is busy first."""

from __future__ import annotations

import io

import pytest
import yaml
from django.core.management import CommandError, call_command

from apps.demo.mesh import Call, MeshEmulator


def test_mesh_emulator_checks_its_arguments():
    out = io.StringIO()
    call_command("run_mesh_emulator", "--check", stdout=out)
    assert "15 call edges of default/online-boutique, OK" in out.getvalue()
    for args, field in ((["--idle", "a:b"], "--idle"), (["--idle", "a:b:0:0.5"], "--idle"),
                        (["--formats", "istio,zipkin"], "--formats"), (["--rate", "0"], "--rate"),
                        (["--appgroup", "/nonexistent.yaml"], "--appgroup")):
        with pytest.raises(CommandError, match=field):
            call_command("run_mesh_emulator", "--check", *args)


def test_the_written_prometheus_config_scrapes_the_mesh_emulator(tmp_path):
    path = tmp_path / "prometheus.yml"
    call_command("run_emulator", "--scenario", "scenarios/paper-testbed.yaml", "--port", "9200", "--config-only",
                 "--write-prometheus-config", str(path), "--extra-target", "mesh=127.0.0.1:9210", stdout=io.StringIO())
    jobs = {job["job_name"]: job for job in yaml.safe_load(path.read_text())["scrape_configs"]}
    assert jobs["mesh"]["static_configs"] == [{"targets": ["127.0.0.1:9210"]}]
    with pytest.raises(CommandError, match="--extra-target"):
        call_command("run_emulator", "--scenario", "scenarios/paper-testbed.yaml", "--port", "9200", "--config-only",
                     "--write-prometheus-config", str(path), "--extra-target", "mesh 127.0.0.1", stdout=io.StringIO())


def test_an_idle_edge_is_busy_first_then_idle_then_busy_again():
    now = [1000.0]
    emulator = MeshEmulator([Call("a", "b", 50.0, idle_period_s=100.0, idle_fraction=0.5), Call("a", "c", 50.0)],
                            namespace="shop", formats=["linkerd"], clock=lambda: now[0])
    def requests_ab() -> int:
        text = emulator.render().decode()
        return sum(int(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("response_total{") and 'dst_deployment="b"' in line)
    now[0] += 40
    busy = requests_ab()
    assert busy > 1000 and emulator.true_edges() == {("a", "b"), ("a", "c")}
    now[0] += 30  # 70 s in: idle
    idle = requests_ab()
    now[0] += 20
    assert requests_ab() == idle and emulator.true_edges() == {("a", "c")}
    now[0] += 30  # 120 s in: busy again
    assert requests_ab() > idle
