"""A grader change re-grades, never re-runs an agent; a change to what the agent sees is named before spending.

The agent counts its runs in a file beside it, so "0 agent cells re-run" is counted, not inferred."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import AGENT_OK, ROOT, environ_without, make_suite, run_py
from tests.mutator.round.test_honest_failures import COUNTING, OFFLINE
from tests.mutator.round.test_honest_failures import rows as query

BROKEN = "import sys\nprint('grader bug', file=sys.stderr)\nsys.exit(3)\n"
# reads the agent's output and the task's input (restored from the fixtures when the cell is re-graded)
GRADER = """import json, pathlib, sys
cell = pathlib.Path(sys.argv[1])
out = cell / "output.txt"
print(json.dumps({"done": float(out.exists() and "done" in out.read_text()) * SCALE,
                  "saw_input": float((cell / "in.txt").read_text().startswith("task"))}))
"""


@pytest.fixture
def setup(tmp_path: Path):
    suites = tmp_path / "suites"
    train, val = make_suite(suites, "tiny-train", split="train"), make_suite(suites, "tiny-val", split="val")
    agent = tmp_path / "agent.py"
    agent.write_text(COUNTING + AGENT_OK)

    def command(*extra: str, rounds: int = 0):
        return run_py("--suite", str(train), "--val", str(val), "--rounds", str(rounds), "--replicates", "2",
                      "--real", "--agent", "command", "--agent-cmd", f"{sys.executable} {agent}",
                      "--mutator-cmd", f"{sys.executable} {ROOT / 'fakes' / 'fake_mutator.py'}",
                      "--skill-dir", str(ROOT / "suites" / "csv-clean"), "--no-solve", "--sandbox", "none",
                      "--data-dir", str(tmp_path / "data"), *extra, env=environ_without(*OFFLINE))
    return command, tmp_path / "data", tmp_path / "runs", val


def val_cells(data: Path, *, agent: bool = False) -> list[tuple]:
    return [tuple(r.values()) for r in query(data, (
        "select e.id as evaluation, c.task_id, c.replicate, c.status, c.score, c.steps, c.cost_usd"
        + (", c.agent_cell_id" if agent else "") + " from cells c join evaluations e on e.id = c.evaluation_id "
        "where e.suite = 'tiny-val' order by e.id, c.task_id, c.replicate"))]


def test_a_grader_fix_after_a_grader_error_run_regrades_with_no_agent_run(setup) -> None:
    command, data, runs, val = setup
    (val / "run-eval.py").write_text(BROKEN)
    first = command()
    assert first.returncode == 8 and "4 grader_error cells of 4" in first.stderr, first.stderr[-2000:]
    assert runs.read_text() == "x" * 4
    [run] = query(data, "select id, cost_usd from runs")
    before = val_cells(data)
    old = before[0][0]
    assert [c[3] for c in before] == ["grader_error"] * 4

    (val / "run-eval.py").write_text(GRADER.replace("SCALE", "1.0"))
    fixed = command()
    assert fixed.returncode == 0, fixed.stderr[-3000:]
    assert runs.read_text() == "x" * (4 + 2)     # the val agents ran once; only train's 2 ran now (evidenceReplicates 1)
    assert query(data, "select id from runs") == [{"id": run["id"]}]          # the same run, resumed
    said = fixed.stdout + fixed.stderr
    assert f"suite tiny-val changed since {run['id']} last ran: run-eval.py. Grading only" in said
    assert fixed.stderr.index("changed since") < fixed.stderr.index("graded again")   # named before any spend
    assert "2 cells run by this command (4 graded again from their agents' kept work)" in fixed.stdout   # train's 2
    assert val_cells(data)[:4] == before                                       # the old grader's cells stay as stored
    after = val_cells(data, agent=True)
    ids = [r["id"] for r in query(data, "select c.id from cells c where c.evaluation_id = ? order by c.task_id, "
                                        "c.replicate", [old])]
    new = after[4][0]
    # the new evaluation: each cell the same agent run (steps, cost) graded anew, pointing at that run
    assert after[4:] == [(new, t, r, "ok", 1.0, 1, before[i][6], ids[i])
                         for i, (t, r) in enumerate([("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)])]
    tests = query(data, "select t.name, t.score from tests t join cells c on c.id = t.cell_id where c.evaluation_id = ? "
                        "order by c.id, t.name", [new])
    assert tests == [{"name": "done", "score": 1.0}, {"name": "saw_input", "score": 1.0}] * 4
    spent = query(data, "select cost_usd from runs")[0]["cost_usd"]
    train_cost = query(data, "select sum(c.cost_usd) as usd from cells c join evaluations e on e.id = c.evaluation_id "
                             "where e.suite = 'tiny-train'")[0]["usd"]
    assert spent == pytest.approx(run["cost_usd"] + train_cost, abs=1e-9)     # the val agents are paid once


def test_a_changed_grader_regrades_every_scored_cell_and_keeps_decided_figures(setup) -> None:
    command, data, runs, val = setup
    (val / "run-eval.py").write_text(GRADER.replace("SCALE", "1.0"))
    first = command(rounds=1)
    assert first.returncode == 0, first.stderr[-3000:]
    ran = len(runs.read_text())
    decided = query(data, "select round, verdict, composite, delta, gate, val_evaluation_id from attempts "
                          "where round > 0 order by id")
    old_val = {r["genome_hash"]: r["id"] for r in query(data, "select id, genome_hash from evaluations "
                                                               "where suite = 'tiny-val'")}
    (val / "run-eval.py").write_text(GRADER.replace("SCALE", "0.5"))       # the grader now halves `done`
    again = command(rounds=1)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "Grading only" in again.stdout + again.stderr
    assert len(runs.read_text()) == ran                                        # not one agent ran again
    assert query(data, "select round, verdict, composite, delta, gate, val_evaluation_id from attempts "
                       "where round > 0 order by id") == decided              # decided rounds keep their figures
    [seed] = query(data, "select composite, val_evaluation_id from attempts where round = 0")
    assert seed["val_evaluation_id"] not in old_val.values()                   # round 0 is the seed under today's grader
    # every scored genome's val evaluation exists again under the new grader, its cells the old agent runs
    for genome, old in old_val.items():
        fresh = query(data, "select id from evaluations where suite = 'tiny-val' and genome_hash = ? and id != ?",
                      [genome, old])
        assert len(fresh) == 1
        olds = query(data, "select id, task_id, replicate, steps, cost_usd from cells where evaluation_id = ? "
                           "order by task_id, replicate", [old])
        news = query(data, "select agent_cell_id as id, task_id, replicate, steps, cost_usd from cells where "
                           "evaluation_id = ? order by task_id, replicate", [fresh[0]["id"]])
        assert news == olds and olds
        assert {r["score"] for r in query(data, "select score from cells where evaluation_id = ?",
                                          [fresh[0]["id"]])} == {0.75}      # (0.5 + 1.0) / 2: the new grade
    # a proposal compares the champion with the seed under one grader: the champion's re-graded evaluation
    # beside the re-graded seed, never its deciding attempt's old-grader figure beside the new seed
    from mutator.after.proposals import _figures
    from mutator.store.db import connect
    db = connect(data / "mutator.db")
    run = dict(db["runs"].get(query(data, "select id from runs")[0]["id"]))
    [candidate] = query(data, "select genome_hash from attempts where round = 1")
    figures = _figures(db, run, candidate["genome_hash"])[0]
    graded = query(data, "select suite_hash from evaluations where id in (?, ?)",
                   [figures["evaluation_id"], figures["seed_evaluation_id"]])
    assert len(graded) == 2 and len({g["suite_hash"] for g in graded}) == 1
    assert figures["seed_composite"] == seed["composite"] and figures["evaluation_id"] not in old_val.values()
    assert figures["composite"] != decided[0]["composite"]                  # not the old grader's figure
    more = command(rounds=2)                                                 # round 2 runs only its own cells
    assert more.returncode == 0, more.stderr[-3000:]
    assert "Grading only" not in more.stdout + more.stderr
    round2 = query(data, "select gate_df from attempts where round = 2")
    assert round2 and round2[0]["gate_df"] is not None
    # with neither re-grade there (marked not done here), no figure pair exists: --propose names why and the fix
    from mutator.after.proposals import why_not
    regraded = [figures["evaluation_id"], *(old_val[g] for g in old_val if g != candidate["genome_hash"])]
    with db.conn:
        db.conn.execute(f"update evaluations set status = 'stale' where id in ({', '.join('?' * len(regraded))})",
                        regraded)
    apart = _figures(db, run, candidate["genome_hash"])[0]
    assert apart["seed_composite"] is None and apart["graded_apart"][0] == "tiny-val"
    reason = why_not(db, run, candidate["genome_hash"], apart, None, min_delta=0.0, max_failed_share=1.0)
    assert reason.startswith("the champion and the seed were graded by different versions of val suite tiny-val")


def test_an_edited_prompt_is_named_before_spending_and_starts_a_new_run(setup) -> None:
    command, data, runs, val = setup
    assert command().returncode == 0
    [run] = query(data, "select id from runs")
    lines = (val / "tasks.jsonl").read_text().splitlines()
    task = json.loads(lines[1])
    lines[1] = json.dumps({**task, "prompt": task["prompt"] + " Please."})
    (val / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    before = len(runs.read_text())
    stopped = command("--budget-usd", "0.000001")       # a cap no cell fits under: the words come before any spend
    assert stopped.returncode == 3, stopped.stderr[-3000:]
    said = (f"warning: suite tiny-val changed since {run['id']}: tasks.jsonl (what the agent sees of task t1); what "
            f"the agent sees changed, so this starts a new run. Restore the suite to resume {run['id']}")
    assert said in stopped.stdout + stopped.stderr and len(runs.read_text()) == before
    edited = command()
    assert edited.returncode == 0, edited.stderr[-3000:]
    assert len(query(data, "select id from runs")) == 2
    assert len(runs.read_text()) == before + 4                                 # val ran again, train was cached


def test_an_edited_expectation_only_regrades(setup) -> None:
    """The grading fields of tasks.jsonl (`required` here) are the grader's: the run resumes and re-grades."""
    command, data, runs, val = setup
    assert command().returncode == 0
    lines = (val / "tasks.jsonl").read_text().splitlines()
    lines[0] = json.dumps({**json.loads(lines[0]), "required": ["output.txt", "notes.txt"]})
    (val / "tasks.jsonl").write_text("\n".join(lines) + "\n")
    before = len(runs.read_text())
    again = command()
    assert again.returncode == 0, again.stderr[-3000:]
    assert "tasks.jsonl (the grading fields of task t0). Grading only" in again.stdout + again.stderr
    assert len(runs.read_text()) == before and len(query(data, "select id from runs")) == 1


FIXTURE = Path(__file__).with_name("fixtures") / "store-8175abe.tgz"


def test_an_old_store_resumes_with_no_cell_and_after_a_grader_change_reruns_its_cells_once(tmp_path: Path) -> None:
    """A store written by main 8175abe (run ids hashing each suite's whole folder, ok cells pruned to their
    trajectory): resumed unchanged it runs no cell; after a grader change it resumes the same run, and its old
    cells, which kept no outputs, run once; a second grader change then re-grades everything, 0 agents run."""
    import shutil
    import tarfile
    with tarfile.open(FIXTURE) as tar:       # --replicates 2 --rounds 2 on clean-train / clean-val
        tar.extractall(tmp_path, filter="data")
    data, suites = tmp_path / "data", tmp_path / "suites"
    for name in ("clean-train", "clean-val"):     # the same folders by content, so a test may edit one
        shutil.copytree(ROOT / "suites" / name, suites / name)

    def command():
        return run_py("--suite", str(suites / "clean-train"), "--val", str(suites / "clean-val"), "--replicates", "2",
                      "--rounds", "2", "--data-dir", str(data), env=environ_without(*OFFLINE))

    [old] = query(data, "select id from runs where kind = 'evolve'")
    n_cells = query(data, "select count(*) as n from cells")[0]["n"]
    again = command()
    assert again.returncode == 0, again.stderr[-3000:]
    assert "0 cells run by this command" in again.stdout and query(data, "select count(*) as n from cells")[0]["n"] \
        == n_cells
    assert query(data, "select id from runs where kind = 'evolve'") == [old]
    grader = suites / "clean-val" / "run-eval.py"
    grader.write_text(grader.read_text() + "\n# a comment: another grader by content, the same grades\n")
    regraded = command()
    assert regraded.returncode == 0, regraded.stderr[-3000:]
    said = regraded.stdout + regraded.stderr
    assert f"suite clean-val changed since {old['id']} last ran: run-eval.py. Grading only" in said
    assert "kept no agent outputs to grade again (stored by an older version), so they run again" in said
    assert query(data, "select id from runs where kind = 'evolve'") == [old]          # the same run
    fresh = query(data, "select c.agent_cell_id from cells c join evaluations e on e.id = c.evaluation_id "
                        "where e.suite = 'clean-val' and e.suite_hash = ?", [_hash(suites / "clean-val")])
    assert fresh and all(r["agent_cell_id"] is None for r in fresh)                  # run once: nothing was kept
    grader.write_text(grader.read_text() + "# and again\n")
    twice = command()
    assert twice.returncode == 0, twice.stderr[-3000:]
    assert "0 cells run by this command" in twice.stdout
    again_fresh = query(data, "select c.agent_cell_id from cells c join evaluations e on e.id = c.evaluation_id "
                              "where e.suite = 'clean-val' and e.suite_hash = ?", [_hash(suites / "clean-val")])
    assert len(again_fresh) == len(fresh) and all(r["agent_cell_id"] is not None for r in again_fresh)


def _hash(suite: Path) -> str:
    from eval.suite import suite_hash
    return suite_hash(suite)


def test_a_cell_whose_agent_failed_is_taken_over_as_it_was_under_a_changed_grader(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    train, val = make_suite(suites, "tiny-train", split="train"), make_suite(suites, "tiny-val", split="val", tasks=4)
    agent = tmp_path / "agent.py"     # fails on task t3 (2 of 8 val cells: within maxFailedShare 0.25)
    agent.write_text(COUNTING + "import sys\nif '(3)' in open(__import__('os').environ['SM_PROMPT_FILE']).read():\n"
                     "    sys.exit(1)\n" + AGENT_OK)

    def command():
        return run_py("--suite", str(train), "--val", str(val), "--rounds", "0", "--replicates", "2", "--real",
                      "--agent", "command", "--agent-cmd", f"{sys.executable} {agent}",
                      "--mutator-cmd", f"{sys.executable} {ROOT / 'fakes' / 'fake_mutator.py'}",
                      "--skill-dir", str(ROOT / "suites" / "csv-clean"), "--no-solve", "--sandbox", "none",
                      "--data-dir", str(tmp_path / "data"), env=environ_without(*OFFLINE))
    assert command().returncode == 0
    data, runs = tmp_path / "data", tmp_path / "runs"
    before = len(runs.read_text())
    (val / "run-eval.py").write_text(GRADER.replace("SCALE", "0.5"))
    again = command()
    assert again.returncode == 0, again.stderr[-3000:]
    assert len(runs.read_text()) == before                                     # no agent ran, failed ones neither
    old, new = [r["id"] for r in query(data, "select id from evaluations where suite = 'tiny-val' order by id")]
    pairs = query(data, "select n.task_id, n.replicate, n.status, n.score, n.error = o.error as same_error, "
                        "n.cell_dir = o.cell_dir as same_dir from cells n join cells o on o.id = n.agent_cell_id "
                        "where n.evaluation_id = ? and o.evaluation_id = ? order by n.task_id, n.replicate",
                  [new, old])
    assert [(p["task_id"], p["replicate"], p["status"], p["score"]) for p in pairs] == \
        [(f"t{i}", r, "agent_error" if i == 3 else "ok", 0.0 if i == 3 else 0.75) for i in range(4) for r in (0, 1)]
    assert all(p["same_error"] for p in pairs)
    assert [p["same_dir"] for p in pairs] == [0] * 6 + [1] * 2        # a failed agent's row points at its own logs
