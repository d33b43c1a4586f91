"""A dead or overloaded model API stops a real run early and resumably (issue 49 items 2 and 6): the API check
before the first cell (mutator/round/api_check.py), the circuit breaker across cells (eval/breaker.py), and a key
proxy's dropped connections logged to the data dir's harness.log instead of the terminal."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from eval.breaker import Breaker, api_cause
from mutator.config import ConfigError, load_settings
from mutator.store.db import connect_readonly
from tests.eval.agents.messages_server import demo_agent, error, is_check
from tests.eval.agents.test_real_run import clean_env, demo_subset, run_py

OVERLOADED = {"retry-after-ms": "5"}   # the SDK honours it: its own retries come at once


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]   # nothing listens once it is closed: connection refused


def real_args(tmp_path: Path, val_tasks: int = 2, *extra: str) -> tuple[str, ...]:
    train, val = demo_subset(tmp_path, "clean-train", 2), demo_subset(tmp_path, "clean-val", val_tasks)
    return ("--suite", str(train), "--val", str(val), "--real", "--agent", "anthropic", "--no-solve",
            "--rounds", "0", "--replicates", "1", "--data-dir", str(tmp_path / "data"), *extra)


def cells(tmp_path: Path) -> list[dict]:
    db = connect_readonly(tmp_path / "data" / "mutator.db")
    return [dict(r) for r in db.query("select * from cells")] if "cells" in db.table_names() else []


def run_row(tmp_path: Path) -> dict:
    db = connect_readonly(tmp_path / "data" / "mutator.db")
    return dict(next(iter(db.query("select * from runs"))))


def test_a_dead_endpoint_stops_a_real_run_before_any_cell(tmp_path: Path) -> None:
    env = clean_env(ANTHROPIC_BASE_URL=f"http://127.0.0.1:{closed_port()}", ANTHROPIC_API_KEY="test")
    done = run_py(*real_args(tmp_path), env=env, timeout=300)
    assert done.returncode == 8, done.stderr[-3000:]
    assert "API check before the first cell: the model API cannot be reached" in done.stderr
    assert "Connection refused" in done.stderr and "re-run the same command" in done.stderr
    assert cells(tmp_path) == []                         # no cell ran (the old code tried every one, twice)
    run = run_row(tmp_path)
    assert run["status"] == "stopped" and "cannot be reached" in run["error"] and not run["cost_usd"]


def test_an_overloaded_api_stops_at_the_check_and_the_run_resumes_once_it_answers(server, tmp_path: Path) -> None:
    server.responder = lambda body: error(529, "overloaded_error", OVERLOADED)
    env = clean_env(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="test", SM_ANTHROPIC_BACKOFF_S="0.01")
    args = real_args(tmp_path, 3)
    first = run_py(*args, env=env, timeout=300)
    assert first.returncode == 8, first.stderr[-3000:]
    assert "the model API is overloaded (529 overloaded_error)" in first.stderr
    # the bound: one check, tried 3 times by the SDK (the old code: 3 cells x 2 tries x 4 rounds x 3 requests)
    assert len(server.requests) <= 3 and all(is_check(body) for body in server.requests)
    assert cells(tmp_path) == [] and run_row(tmp_path)["status"] == "stopped"

    server.responder = demo_agent                        # the API is back: the same command completes
    second = run_py(*args, env=env, timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "API check:" in second.stderr
    done = cells(tmp_path)
    assert len(done) == 5 and {c["status"] for c in done} == {"ok"}   # 3 val + 2 train cells: none lost
    run = run_row(tmp_path)
    assert run["status"] == "finished"

    # a --test-run checks too, before its look: a dead API starts no test and runs no cell
    server.responder = lambda body: error(529, "overloaded_error", OVERLOADED)
    test = run_py("--test-run", run["id"], "--suite", "clean-test", "--data-dir", str(tmp_path / "data"),
                  env=env, timeout=300)
    assert test.returncode == 8 and "API check before the first cell" in test.stderr, test.stderr[-3000:]
    db = connect_readonly(tmp_path / "data" / "mutator.db")
    assert "test_runs" not in db.table_names() or db["test_runs"].count == 0
    assert len(cells(tmp_path)) == 5


def test_the_breaker_stops_a_run_whose_api_goes_down_after_the_check(server, tmp_path: Path) -> None:
    """The API answers the check, then 529s everything: 3 cell tries in a row (breaker.infraFailures) stop
    the run, not 2 tries of every cell; the resume runs exactly the cells left."""
    server.responder = lambda body: demo_agent(body) if is_check(body) else error(529, "overloaded_error",
                                                                                   OVERLOADED)
    env = clean_env(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="test", SM_ANTHROPIC_BACKOFF_S="0.01",
                    SM_ANTHROPIC_RETRIES="0")
    args = real_args(tmp_path, 4, "--concurrency", "1", "--infra-retries", "1")
    first = run_py(*args, env=env, timeout=300)
    assert first.returncode == 8, first.stderr[-3000:]
    assert "3 cell tries in a row failed on the infrastructure, not the skill (breaker.infraFailures 3)" \
        in first.stderr and "the model API is overloaded (529 overloaded_error)" in first.stderr
    checks = [body for body in server.requests if is_check(body)]
    tries = [body for body in server.requests if not is_check(body)]
    # 2 checks (haiku, opus), then at most 3 tries x 3 requests (the SDK's) at --concurrency 1; the old code
    # made 4 cells x 2 tries x 3 = 24 and had no check
    assert len(checks) == 2 and len(tries) <= 9
    stored = cells(tmp_path)
    assert 1 <= len(stored) <= 3 and {c["status"] for c in stored} == {"infra_error"}

    server.responder = demo_agent
    second = run_py(*args, env=env, timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]
    done = cells(tmp_path)
    assert len(done) == 6 and {c["status"] for c in done} == {"ok"}
    assert run_row(tmp_path)["status"] == "finished"


def test_a_proxys_dropped_connection_is_in_the_harness_log_not_on_the_terminal(server, tmp_path: Path) -> None:
    """The API cuts the build agent's first stream: the key proxy's aiohttp logs 'Error handling request' with
    a traceback, which used to land among the progress lines; the agent retries and the run completes."""
    state = {"cut": 0}

    def responder(body: dict):
        reply = demo_agent(body)
        if body.get("stream") and not state["cut"]:
            state["cut"] += 1
            reply.cut_mid = True
        return reply
    server.responder = responder
    env = clean_env(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="test", SM_ANTHROPIC_BACKOFF_S="0.01")
    done = run_py(*real_args(tmp_path), env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert state["cut"] == 1
    assert "Traceback" not in done.stderr and "Error handling request" not in done.stderr, done.stderr[-3000:]
    log = (tmp_path / "data" / "logs" / "harness.log").read_text(encoding="utf-8")
    assert "aiohttp.server ERROR: Error handling request" in log and "ClientPayloadError" in log


@pytest.mark.parametrize("value", [0, -1, 1001, 2**70, True])
def test_breaker_infra_failures_is_range_checked(tmp_path: Path, value) -> None:
    config = tmp_path / "config.json"
    shipped = json.loads((Path(__file__).resolve().parents[3] / "config.json").read_text(encoding="utf-8"))
    config.write_text(json.dumps({**shipped, "breaker": {"infraFailures": value}}), encoding="utf-8")
    with pytest.raises(ConfigError, match="breaker.infraFailures"):
        load_settings({}, config_file=config)


def test_the_breaker_counts_infra_failures_in_a_row_and_names_the_cause() -> None:
    breaker = Breaker(limit=3)
    for status in ("infra_error", "infra_error", "ok", "infra_error", "grader_error", "infra_error"):
        breaker.record(status, "infrastructure (the model API, not the skill): API error 529: OverloadedError")
    assert not breaker.open and breaker.in_a_row == 2   # an agent that finished resets; a grader_error does not
    breaker.record("infra_error", "infrastructure (the model API, not the skill): Connection error.")
    assert breaker.open and "cannot be reached" in str(breaker.stop()) and breaker.stop().exit_code == 8
    assert api_cause("API error 401: AuthenticationError")[0].endswith("(401 authentication_error)")


class JudgeSuite:
    runner, name, meta = "judge", "essays", {"judge_model": "claude-sonnet-4-5"}

    def option(self, key: str, default=None):
        return self.meta.get(key, default)


def test_the_check_asks_each_endpoint_key_and_model_once_and_only_of_our_backends() -> None:
    from mutator.round.api_check import targets
    env = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/", "ANTHROPIC_API_KEY": "sk-ant-planted"}
    ours = targets(launch={"agent": "anthropic", "mutator_agent": "anthropic"},
                   build_models=["claude-haiku-4-5", "claude-opus-4-5"], mutator_model="claude-opus-4-5",
                   suites=[JudgeSuite()], environ=env)
    assert [(t.endpoint.url, t.model) for t in ours] == [("http://127.0.0.1:9", "claude-haiku-4-5"),
                                                         ("http://127.0.0.1:9", "claude-opus-4-5"),
                                                         ("http://127.0.0.1:9", "claude-sonnet-4-5")]
    assert len(ours[1].users) == 2 and "sk-ant-planted" not in repr(ours)      # the key is never held in the clear
    own = targets(launch={"agent": "command", "mutator_agent": "command"}, build_models=["claude-haiku-4-5"],
                  mutator_model="claude-opus-4-5", suites=[JudgeSuite()], environ={**env, "SM_JUDGE": "fake"})
    assert own == []
