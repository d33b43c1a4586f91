"""The sandbox proof: an adversarial agent tries every escape; bwrap stops each, none stops none.

Same agent, same cell, same plan under both launchers, so the difference is the sandbox. Writes,
connections and signals are judged on the host side too, not only from the agent's own report.
"""

from __future__ import annotations

import pytest

from sandbox.bwrap import BwrapLauncher
from sandbox.none import NoneLauncher
from tests.sandbox.conftest import World, needs_bwrap

ATTEMPTS = ("read_answer_key", "read_test_suite", "read_sibling_cell", "read_home", "write_outside",
            "remount_readonly", "write_readonly", "connect_localhost", "signal_harness")
# A bare process can do all of these except remounting: its read-only dir is no mount point, and
# writing into it needs no remount at all.
BARE_POSSIBLE = set(ATTEMPTS) - {"remount_readonly"}


def succeeded(report: dict) -> set[str]:
    return {name for name, outcome in report.items() if outcome["ok"]}


def test_bare_process_escapes_everything_it_can(world: World) -> None:
    plan = world.plan()
    cell, report = world.run_cell(NoneLauncher(), plan)
    assert cell.status == "ok", cell.error
    expected = BARE_POSSIBLE - ({"read_home"} if not plan["home"] else set())
    assert succeeded(report) == expected, report
    assert world.host_traces() == dict.fromkeys(("write_outside", "write_readonly", "connect_localhost",
                                                 "signal_harness"), True)


@needs_bwrap
def test_bwrap_stops_every_escape(world: World) -> None:
    plan = world.plan()
    cell, report = world.run_cell(BwrapLauncher(), plan)
    assert cell.status == "ok", cell.error  # the agent ran, wrote its report in its cell, and was graded
    assert set(report) == set(ATTEMPTS) - ({"read_home"} if not plan["home"] else set())
    # The tmp data dir lies under the sandbox's private /tmp, so a write there "succeeds" into a tmpfs
    # that vanishes with the sandbox: for writes the host side is the judge.
    assert succeeded(report) <= {"write_outside"}, report
    assert world.host_traces() == dict.fromkeys(("write_outside", "write_readonly", "connect_localhost",
                                                 "signal_harness"), False)
    assert not (world.data_dir / "escaped.txt").exists()
    for name in ("read_answer_key", "read_test_suite", "read_sibling_cell"):
        assert "FileNotFoundError" in report[name]["detail"], report[name]  # invisible, not just denied


@needs_bwrap
def test_without_cap_drop_root_remounts_its_readonly_bind(world: World) -> None:
    """Why --cap-drop ALL is there: as root, bwrap otherwise keeps CAP_SYS_ADMIN in the sandbox."""
    _, report = world.run_cell(BwrapLauncher(drop_caps=False), world.plan())
    assert report["remount_readonly"]["ok"] and report["write_readonly"]["ok"], report
    _, report = world.run_cell(BwrapLauncher(), world.plan())
    assert not report["remount_readonly"]["ok"] and "Operation not permitted" in report["remount_readonly"]["detail"]


@needs_bwrap
@pytest.mark.parametrize("network", [False, True])
def test_network_is_unshared_unless_asked(world: World, network: bool) -> None:
    """--share-net only when the backend needs the model API: then 127.0.0.1 is the host's."""
    import json
    import subprocess
    plan = {"port": world.listener.getsockname()[1]}
    argv = BwrapLauncher().wrap(world.agent_argv, cwd=world.root, writable=[world.root], readable=[],
                                network=network)
    subprocess.run(argv, cwd=world.root, env={"ESCAPE_PLAN": json.dumps(plan), "PATH": "/usr/bin:/bin"},
                   check=True, timeout=60)
    report = json.loads((world.root / "escape-report.json").read_text())
    assert report["connect_localhost"]["ok"] is network, report
