"""The triggering demo (README "Skill telemetry"): the loop with fakes/trigger_agent.py and fakes/trigger_mutator.py
on suites/trigger-train|val|test and the seed suites/tidy-tables, score.wTrigger 0.5. Round 1 widens the description
with the words of the train requests it missed (val recall 0.25 -> 1) and is KEPT; round 2 with the words of the
near-misses (val false triggers 0 -> 1) and is REJECTED; every stored rate recomputes from the cells in SQL.

No draw decides it. The agent command holds this checkout's and this interpreter's paths, so the cells' seeds differ
from one machine to the next, but nothing here reads them: the trigger suites' tasks name no CSV and stage no input,
so fakes/fake_agent.py answers each from the skill's text (text_answer) and never draws from its seeded RNG, whether
a cell loads the skill is a word match of prompt and description (fakes/trigger_agent.py), and the mutator is
scripted. Every figure asserted follows from which descriptions match which prompts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mutator.store.db import connect_readonly
from tests.browser_support import CHROMIUM, SKIP_REASON, Server, chromium_page
from tests.eval.agents.test_real_run import ROOT, clean_env, run_py

SUITES = ROOT / "suites"
DEMO = ("--real", "--agent-cmd", f"{sys.executable} {ROOT / 'fakes' / 'trigger_agent.py'}",
        "--mutator-cmd", f"{sys.executable} {ROOT / 'fakes' / 'trigger_mutator.py'}",
        "--skill-dir", str(SUITES / "tidy-tables"))
SPLITS = ("--suite", str(SUITES / "trigger-train"), "--val", str(SUITES / "trigger-val"),
          "--holdout", str(SUITES / "trigger-test"))
ENV = {"SKILL_MUTATOR_W_TRIGGER": "0.5", "SKILL_MUTATOR_SCREEN_TASKS": "0"}

# every evaluation's recall and false-trigger rate, recomputed from its cells' skill_use and its no-trigger tasks
RATES_SQL = """
select e.id, e.trigger_recall, e.false_trigger_rate,
  avg(case when c.task_id not in (select value from json_each(e.no_trigger_tasks))
      then json_extract(c.skill_use, '$.loaded') end) as recall,
  avg(case when c.task_id in (select value from json_each(e.no_trigger_tasks))
      then json_extract(c.skill_use, '$.loaded') end) as false_rate
from evaluations e join cells c on c.evaluation_id = e.id
where c.skill_use is not null group by e.id order by e.id"""


def near_misses(split: str) -> list[str]:
    tasks = [json.loads(line) for line in (SUITES / f"trigger-{split}" / "tasks.jsonl").read_text().splitlines()]
    return [t["id"] for t in tasks if t["trigger"] is False]


@pytest.fixture(scope="module")
def trigger_demo(tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("trigger-demo") / "data"
    done = run_py(*DEMO, *SPLITS, "--rounds", "2", "--replicates", "1", "--data-dir", str(data), env=clean_env(**ENV))
    assert done.returncode == 0, done.stderr[-4000:]
    return data


def test_the_demo_keeps_the_recall_fix_and_rejects_the_false_triggers(trigger_demo):
    db = connect_readonly(trigger_demo / "mutator.db")
    attempts = [dict(r) for r in db.query("select * from attempts order by round")]
    assert [(a["round"], a["verdict"], a["summary"]) for a in attempts] == [
        (0, "SEED", attempts[0]["summary"]),
        (1, "KEEP", "Rewrite the description so the skill triggers on should-000-orders"),
        (2, "REJECT", "Rewrite the description so the skill triggers on should-not-000-poem, should-not-001-haiku")]
    val = {a["round"]: db["evaluations"].get(a["val_evaluation_id"]) for a in attempts}
    assert {r: (e["trigger_recall"], e["false_trigger_rate"], json.loads(e["no_trigger_tasks"]))
            for r, e in val.items()} == {0: (0.25, 0.0, near_misses("val")), 1: (1.0, 0.0, near_misses("val")),
                                         2: (1.0, 1.0, near_misses("val"))}
    gates = {a["round"]: json.loads(a["gate"]) for a in attempts[1:]}
    assert gates[1]["delta_trigger"] == pytest.approx(0.5 * 3 / 10)     # 3 of 4 should-tasks now hit, of 10 tasks
    assert gates[2]["delta_trigger"] == pytest.approx(-0.5 * 6 / 10)    # 6 near-misses now miss
    # the genomes on disk say why: the kept description names the orders request, the rejected one the poem
    described = {r: (trigger_demo / "genomes" / a["genome_hash"] / "SKILL.md").read_text().splitlines()[2]
                 for r, a in enumerate(attempts)}
    assert described[0] == "description: Tidy tabular data files."
    assert "spreadsheet" in described[1] and "poem" not in described[1] and "poem" in described[2]
    # every evaluation's stored rates (train and val, each genome) recompute from its cells in SQL
    rows = [dict(r) for r in db.query(RATES_SQL)]
    assert len(rows) == db.execute("select count(*) from evaluations").fetchone()[0] >= 5
    for row in rows:
        assert (row["trigger_recall"], row["false_trigger_rate"]) == pytest.approx((row["recall"], row["false_rate"]))
    db.close()


def test_round_analysis_shows_the_stored_trigger_rates_and_how_they_moved(trigger_demo, tmp_path):
    """Round Analysis of round 2 (REJECT) on val: its rates beside its parent's, and every round's, as stored."""
    if not CHROMIUM.exists():
        pytest.skip(SKIP_REASON)
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    from playwright.sync_api import expect
    db = connect_readonly(trigger_demo / "mutator.db")
    run_id = db.execute("select id from runs").fetchone()[0]
    attempts = [dict(r) for r in db.query("select a.id, a.round, a.verdict, e.trigger_recall, e.false_trigger_rate, "
                                          "e.no_trigger_tasks from attempts a join evaluations e on "
                                          "e.id = a.val_evaluation_id order by a.round")]
    db.close()
    shown = [[str(r["round"]), r["verdict"], f"{r['trigger_recall']:.3f}",
              f"{r['false_trigger_rate']:.3f}", str(len(json.loads(r["no_trigger_tasks"])))] for r in attempts]
    assert [row[1:4] for row in shown] == [["SEED", "0.250", "0.000"], ["KEEP", "1.000", "0.000"],
                                           ["REJECT", "1.000", "1.000"]]
    server = Server(trigger_demo, token="trigger-demo-token")
    try:
        with chromium_page(tmp_path / "artifacts") as page:
            page.goto(server.url + f"/#/round/{attempts[2]['id']}?run={run_id}")
            rates = page.locator("#trigger-rates")
            expect(rates.locator('tr[data-row="candidate"] td')).to_have_text(shown[2][2:])
            expect(rates.locator('tr[data-row="parent"] td')).to_have_text(shown[1][2:])
            near = rates.locator('tr[data-row="candidate"] td').nth(2).get_attribute("title")
            assert near.endswith(": " + ", ".join(near_misses("val")))
            rounds = page.locator("#trigger-rounds tbody tr")
            expect(rounds).to_have_count(3)
            for i, row in enumerate(shown):
                expect(rounds.nth(i).locator("th")).to_have_text(str(attempts[i]["round"]))
                expect(rounds.nth(i).locator("td")).to_have_text(row[1:])
            assert page.console_errors == []
    finally:
        server.stop()


def test_a_test_of_a_run_among_other_skills_says_which_and_compares_alone(tmp_path):
    """--with-skills: the test report (printed, stored, and on the dashboard's test card) names the skills installed
    beside the evolved one and measures the champion alone too: among − alone, with both stored trigger rates."""
    others = tmp_path / "others" / "poems"
    others.mkdir(parents=True)
    (others / "SKILL.md").write_text("---\nname: poems\ndescription: Write poems.\n---\n# poems\n\n1. Rhyme.\n")
    flags = (*DEMO, "--with-skills", str(others.parent), "--data-dir", str(tmp_path / "data"))
    done = run_py(*flags, *SPLITS, "--rounds", "0", "--replicates", "1", env=clean_env(**ENV))
    assert done.returncode == 0, done.stderr[-3000:]
    db = connect_readonly(tmp_path / "data" / "mutator.db")
    run_id = db.execute("select id from runs").fetchone()[0]
    assert f"--test-run {run_id} --with-skills {others.parent}" in done.stdout   # the printed next step works
    tested = run_py(*flags, "--test-run", run_id, env=clean_env(**ENV))
    assert tested.returncode == 0, tested.stderr[-3000:]
    report = json.loads(db.execute("select report from test_runs").fetchone()[0])["with_skills"]
    alone_id = report["alone"]["alone_evaluation_id"]
    among, alone = (dict(db["evaluations"].get(i)) for i in (report["alone"]["among_evaluation_id"], alone_id))
    assert json.loads(among["contract"])["with_skills"] == report["digest"] and "with_skills" not in json.loads(
        alone["contract"])            # the same champion on the same suite, its cells holding it alone
    assert (among["genome_hash"], among["suite"]) == (alone["genome_hash"], alone["suite"]) == (
        db.execute("select incumbent_hash from runs").fetchone()[0], "trigger-test")
    assert report["skills"] == ["poems"] and report["dir"] == str(others.parent)
    for side, row in (("among", among), ("alone", alone)):
        assert (report["triggers"][side]["recall"], report["triggers"][side]["false_trigger_rate"]) == (
            row["trigger_recall"], row["false_trigger_rate"])
    assert report["alone"]["n_tasks"] == 6 and report["alone"]["delta"]["mean"] == 0.0   # the fake ignores others
    db.close()
    assert f"Evaluated among other skills (--with-skills {others.parent}): poems installed beside it" in tested.stdout
    assert "champion among them vs alone   6 tasks" in tested.stdout
    if not CHROMIUM.exists():
        return
    from playwright.sync_api import expect
    server = Server(tmp_path / "data", token="trigger-demo-token")
    try:
        with chromium_page(tmp_path / "artifacts") as page:
            page.goto(server.url + f"/#/home?run={run_id}")
            expect(page.locator("#test-among [data-skills]")).to_have_attribute("data-skills", "poems")
            expect(page.locator("#test-among [data-among]")).to_contain_text(
                f"trigger recall among {among['trigger_recall']:.3f} / alone {alone['trigger_recall']:.3f}")
            assert page.console_errors == []
    finally:
        server.stop()
