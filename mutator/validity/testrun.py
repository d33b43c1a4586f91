"""Measure a run's current champion (and the seed, for its normalisers) on any suite, on demand.

Test results never gate or steer the search; they are appended to the run's test timeline with the
honest test report (mutator/validity/report.py: paired Δ ± SE, CI, sign test, McNemar; train/val beside it).
Refuses while the run's loop is alive: testing never runs in parallel with mutating.
"""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from eval.cells import Contract
from eval.errors import SkillMutatorError
from eval.reaper import pid_alive
from eval.suite import Suite
from mutator.config import Settings
from mutator.round.budget import BudgetStop, refused
from mutator.round.evaluations import Evaluator
from mutator.round.failures import refuse_sick
from mutator.round.progress import Progress
from mutator.round.session import Session, other_skills
from mutator.round.solve import BARE as NO_SKILL  # the genome hash of a skill-less evaluation
from mutator.round.stops import EvaluationStop
from mutator.scoring.models import stored_normalisers
from mutator.scoring.score import Weights, normalisers, summarise
from mutator.store import holdout, looks
from mutator.store.attempt_reads import latest_evaluation_id
from mutator.store.db import connect, connect_readonly, dumps, loads
from mutator.store.run_lookup import recent_run_ids, run_cost, run_row
from mutator.store.runs import update_run
from mutator.validity import report as test_report
from sandbox import Launcher


class TestRunError(SkillMutatorError, RuntimeError):
    """The test run cannot start; the message says why and what to do."""


class SealedTestError(TestRunError):
    """A sealed run's test suite was already looked at with an earlier champion; the message names that
    test."""


AGENT_FLAGS = (("agent", "--agent"), ("agent_cmd", "--agent-cmd"), ("mutator_agent", "--mutator-agent"),
               ("mutator_cmd", "--mutator-cmd"))


def launch_flags(launch: dict) -> str:
    """The agent flags a run was started with, as they would be typed (empty for a dry run)."""
    if not launch.get("real"):
        return ""
    return " ".join(["--real", *(f"{flag} {shlex.quote(launch[attr])}" for attr, flag in AGENT_FLAGS
                                 if launch.get(attr))])


def recorded_run(settings: Settings, run_id: str) -> dict | None:
    if not settings.db_path.is_file():
        return None
    db = connect_readonly(settings.db_path)
    try:
        return run_row(db, run_id)
    finally:
        db.conn.close()


def unknown_run(settings: Settings, run_id: str) -> TestRunError:
    """The error for a run id the store does not hold: the store, its recent runs, and the fix."""
    known: list[str] = []
    if settings.db_path.is_file():
        db = connect_readonly(settings.db_path)
        try:
            known = recent_run_ids(db)
        finally:
            db.conn.close()
    return TestRunError(f"no run {run_id!r} in {settings.db_path}; recent runs: "
                        f"{', '.join(known) or 'none'}; pass a run id from it, or the --data-dir that holds "
                        "the run")


def apply_run_defaults(settings: Settings, args: argparse.Namespace) -> None:
    """`--test-run RUN` repeats what the run was started with unless told otherwise: the suite is the
    run's --holdout (found again by its resolved path), and with no agent flag typed, the run's own
    agent flags. A suite named as the run recorded it resolves to the recorded path."""
    run = recorded_run(settings, args.test_run)
    if run is None:
        raise unknown_run(settings, args.test_run)
    paths = {run.get("holdout"): run.get("holdout_path"), run.get("suite"): run.get("suite_path"),
             run.get("val"): run.get("val_path")}
    if not args.suite:
        if not run.get("holdout"):
            raise TestRunError(f"{args.test_run} was started without --holdout, so there is no default test "
                               f"suite; pass --suite NAME|PATH")
        args.suite = run.get("holdout_path") or run["holdout"]
    elif args.suite not in settings.suites and not Path(args.suite).exists() and paths.get(args.suite):
        args.suite = paths[args.suite]
    typed = any(getattr(args, attr) for attr, _ in AGENT_FLAGS) or args.real
    launch = loads(run.get("agents"), {}) or {}
    if not typed and launch.get("fake_noise") and not getattr(args, "fake_noise", None):
        args.fake_noise = launch["fake_noise"]     # a rehearsal's test is as noisy as its run
    if not typed and launch.get("real"):
        args.real = True
        for attr, _ in AGENT_FLAGS:
            setattr(args, attr, launch.get(attr) or None)


def _alive(pid: int | None) -> bool:
    return pid != os.getpid() and pid_alive(pid)


def refuse_sealed(db, settings: Settings, run: dict, suite: Suite) -> None:
    """A sealed run (sealTest when it ran, or now) takes its first champion test on a suite as final: a later
    champion's test there is refused, naming the first. Testing now with sealTest seals the run from then
    on. Any test is refused while the store holds another champion's test evaluations on the suite that no
    test record names (rows deleted): its look could not be numbered, nor a seal judged."""
    missing = looks.unrecorded(db, skill_name=run["skill_name"], suite=suite.name,
                               genome_hash=run["incumbent_hash"])
    if missing:
        raise SealedTestError(
            f"the store holds test evaluations on {suite.name} of champion(s) "
            f"{', '.join(h[:12] for h in missing)} of skill {run['skill_name']} that no test record (table "
            "test_runs) accounts for: the looks at this suite cannot be counted, so this test would be "
            "numbered (and a sealed run's seal judged) wrongly. Restore the store from a copy that has the "
            "rows, or test on a fresh suite")
    if not (run.get("seal_test") or settings.seal_test):
        return
    first = looks.sealed_by(db, run["id"], suite.name, run["incumbent_hash"])
    if first is not None:
        raise SealedTestError(
            f"{run['id']} is sealed (sealTest) and its test on {suite.name} is final: test run "
            f"#{first['id']} measured champion {first['genome_hash'][:12]} (after round {first['round']}); "
            f"the champion is now {run['incumbent_hash'][:12]}. Read test run #{first['id']}'s report, or "
            "test on another suite")
    if not run.get("seal_test"):
        update_run(db, run["id"], seal_test=1)


def test_run(settings: Settings, run_id: str, suite: Suite, *, agent_argv: list[str], launcher: Launcher,
             progress: Progress, network: bool = False, build_id: str | None = None, control: bool = True,
             budget=None, kind: str = "test", api_check: Callable = lambda *_: None) -> dict:
    """`control`: also measure the suite with no skill installed (the genome NO_SKILL, cached like any
    evaluation) and report seed vs none and champion vs none beside champion vs seed. `budget` (--budget-usd
    on the run's spend, the daily budget) is asked before each cell. Every finished test is a numbered look at
    the suite for the skill (mutator/store/looks.py; `kind`: test | compare); a sealed run refuses a later
    champion. `api_check(db, run_id, contract)`: a real test's API check, before its look."""
    db = connect(settings.db_path)
    run = run_row(db, run_id)
    if run is None:
        raise unknown_run(settings, run_id)
    contract = Contract(**loads(run["config"])["contract"])
    _refuse(run, suite, build_id, contract)
    refuse_sealed(db, settings, run, suite)
    api_check(db, run_id, contract)   # a dead API stops here (round/api_check.py): no look, no cell
    session = Session.open(settings, build_argv=tuple(agent_argv), build_id=contract.agent, launcher=launcher,
                           progress=progress, network=network, contract=contract, db=db, budget=budget,
                           pays=True, weights=Weights.of_run(run), skill_name=run["skill_name"])
    # the tested run pays for its test cells and its budget is asked before each
    session = session.for_run(run_id)
    genomes, weights, evaluator = session.genomes, session.weights, session.evaluator
    seed_hash, champion = run["seed_hash"], run["incumbent_hash"]
    test_id = holdout.start_test_run(db, run_id=run_id, suite=suite.name, genome_hash=champion,
                                     round_no=run["rounds_done"], kind=kind, suite_hash=suite.content_hash)
    before = run_cost(db, run_id)   # the test's spend: what its cells add to the run's (charged to it)

    def spent() -> float:
        return max(0.0, run_cost(db, run_id) - before)
    seed = evaluator.evaluate(genomes.path(seed_hash), seed_hash, run["skill_name"], suite,
                                   label=f"test · seed on {suite.name}", contract=contract)
    best = evaluator.evaluate(genomes.path(champion), champion, run["skill_name"], suite,
                                   label=f"test · champion on {suite.name}", contract=contract)
    measured = [(seed, suite, "the seed on the test suite"), (best, suite, "the champion on the test suite")]
    _settle(db, settings, run_id, test_id, measured, agent_argv, spent)
    none = control_failed = None
    if control:   # only once seed and champion are sound: a sick test suite spends nothing more
        none, control_failed = _control(db, settings, evaluator, run, suite, contract, test_id, agent_argv,
                                        spent)
        if none is not None:
            measured.append((none, suite, "no skill on the test suite"))
    beside = beside_it(settings, run["skill_name"], contract)
    alone = None
    if control and beside:   # measured among other skills (--with-skills): the champion alone too, to compare
        alone = _alone(session, settings, agent_argv, launcher, network).evaluate(
            genomes.path(champion), champion, run["skill_name"], suite,
            label=f"test · champion alone on {suite.name}", contract=replace(contract, with_skills=""))
        _settle(db, settings, run_id, test_id, [(alone, suite, "the champion alone on the test suite")],
                agent_argv, spent)
        measured.append((alone, suite, "the champion alone on the test suite"))
    norm = normalisers(seed.cells)
    figures = summarise(best.cells, weights, norm)
    train = _train_composite(db, evaluator, weights, run, champion)
    report = test_report.build(db, run, suite=suite.name, champion_eval=best.evaluation_id,
                               seed_eval=seed.evaluation_id, test_norm=norm,
                               control_eval=none.evaluation_id if none else None,
                               beside={**beside,
                                       "alone_evaluation_id": alone.evaluation_id if alone else None}
                               if beside else None)
    look = looks.look_of(db, skill_name=run["skill_name"], suite=suite.name, genome_hash=champion,
                         before=test_id)
    report["look"] = {"k": look.k, "looks": look.looks, "repeat_of": look.repeat_of, "kind": kind,
                      "sealed": bool(run.get("seal_test") or settings.seal_test)}
    if control_failed:
        report["control_failed"] = control_failed
    holdout.test_run_done(db, test_id, {
        "spent_usd": spent(),
        "look": look.k, "repeat_of": look.repeat_of,
        "control_evaluation_id": none.evaluation_id if none else None, "evaluation_id": best.evaluation_id,
        "eval": figures.eval, "cost": figures.cost, "steps": figures.steps, "composite": figures.composite,
        "train_composite": train, "report": dumps(report)})
    seed_figures = summarise(seed.cells, weights, norm)
    return {"test_run": test_id, "suite": suite.name, "champion": champion, "composite": figures.composite,
            "eval": figures.eval, "seed_composite": seed_figures.composite, "seed_eval": seed_figures.eval,
            "train_composite": train, "report": report, "control_failed": control_failed,
            "cells_run": sum(o.ran for o, _, _ in measured) + (control_failed or {}).get("ran", 0),
            "spent_usd": holdout.test_run_row(db, test_id)["spent_usd"]}   # as stored


def _refuse(run: dict, suite: Suite, build_id: str | None, contract: Contract) -> None:
    """A test is refused while the run's loop lives, on the run's own train or val suite, or with another
    build agent than the run's."""
    run_id = run["id"]
    if run["status"] == "running" and _alive(run["pid"]):
        raise TestRunError(f"{run_id} is still mutating (pid {run['pid']}); test it when the loop has "
                           "stopped")
    if suite.name in (run["suite"], run["val"]):
        raise TestRunError(f"{suite.name!r} is this run's {'train' if suite.name == run['suite'] else 'val'} "
                           f"suite; a test suite must be held out from both")
    if build_id is not None and build_id != contract.agent:
        flags = launch_flags(loads(run.get("agents"), {}) or {})
        raise TestRunError(f"{run_id} was evaluated by build agent {contract.agent!r} but this command would "
                           f"run {build_id!r}; pass the same agent flags as the run ("
                           + (f"it ran with: {flags}" if flags else "it was a dry run: no --real")
                           + ", or none at all to reuse them) so the test measures the same agent"
                           + ("; the agent's code or command changed since" if flags else ""))


def _control(db, settings: Settings, evaluator: Evaluator, run: dict, suite: Suite, contract: Contract,
             test_id: int, agent_argv: list[str], spent) -> tuple:
    """The no-skill control: (its outcome, None), or (None, {cause, evaluation_id, cells, failures, ran}) when
    its cells are not results (an agent that cannot run without a skill): champion vs seed stands without it,
    and the failure is reported beside it."""
    none = evaluator.evaluate(None, NO_SKILL, run["skill_name"], suite,
                              label=f"test · no skill on {suite.name}", contract=contract)
    try:
        _settle(db, settings, run["id"], test_id, [(none, suite, "no skill on the test suite")], agent_argv,
                spent, control=True)
    except EvaluationStop as err:
        return None, {"cause": str(err), "evaluation_id": none.evaluation_id, "cells": none.n_cells,
                      "failures": none.failures, "ran": none.ran}
    return none, None


def beside_it(settings: Settings, skill_name: str, contract: Contract) -> dict | None:
    """The other skills the run's cells held (--with-skills, checked against the run's digest by
    Session.open): {dir, skills, digest}; None for a run evaluated alone."""
    if not contract.with_skills:
        return None
    return {"dir": str(settings.with_skills), "skills": [p.name for p in other_skills(settings, skill_name)],
            "digest": contract.with_skills}


def _alone(session: Session, settings: Settings, agent_argv: list[str], launcher: Launcher,
           network: bool) -> Evaluator:
    """An evaluator like the session's (its budget asked, its run charged) whose cells hold the skill
    alone."""
    mine = session.evaluator
    contract = replace(session.contract, with_skills="")
    return Evaluator.for_settings(settings, session.db, contract, agent_argv=agent_argv, launcher=launcher,
                                  progress=session.progress, network=network, spend_gate=mine.spend_gate,
                                  payer=mine.payer)


def _settle(db, settings: Settings, run_id: str, test_id: int, measured: list, agent_argv: list[str],
            spent, *, control: bool = False) -> None:
    """A test report never rests on cells that failed for reasons that are not the skill's (the test run is
    then recorded failed), nor on one the budget stopped (recorded stopped). What the evaluations spent was
    charged to the run cell by cell (Evaluator.payer); `spent()` is the test's share, recorded with its end.
    `control`: the no-skill control's failure is the caller's to report beside champion vs seed."""
    try:
        for outcome, _, _ in measured:
            refused(outcome, run_cost(db, run_id))
    except BudgetStop:
        holdout.test_run_ended(db, test_id, "stopped", spent())
        raise
    try:
        refuse_sick(measured, max_failed_share=settings.max_failed_share, agent=" ".join(agent_argv)[-120:])
    except EvaluationStop:
        if not control:
            holdout.test_run_ended(db, test_id, "failed", spent())
        raise


def _train_composite(db, evaluator: Evaluator, weights: Weights, run: dict, genome_hash: str) -> float | None:
    found = latest_evaluation_id(db, run["id"], genome_hash, "train_evaluation_id")
    if found is None:
        return None
    cells = evaluator.cells(found)
    return summarise(cells, weights, stored_normalisers(run, "train")).composite
