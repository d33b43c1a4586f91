"""--mine-traces: fixture transcripts -> exactly the expected judge-graded tasks; no planted secret in any
written file; the split is the same for the same seed and keeps sessions whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.suite import load_suite
from mutator.mining.judging import judge_pass
from mutator.mining.mine import MineOptions, MiningError, collect, mine
from mutator.mining.secrets import findings
from mutator.mining.split import SplitError, split_sessions
from mutator.mining.traces import is_correction
from tests.conftest import run_cli
from tests.mutator.mining.transcripts import EXPECTED, REDACTED_EXTRA, SECRETS, seed_skill, write_fixture


@pytest.fixture
def traces(tmp_path: Path) -> tuple[Path, Path]:
    skill = seed_skill(tmp_path)
    return write_fixture(tmp_path, skill), skill


def tasks_of(out: Path) -> dict[str, dict]:
    found = {}
    for split in ("train", "val", "test"):
        path = out / f"{out.name}-{split}"
        if path.is_dir():
            suite = load_suite(path)
            assert suite.runner == "judge" and suite.split == split
            for task in suite.tasks:
                found[task.prompt] = {"split": split, "id": task.id, "expectations": task.expectations}
    return found


def every_written_text(root: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in root.rglob("*") if p.is_file())


def test_the_mined_suites_hold_exactly_the_expected_tasks(traces, tmp_path: Path) -> None:
    projects, skill = traces
    out = tmp_path / "suites" / "mined"
    record = mine(MineOptions(projects, skill, out, seed=1))
    found = tasks_of(out)
    assert set(found) == set(EXPECTED)
    corrected = found["Clean up the customer emails column in the CRM export please"]
    assert corrected["expectations"] == ("Correction from the user: you must also remove the duplicate customer rows.",)
    accepted = found["How should the order dates in my sales export be written?"]
    assert accepted["expectations"] == ("Write every date as ISO YYYY-MM-DD, for example 2024-03-15.",)
    assert record["read"] == {"files": 7, "sessions": 10, "requests": 16, "older_than_since": 0, "unreadable_lines": 1}
    assert record["dropped"] == {"secret": 4, "skill-not-used": 1, "too-short": 1, "no-outcome": 2, "tool-noise": 1,
                                 "duplicate": 1}
    assert record["kept"] == 6 and record["secrets"] == {"found": 4, "dropped": 4, "redacted": 0}
    sizes = [record["splits"][s]["tasks"] for s in ("train", "val", "test")]
    assert sum(sizes) == 6 and min(sizes) >= 1      # whole sessions: a two-request session may fill val alone
    assert json.loads((out / "mining.json").read_text()) == record


@pytest.mark.parametrize("redact", [False, True])
def test_no_planted_secret_reaches_any_written_file(traces, tmp_path: Path, redact: bool) -> None:
    projects, skill = traces
    out = tmp_path / "suites" / "mined"
    record = mine(MineOptions(projects, skill, out, seed=1, redact=redact))
    written = every_written_text(out)
    assert not [s for s in SECRETS if s in written] and findings(written) == 0
    assert "11111111-aaaa" not in written and "/home/u" not in written   # no raw session id, no path
    if redact:
        assert set(tasks_of(out)) == set(EXPECTED) | set(REDACTED_EXTRA)
        assert record["secrets"] == {"found": 4, "dropped": 0, "redacted": 4}
        phone = tasks_of(out)["Format the phone numbers column in the contacts export"]
        assert phone["expectations"] == ("Correction from the user: They need the +44 country prefix too, "
                                         "password=[REDACTED]",)


def test_the_split_is_the_same_for_the_same_seed_and_keeps_sessions_whole(traces, tmp_path: Path) -> None:
    projects, skill = traces
    records = [mine(MineOptions(projects, skill, tmp_path / str(i) / "mined", seed=seed))
               for i, seed in enumerate((5, 5, 6, 7, 8))]
    assert records[0]["splits"] == records[1]["splits"]
    assert len({json.dumps(r["splits"], sort_keys=True) for r in records}) > 1   # the seed matters
    for record in records:
        sides = [set(record["splits"][s]["sessions"]) for s in ("train", "val", "test")]
        assert not (sides[0] & sides[1] or sides[0] & sides[2] or sides[1] & sides[2])
    # the two requests of session 1 always land on the same side
    for i in range(5):
        found = tasks_of(tmp_path / str(i) / "mined")
        assert found["How should the order dates in my sales export be written?"]["split"] == \
            found["Thanks. And what about the amount column with dollar signs?"]["split"]


@pytest.mark.parametrize("sessions, seed", [(["a", "b"], 0), (["a"] * 5 + ["b"], 1), (list("abcdefghij"), 2),
                                            (["a"] * 3 + ["b"] * 3 + ["c"], 3)])
def test_split_sessions_keeps_train_and_val_non_empty(sessions: list[str], seed: int) -> None:
    side = split_sessions(sessions, seed=seed)
    assert set(side) == set(sessions)
    assert "train" in side.values() and "val" in side.values()
    assert split_sessions(sessions, seed=seed) == side


def test_one_session_cannot_be_split() -> None:
    with pytest.raises(SplitError, match="at least 2"):
        split_sessions(["a", "a"], seed=0)


@pytest.mark.parametrize("text, expected", [
    ("No, the dates must be ISO", True), ("That's not what I asked for", True), ("Actually use commas", True),
    ("you forgot the header row", True), ("Now do the refunds export", False), ("Thanks! Next question", False),
    ("Nobody uses that column", False),
])
def test_corrections_are_told_from_new_requests(text: str, expected: bool) -> None:
    assert is_correction(text) is expected


def test_since_leaves_older_requests_out(traces, tmp_path: Path) -> None:
    projects, skill = traces
    from mutator.mining.mine import parse_since
    record = mine(MineOptions(projects, skill, tmp_path / "mined", since=parse_since("2026-11-02T12:30")))
    # sessions 1-4 are older; without session 1, the repeat of its question in session 5 is new
    assert record["read"]["older_than_since"] == 6 and record["kept"] == 4 and "duplicate" not in record["dropped"]


def test_the_judge_pass_drops_what_the_judge_cannot_grade(traces, tmp_path: Path) -> None:
    projects, skill = traces
    from eval.cost import Price
    price = Price(input=1.0, output=5.0, cache_write=1.25, cache_read=0.1)
    record = mine(MineOptions(projects, skill, tmp_path / "mined", seed=1, judge="fake", judge_price=price))
    assert record["judge"]["backend"] == "fake" and record["judge"]["calls"] == 6 and record["judge"]["cost_usd"] > 0
    assert record["kept"] + record["judge"]["dropped"] == 6


def test_an_existing_folder_is_not_overwritten(traces, tmp_path: Path) -> None:
    projects, skill = traces
    mine(MineOptions(projects, skill, tmp_path / "mined"))
    with pytest.raises(MiningError, match="already exists"):
        mine(MineOptions(projects, skill, tmp_path / "mined"))


def test_the_cli_prints_the_report_and_the_next_command(traces, tmp_path: Path) -> None:
    projects, skill = traces
    out = tmp_path / "suites" / "mined"
    result = run_cli("--mine-traces", str(projects), "--skill-dir", str(skill), "--out", str(out), "--seed", "1")
    assert result.returncode == 0, result.stderr
    assert "kept 6" in result.stdout and "duplicate 1" in result.stdout and "Dry run: python run.py" in result.stdout
    assert not [s for s in SECRETS if s in result.stdout + result.stderr]
    missing = run_cli("--mine-traces", str(tmp_path / "nowhere"), "--skill-dir", str(skill), "--out", str(out) + "2")
    assert missing.returncode == 2 and "no such folder" in missing.stderr


@pytest.mark.parametrize("extra, message", [
    (("--plan",), "--plan cannot go with"), (("--watch", "x"), "two commands"), ((), "need --out")])
def test_the_mining_flags_refuse_what_they_cannot_do(traces, tmp_path: Path, extra, message) -> None:
    projects, skill = traces
    out = () if not extra else ("--out", str(tmp_path / "mined"))
    result = run_cli("--mine-traces", str(projects), "--skill-dir", str(skill), *out, *extra)
    assert result.returncode == 2 and message in result.stderr


def test_a_real_judge_pass_is_metered_and_stops_at_the_budget(traces, tmp_path: Path, monkeypatch) -> None:
    # the real judge against the local Messages-API server: every call passes the metering proxy, its cost is
    # what the server served, and --budget-usd lets no call start that would pass it (a pilot call first)
    from eval.cost import Price, Usage, usd
    from tests.eval.agents.messages_server import MessagesServer, message, text, usage
    projects, skill = traces
    server = MessagesServer()
    server.responder = lambda body: message(text("no verdict here"), use=usage(1000, 100))   # $0.0015 a call
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "local")
    price = Price(input=1.0, output=5.0, cache_write=1.25, cache_read=0.1)
    tasks = collect(MineOptions(projects, skill, tmp_path / "mined")).tasks
    try:
        kept, judged = judge_pass(tasks, backend="anthropic", model="claude-haiku-4-5", price=price, budget_usd=0.005)
    finally:
        server.close()
    assert len(tasks) >= 6 and (judged.calls, len(judged.unjudged), len(server.served)) == (3, len(tasks) - 3, 3)
    assert judged.cost_usd == pytest.approx(usd(price, Usage(**server.served_usage())), abs=1e-9)   # what was served
    assert judged.cost_usd == pytest.approx(0.0045) and kept == []   # 3 x $0.0015 fit; a garbled verdict grades none
    assert set(judged.dropped) == {t.id for t in tasks}


def test_a_judge_pass_cut_short_is_charged_once_from_the_meters_it_left(traces, tmp_path: Path, monkeypatch) -> None:
    # the meters wait in the data dir, not a temporary folder: a pass that crashed before its charge leaves them,
    # the next mining command charges exactly what was served, and a crash after the charge charges nothing twice
    from eval.cost import Price, Usage, usd
    from mutator.mining.judging import charge_pass, judge_meters
    from mutator.store.db import connect_readonly
    from tests.eval.agents.messages_server import MessagesServer, message, text, usage
    projects, skill = traces
    server = MessagesServer()
    server.responder = lambda body: message(text("no verdict here"), use=usage(1000, 100))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "local")
    price = Price(input=1.0, output=5.0, cache_write=1.25, cache_read=0.1)
    data, db_path = tmp_path / "data", tmp_path / "data" / "mutator.db"
    tasks = collect(MineOptions(projects, skill, tmp_path / "mined")).tasks[:4]
    try:
        judge_pass(tasks, backend="anthropic", model="claude-haiku-4-5", price=price, meters=judge_meters(data))
    finally:
        server.close()
    left = sorted(judge_meters(data).glob("*.meter.jsonl"))
    assert len(left) == 4 and not db_path.exists()   # the process "crashed" here: nothing charged yet
    kept_copy = left[0].read_bytes()
    served = usd(price, Usage(**server.served_usage()))
    assert charge_pass(db_path, None, judge_meters(data), lambda model: price) == pytest.approx(served, abs=1e-9)
    left[0].write_bytes(kept_copy)   # a crash between a meter's charge and its removal
    assert charge_pass(db_path, None, judge_meters(data), lambda model: price) == 0.0
    assert not list(judge_meters(data).glob("*"))
    rows = list(connect_readonly(db_path).query("select run_id, kind, usd from charges"))
    assert [(r["run_id"], r["kind"]) for r in rows] == [(None, "mining judge")] * 4
    assert sum(r["usd"] for r in rows) == pytest.approx(served, abs=1e-9) == pytest.approx(0.006)
