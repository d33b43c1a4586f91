"""A run's stored spend equals what the API served: after a real SIGINT mid-call, after judge errors, and after
the resume that finishes each (real anthropic SDK agents and judge against the local Messages-API server)."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from eval.cost import Usage, usd
from mutator.store.db import connect_readonly
from tests.conftest import with_sigint
from tests.eval.agents.messages_server import Reply, demo_agent, system_text
from tests.eval.agents.test_real_run import PRICES, ROOT, clean_env, demo_subset, run_py

JUDGE_OK = '{"correctness": 8, "procedure": 7, "conciseness": 9, "expectations": [], "feedback": "Fine."}'


def served_usd(server) -> float:
    """The server's log, priced: the build agents and the judge at haiku, the mutator at opus."""
    return (usd(PRICES["claude-haiku-4-5"], Usage(**server.served_usage("claude-haiku-4-5")))
            + usd(PRICES["claude-opus-4-5"], Usage(**server.served_usage("claude-opus-4-5"))))


def stored_usd(data: Path) -> float:
    db = connect_readonly(data / "mutator.db")
    return float(next(iter(db.query("select cost_usd from runs")))["cost_usd"])


def real_run(server, train: Path, val: Path, data: Path) -> tuple[tuple[str, ...], dict]:
    """run.py's arguments and environment for a one-round real run (anthropic SDK agents) against `server`."""
    args = ("--suite", str(train), "--val", str(val), "--real", "--agent", "anthropic", "--rounds", "1",
            "--replicates", "1", "--concurrency", "2", "--data-dir", str(data))
    return args, clean_env(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="test", SM_ANTHROPIC_BACKOFF_S="0.01")


class HangOnce:
    """The demo's model, except that the n-th request of `model` streams its first event and then hangs."""

    def __init__(self, model: str, n: int) -> None:
        self.model, self.n, self.seen = model, n, 0
        self.hanging = threading.Event()

    def __call__(self, body: dict) -> Reply:
        reply = demo_agent(body)
        if body.get("model") == self.model:
            self.seen += 1
            if self.seen == self.n:
                reply.hang_mid_s = 600
                self.hanging.set()
        return reply


@pytest.mark.parametrize(("model", "n"), [("claude-haiku-4-5", 7), ("claude-opus-4-5", 2)],
                         ids=["mid-cell", "mid-mutation"])
def test_spend_after_a_sigint_mid_call_equals_what_was_served(server, tmp_path: Path, model: str, n: int) -> None:
    responder = HangOnce(model, n)
    server.responder = responder
    data = tmp_path / "data"
    train, val = demo_subset(tmp_path, "clean-train", 2), demo_subset(tmp_path, "clean-val", 3)
    args = [sys.executable, str(ROOT / "run.py"), "--suite", str(train), "--val", str(val), "--real", "--agent",
            "anthropic", "--rounds", "1", "--replicates", "1", "--concurrency", "2", "--data-dir", str(data)]
    env = clean_env(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="test", SM_ANTHROPIC_BACKOFF_S="0.01")
    # SIGINT is restored to its default in the child, so the real signal arrives however this test was started
    proc = subprocess.Popen(with_sigint(args), cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert responder.hanging.wait(600), "the run never reached the hanging call"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0, err[-3000:]
    db = connect_readonly(data / "mutator.db")
    assert next(iter(db.query("select status from runs")))["status"] == "stopped"
    before = served_usd(server)
    assert before > 0 and stored_usd(data) == pytest.approx(before, abs=1e-6)
    # the resume pays the cut-short call again, once, and finishes: still exactly what was served
    server.responder = demo_agent
    done = run_py(*args[2:], env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    assert served_usd(server) > before
    assert stored_usd(data) == pytest.approx(served_usd(server), abs=1e-6)


def judge_suite(tmp_path: Path, name: str, tasks: int) -> Path:
    suite = demo_subset(tmp_path, name, tasks)
    meta = (suite / "suite.md").read_text().replace("runner: script", "runner: judge")
    (suite / "suite.md").write_text(meta)
    return suite


def test_spend_after_judge_errors_and_their_resume_equals_what_was_served(server, tmp_path: Path) -> None:
    judge = {"reply": "I cannot grade this."}   # garbled: every cell is a grader_error, the seed unhealthy

    def model(body: dict) -> Reply:
        if system_text(body).startswith("You grade one attempt"):
            return Reply([{"type": "text", "text": judge["reply"]}], "end_turn",
                         {"input_tokens": 900, "output_tokens": 60})
        return demo_agent(body)
    server.responder = model
    data = tmp_path / "data"
    train, val = judge_suite(tmp_path, "clean-train", 2), judge_suite(tmp_path, "clean-val", 2)
    args, env = real_run(server, train, val, data)
    first = run_py(*args, env=env)
    assert first.returncode == 8, first.stderr[-3000:]   # the seed's evaluation is incomplete (grader_error cells)
    db = connect_readonly(data / "mutator.db")
    assert stored_usd(data) == pytest.approx(served_usd(server), abs=1e-6)
    assert {r["status"] for r in db.query("select status from cells")} == {"grader_error"}
    assert all(r["grader_cost_usd"] > 0 for r in db.query("select grader_cost_usd from cells"))   # failed calls paid
    build_calls = len([r for r in server.requests if not system_text(r).startswith("You grade")])
    judge["reply"] = JUDGE_OK
    # unusable judge replies are cached (a resume never re-pays them); the stop message says to delete them
    # to ask again, as a user who fixed the judge does
    cached = list((data / "evals" / "judge-cache").glob("*.json"))
    assert cached
    for path in cached:
        path.unlink()
    second = run_py(*args, env=env)   # re-grades the seed's cells (no agent runs again), then the round
    assert second.returncode == 0, second.stderr[-4000:]
    assert stored_usd(data) == pytest.approx(served_usd(server), abs=1e-6)
    seed_cells = [dict(r) for r in db.query("select c.* from cells c join evaluations e on e.id = c.evaluation_id "
                                            "join runs r on r.seed_hash = e.genome_hash")]
    assert seed_cells and all(c["status"] == "ok" and c["retries"] == 0 for c in seed_cells)
    # the regrade ran no build agent: the seed's cells were built by the first command's requests only
    assert build_calls > 0
