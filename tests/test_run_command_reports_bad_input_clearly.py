"""The run command's bad input: one clear message that says what to do, exit code 1, nothing left running.

Each case runs ``bash scripts/up.sh`` as a user would, with one thing wrong: a port already taken, a
``DATABASE_URL`` whose password PostgreSQL refuses (on a cluster with Debian's default
``scram-sha-256``, where a wrong password really is refused), a scenario file with an error, and a user
who is neither root nor has sudo. Afterwards ``bash scripts/up.sh stop`` succeeds and nothing runs.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support import debian_pg, privilege
from tests.support.stack import DEFAULT_PORTS, base_env, own_ports, run_up, with_database

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


@pytest.fixture
def up_env(tmp_path):
    """Environment of an up.sh run of its own: state directory, a free port for every port it listens on
    (a stack on the default ports may be running), a database name of its own."""
    state = tmp_path / "state"
    env = base_env(
        NETAWARE_STATE_DIR=str(state),
        **own_ports(),
        DATABASE_URL=with_database(os.environ["DATABASE_URL"], f"netaware_badinput_{os.getpid()}"),
    )
    yield env
    stopped = run_up(env, "stop", timeout=120)
    assert stopped.returncode == 0, stopped.stderr


def assert_one_clear_error(result: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert result.returncode == 1, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if "[netaware] error:" in line]
    assert len(errors) == 1, result.stderr
    for needle in needles:
        assert needle in errors[0], errors[0]
    assert "netaware is up" not in result.stdout
    return errors[0]


def assert_stop_leaves_nothing(env: dict[str, str]) -> None:
    stopped = run_up(env, "stop", timeout=120)
    assert stopped.returncode == 0, stopped.stderr
    status = run_up(env, "status", timeout=60)
    assert status.returncode == 0 and "running" not in status.stdout, status.stdout
    run_dir = Path(env["NETAWARE_STATE_DIR"]) / "run"
    assert not list(run_dir.glob("*.pid")) if run_dir.exists() else True


def test_a_taken_port_names_the_port_and_the_variable_to_change(up_env):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        up_env["NETAWARE_PROMETHEUS_PORT"] = str(port)
        result = run_up(up_env)
    assert_one_clear_error(result, f"port {port}", "already in use", "NETAWARE_PROMETHEUS_PORT=")
    assert_stop_leaves_nothing(up_env)


def test_a_scenario_with_an_error_names_the_file_and_the_field(up_env, tmp_path):
    scenario = tmp_path / "broken.yaml"
    scenario.write_text("name: broken\nregions: 5\n")
    up_env["NETAWARE_SCENARIO"] = str(scenario)
    result = run_up(up_env)
    assert_one_clear_error(result, str(scenario), "regions: must be a list", "NETAWARE_SCENARIO")
    assert_stop_leaves_nothing(up_env)


def test_the_fixture_moves_every_port_so_it_runs_beside_a_stack_on_the_defaults(up_env, tmp_path):
    # Every default port is taken (by a running stack, or here by the test): the run gets past both
    # port checks and stops at the scenario, which up.sh checks after them.
    assert set(DEFAULT_PORTS) >= {"NETAWARE_WEB_PORT", "NETAWARE_KUBE_PORT", "NETAWARE_EXTENDER_PORT"}
    with contextlib.ExitStack() as held:
        for port in DEFAULT_PORTS.values():
            sock = held.enter_context(socket.socket())
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            with contextlib.suppress(OSError):  # already taken: as good
                sock.bind(("127.0.0.1", port))
                sock.listen()
        scenario = tmp_path / "broken.yaml"
        scenario.write_text("name: broken\nregions: 5\n")
        up_env["NETAWARE_SCENARIO"] = str(scenario)
        result = run_up(up_env)
    error = assert_one_clear_error(result, str(scenario), "regions: must be a list")
    assert "already in use" not in error


@pytest.fixture
def scram_cluster():
    with debian_pg.fresh_cluster() as cluster:
        yield cluster


def test_a_database_url_whose_password_is_refused_says_so(up_env, scram_cluster):
    made = scram_cluster.psql_as_postgres("CREATE ROLE naw_probe LOGIN PASSWORD 'right-one';\n"
                                          "CREATE DATABASE naw_probe OWNER naw_probe;\n")
    assert made.returncode == 0, made.stderr
    url = f"postgres://naw_probe:{{}}@127.0.0.1:{scram_cluster.port}/naw_probe"
    # The same URL with the right password passes the check: the message is about the password only.
    accepted = subprocess.run(["bash", "-c", 'source scripts/lib.sh; prepare_state; check_database_url "$1" create',
                               "_", url.format("right-one")], cwd=ROOT, env=up_env, capture_output=True, text=True,
                              timeout=60)
    assert accepted.returncode == 0, accepted.stderr
    up_env["DATABASE_URL"] = url.format("wrong-one")
    result = run_up(up_env)
    assert_one_clear_error(result, f"127.0.0.1:{scram_cluster.port}", "refused the password", "naw_probe",
                           "DATABASE_URL")
    assert "wrong-one" not in result.stderr + result.stdout  # the password itself is never printed
    assert_stop_leaves_nothing(up_env)


def test_no_root_and_no_sudo_says_which_steps_need_root(up_env):
    # The command runs as the unprivileged user nobody, started as root (itself, or through sudo).
    if (reason := privilege.unavailable()) is not None or privilege.which("runuser") is None:
        pytest.skip(f"runs the command as the user nobody: {reason or 'runuser is missing (util-linux)'}")
    # A PATH like the machine's, minus sudo: the user can do everything but become root.
    bin_dir = Path(tempfile.mkdtemp(prefix="netaware-nosudo-"))
    try:
        for directory in ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"):
            for tool in Path(directory).iterdir() if Path(directory).is_dir() else ():
                target = bin_dir / tool.name
                if tool.name != "sudo" and not target.exists():
                    target.symlink_to(tool)
        os.chmod(bin_dir, 0o755)
        # pytest's tmp_path is private to root: the user needs a state directory it can reach.
        state = Path(tempfile.mkdtemp(prefix="netaware-nobody-", dir=bin_dir)) / "state"
        state.mkdir()
        privilege.run("chown", "nobody", str(state))
        os.chmod(state.parent, 0o755)
        up_env["NETAWARE_STATE_DIR"] = str(state)
        # The clone may sit where nobody cannot read (CI's is anywhere): the checks that come before
        # anything else need only the scripts, so nobody runs a readable copy of them.
        scripts = Path(tempfile.mkdtemp(prefix="netaware-scripts-", dir=bin_dir)) / "scripts"
        shutil.copytree(ROOT / "scripts", scripts)
        for path in (scripts.parent, scripts, *scripts.iterdir()):
            path.chmod(0o755)
        env = {k: v for k, v in up_env.items() if k not in {"DATABASE_URL", "DATABASE_URL_FILE"}}
        env.update(PATH=f"{bin_dir}", HOME=str(state), NETAWARE_VENV=str(Path(sys.executable).parent.parent))
        as_nobody = privilege.as_root("runuser", "-u", "nobody", "--", "env", "-i",
                                      *[f"{k}={v}" for k, v in env.items()])
        result = subprocess.run([*as_nobody, "bash", str(scripts / "up.sh")], cwd=scripts,
                                capture_output=True, text=True, timeout=120)
        assert_one_clear_error(result, "neither root nor has sudo", "PostgreSQL", "Run the command as root",
                               "DATABASE_URL")
        stopped = subprocess.run([*as_nobody, "bash", str(scripts / "up.sh"), "stop"], cwd=scripts,
                                 capture_output=True, text=True, timeout=120)
        assert stopped.returncode == 0, stopped.stderr
    finally:
        privilege.remove_tree(bin_dir)  # nobody wrote into its state directory
