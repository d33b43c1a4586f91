"""The judge: rubric arithmetic, reply parsing, and the runner against a local Messages-API stub."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.evaluate import evaluate
from eval.graders.judge import (
    Attempt,
    JudgeError,
    Rubric,
    Verdict,
    fake_reply,
    parse_reply,
    rubric_from_options,
    score,
)
from eval.suite import SuiteError, load_suite
from tests.eval.graders.conftest import request, write_suite
from tests.eval.graders.messages_stub import MessagesStub, judge_reply


@pytest.mark.parametrize("options, message", [
    ({"judge_weights": "correctness=0.5, procedure=0.3, conciseness=0.3"}, "must sum to 1, got 1.1"),
    ({"judge_weights": "correctness=0.5, speed=0.5"}, "expected 'name=weight' pairs"),
    ({"judge_weights": "correctness=x"}, "is not a number"),
    ({"judge_weights": "correctness=1.5, procedure=-0.5"}, "non-negative"),
    ({"judge_length_floor": "1.5"}, "judge_length_floor in \\[0, 1\\]"),
    ({"judge_length_target": "many"}, "judge length settings"),
])
def test_bad_rubric_settings_are_refused(options: dict, message: str) -> None:
    with pytest.raises(JudgeError, match=message):
        rubric_from_options(options)


def test_weights_default_and_are_configurable() -> None:
    assert dict(rubric_from_options({}).weights) == {"correctness": 0.5, "procedure": 0.3, "conciseness": 0.2}
    rubric = rubric_from_options({"judge_weights": "correctness=0.8,procedure=0.1,conciseness=0.1"})
    tests, detail = score(Verdict({"correctness": 10, "procedure": 0, "conciseness": 5}), rubric, words=10)
    assert tests == {"rubric": pytest.approx(0.85)} and detail["length_factor"] == 1.0


@pytest.mark.parametrize("words, factor", [
    (0, 1.0), (100, 1.0), (125, 1.0), (126, 0.99), (150, 0.75), (175, 0.5), (400, 0.5),
])
def test_length_factor_boundaries(words: int, factor: float) -> None:
    # target 100 words, 25% free overshoot, then -1% per word over, floored at 0.5
    assert Rubric(length_target=100, length_tolerance=0.25, length_floor=0.5).length_factor(words) == \
        pytest.approx(factor)
    assert Rubric().length_factor(words) == 1.0      # no target: no penalty


def test_score_is_weighted_dimensions_times_length() -> None:
    verdict = Verdict({"correctness": 8, "procedure": 6, "conciseness": 10})
    tests, _ = score(verdict, Rubric(length_target=100), words=150)
    assert tests["rubric"] == pytest.approx((0.5 * 0.8 + 0.3 * 0.6 + 0.2 * 1.0) * 0.75)


@pytest.mark.parametrize("text, message", [
    ("no json here", "holds no JSON object"),
    ('{"correctness": 5, "procedure": 5}', "conciseness must be a number from 0 to 10"),
    ('{"correctness": 11, "procedure": 5, "conciseness": 5}', "correctness must be a number"),
    ('{"correctness": true, "procedure": 5, "conciseness": 5}', "correctness must be a number"),
    ('{"correctness": 5, "procedure": 5, "conciseness": 5', "holds no JSON object"),
])
def test_unusable_replies_are_judge_errors(text: str, message: str) -> None:
    with pytest.raises(JudgeError, match=message):
        parse_reply(text)


def test_fake_judge_is_deterministic_and_sees_missing_outputs() -> None:
    attempt = Attempt("task", ("Oslo and Bergen are named",), (("out.txt", "Oslo and Bergen"),), "done", ("Write {}",))
    assert fake_reply(attempt) == fake_reply(attempt)
    verdict = parse_reply(fake_reply(attempt))
    assert verdict.scores["correctness"] == 10 and verdict.expectations[0]["passed"] is True
    missing = parse_reply(fake_reply(Attempt("task", ("The report names Oslo",), (("out.txt", "(missing)"),), "", ())))
    assert missing.scores["correctness"] == 0 and "not written" in missing.feedback


def test_judge_suite_settings_are_checked_at_load(tmp_path: Path) -> None:
    task = {"id": "a", "prompt": "write out.txt", "required": ["out.txt"], "expectations": ["says done"]}
    with pytest.raises(SuiteError, match="suite.md: judge_weights must sum to 1"):
        load_suite(write_suite(tmp_path, [task], {}, runner="judge",
                               extra_meta="judge_weights: correctness=1, procedure=1, conciseness=0\n"))


SECRET = "SKILL-SECRET-7f3a"
TASKS = [{"id": f"t{i}", "prompt": "write out.txt", "required": ["out.txt"], "expectations": ["says done"]}
         for i in range(2)]


@pytest.fixture
def stub():
    server = MessagesStub(judge_reply(8, 6, 10))
    yield server
    server.close()


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    folder = tmp_path / "skill"
    folder.mkdir()
    (folder / "SKILL.md").write_text(f"---\nname: csv-clean\ndescription: x\n---\n{SECRET}\n")
    return folder


def judge_request(tmp_path: Path, agent: list[str], stub: MessagesStub, skill: Path, **kw):
    suite = tmp_path / "suites" / "exp"
    if not suite.exists():
        write_suite(tmp_path / "suites", TASKS, {"t0": "done", "t1": "done twice"}, runner="judge",
                    extra_meta="judge_length_target: 1\njudge_length_tolerance: 0\njudge_length_floor: 0.5\n")
    req = request(suite, tmp_path, agent, env={"SM_JUDGE": "anthropic"}, **kw)
    from dataclasses import replace
    return replace(req, skill_dir=skill)


def test_the_judge_scores_through_a_local_messages_api(tmp_path, echo_agent, stub, skill, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", stub.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    cells = {c.task_id: c for c in evaluate(judge_request(tmp_path, echo_agent, stub, skill))}
    assert len(stub.requests) == 2
    weighted = 0.5 * 0.8 + 0.3 * 0.6 + 0.2 * 1.0
    # "done" is 1 word (factor 1 at target 1), "done twice" 2 words: 1 over, factor max(0.5, 1 - 1/1) = 0.5
    assert cells["t0"].status == "ok" and cells["t0"].tests == {"rubric": pytest.approx(weighted)}
    assert cells["t1"].tests == {"rubric": pytest.approx(weighted * 0.5)}
    price_usd = (1000 * 1.0 + 200 * 5.0) / 1e6        # PRICE in conftest: input 1, output 5 per million
    assert cells["t0"].extra["grader_cost_usd"] == pytest.approx(price_usd)
    assert (cells["t0"].extra["grader_input_tokens"], cells["t0"].extra["grader_output_tokens"]) == (1000, 200)
    grade = json.loads((Path(cells["t0"].cell_dir) / "grade.json").read_text())["judge"]
    assert grade["feedback"] == "Shorter." and grade["cached"] is False and grade["model"] == "claude-haiku-4-5"
    assert "Shorter." in (Path(cells["t0"].cell_dir) / "judge.md").read_text()
    # what the judge saw: the task, the output, the steps; never the skill
    sent = json.dumps(stub.requests)
    assert "says done" in sent and "done twice" in sent and SECRET not in sent and ".claude/skills" not in sent


def test_a_repeated_judgement_is_served_from_the_cache(tmp_path, echo_agent, stub, skill, monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", stub.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    first = evaluate(judge_request(tmp_path, echo_agent, stub, skill))
    again = evaluate(judge_request(tmp_path, echo_agent, stub, skill))   # same cells re-run, same outputs
    assert len(stub.requests) == 2
    assert sorted(c.tests["rubric"] for c in again) == sorted(c.tests["rubric"] for c in first)
    assert not any(k.startswith("grader_") for c in again for k in c.extra)   # no new spend, no new tokens
    assert all(json.loads((Path(c.cell_dir) / "grade.json").read_text())["judge"]["cached"] for c in again)


def test_a_garbled_reply_is_a_grader_error_cached_so_a_regrade_pays_nothing(tmp_path, echo_agent, stub, skill,
                                                                             monkeypatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", stub.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    stub.reply = "I would rather not say."
    cells = evaluate(judge_request(tmp_path, echo_agent, stub, skill))
    assert {c.status for c in cells} == {"grader_error"}
    assert all("holds no JSON object" in c.error for c in cells) and len(stub.requests) == 2
    stub.reply = judge_reply(10, 10, 10)
    cells = evaluate(judge_request(tmp_path, echo_agent, stub, skill))   # a resume: re-graded from the cache
    assert {c.status for c in cells} == {"grader_error"} and len(stub.requests) == 2
    assert all("delete it to ask again" in c.error for c in cells)
    for cached in (tmp_path / "evals" / "judge-cache").glob("*.json"):   # deleting the reply asks again
        cached.unlink()
    cells = evaluate(judge_request(tmp_path, echo_agent, stub, skill))
    assert {c.status for c in cells} == {"ok"} and len(stub.requests) == 4


def test_dry_runs_use_the_fake_judge(tmp_path, echo_agent, stub, skill, monkeypatch) -> None:
    suite = write_suite(tmp_path / "suites", TASKS, {"t0": "done", "t1": "nothing"}, runner="judge")
    cells = {c.task_id: c for c in evaluate(request(suite, tmp_path, echo_agent, agent_id="fake@abc"))}
    assert not stub.requests
    grade = json.loads((Path(cells["t0"].cell_dir) / "grade.json").read_text())["judge"]
    assert grade["backend"] == "fake-judge@1" and cells["t0"].status == "ok"
    assert cells["t0"].tests["rubric"] > cells["t1"].tests["rubric"]   # "says done" found only in t0's output


