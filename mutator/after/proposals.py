"""Proposals: a finished run's champion offered for review, never deployed automatically.

A proposal holds the diff vs the seed, the champion's val and latest test figures and the critic's
gate rows. Statuses: proposed -> accepted -> deployed | failed, proposed -> rejected, proposed ->
superseded (a newer proposal of the same run), deployed -> rolled_back. Only `proposed` can be rejected;
`proposed`, `rolled_back` and `failed` can be accepted (a rolled-back champion deployed again, a failed deploy
retried); every decision is a timestamped row. A champion is proposed only for a real improvement:
val composite at least `proposeMinDelta` above the seed's on a healthy evaluation, and a latest test
run (if any) not worse than the seed.
"""

from __future__ import annotations

from pathlib import Path

import sqlite_utils

from eval.errors import SkillMutatorError
from mutator.round.summary import stored_cells
from mutator.scoring.models import stored_normalisers
from mutator.scoring.score import Weights, summarise
from mutator.store import deployments as deploy_rows
from mutator.store import proposals as proposal_rows
from mutator.store.attempt_reads import champion_attempt
from mutator.store.db import dumps, loads, now
from mutator.store.evaluation_reads import evaluation_health, graded_pair, regraded_evaluation
from mutator.store.genome import GenomeStore
from mutator.store.holdout import latest_done_test
from mutator.store.run_lookup import recent_run_ids, run_row

STATUSES = ("proposed", "accepted", "rejected", "deployed", "failed", "rolled_back", "superseded")


class ProposalError(SkillMutatorError, RuntimeError):
    """A proposal cannot be made or decided as asked; the message names the current status or the fix."""


def get(db: sqlite_utils.Database, proposal_id: int) -> dict:
    found = proposal_rows.proposal_row(db, proposal_id)
    if found is None:
        recent = [str(i) for i in proposal_rows.recent_proposal_ids(db)]
        raise ProposalError(f"no proposal {proposal_id}; recent proposals: {', '.join(recent) or 'none'}")
    return found


def decisions(db: sqlite_utils.Database, proposal_id: int) -> list[dict]:
    return proposal_rows.decisions_of(db, proposal_id)


def record(db: sqlite_utils.Database, proposal_id: int, action: str, status_from: str | None, status_to: str,
           note: str | None = None) -> None:
    """Move a proposal to `status_to` and keep the decision: both commit together."""
    proposal_rows.record_decision(db, proposal_id, action, status_from, status_to, note, now())


def _champion_attempt(db: sqlite_utils.Database, run_id: str, genome_hash: str) -> dict:
    return champion_attempt(db, run_id, genome_hash)


def _one_grader(db: sqlite_utils.Database, run: dict, attempt: dict,
                seed: dict) -> tuple[dict, dict, tuple[str, str, str] | None]:
    """The champion's and the seed's val figures graded by one grader, and (suite, the champion's suite hash,
    the seed's) when no such pair exists. A resumed run re-grades its seed under today's grader (round 0)
    while the champion's deciding attempt keeps its day's: then the champion's evaluation re-made under the
    seed's grader (regrade.py) is read, or else the seed's under the champion's."""
    ids = (attempt.get("val_evaluation_id"), seed.get("val_evaluation_id"))
    if None in ids:
        return attempt, seed, None
    graded = graded_pair(db, ids)
    if len(graded) < 2 or graded[ids[0]]["suite_hash"] == graded[ids[1]]["suite_hash"]:
        return attempt, seed, None
    weights, norm = Weights.of_run(run), stored_normalisers(run, "val")
    for mine, other, swap in ((graded[ids[0]], graded[ids[1]], 0), (graded[ids[1]], graded[ids[0]], 1)):
        found = regraded_evaluation(db, mine, other["suite_hash"])
        cells = stored_cells(db, found) if found is not None else []
        if cells:
            figures = summarise(cells, weights, norm)
            regraded = {"composite": figures.composite, "eval": figures.eval, "cost": figures.cost,
                        "steps": figures.steps, "val_evaluation_id": found}
            return ({**attempt, **regraded}, seed,
                    None) if swap == 0 else (attempt, {**seed, **regraded}, None)
    return attempt, {}, (graded[ids[0]]["suite"], graded[ids[0]]["suite_hash"], graded[ids[1]]["suite_hash"])


def _figures(db: sqlite_utils.Database, run: dict, champion: str) -> tuple[dict, dict | None, list]:
    attempt, seed, apart = _one_grader(db, run, _champion_attempt(db, run["id"], champion),
                                _champion_attempt(db, run["id"], run["seed_hash"]))
    val = {"suite": run["val"], "round": attempt.get("round"), "composite": attempt.get("composite"),
           "eval": attempt.get("eval"), "cost": attempt.get("cost"), "steps": attempt.get("steps"),
           "seed_composite": seed.get("composite"), "seed_eval": seed.get("eval"),
           "delta_vs_incumbent": attempt.get("delta"), "gate_threshold": attempt.get("gate_threshold"),
           "evaluation_id": attempt.get("val_evaluation_id"),
           "seed_evaluation_id": seed.get("val_evaluation_id")}
    if apart:   # no pair graded alike: why_not says so
        val["graded_apart"] = list(apart)
    test = latest_test(db, run["id"], champion)
    gates = loads(attempt.get("critic"), []) or []
    return val, test, gates


def why_not(db: sqlite_utils.Database, run: dict, champion: str, val: dict, test: dict | None, *,
            min_delta: float, max_failed_share: float, no_harm: bool = False) -> str:
    """Why this champion is not a real improvement ("" when it is); `no_harm` (proposeNoHarm): nor while its
    latest test flags a task it harms."""
    if val.get("graded_apart"):
        suite, mine, seed = val["graded_apart"]
        return (f"the champion and the seed were graded by different versions of val suite {suite} (suite "
                f"hash {mine[:12]} vs {seed[:12]}) and neither was re-graded under the other's grader, so "
                "there is no like-for-like figure; re-run the run's own command (it re-grades with no agent "
                f"run), then --propose again")
    if val.get("composite") is None or val.get("seed_composite") is None:
        return "the champion or the seed has no val composite"
    gain = val["composite"] - val["seed_composite"]
    if gain < min_delta:
        return (f"val composite {val['composite']:.4f} is only {gain:+.4f} vs the seed's "
                f"{val['seed_composite']:.4f}, below proposeMinDelta {min_delta:g}")
    attempt = _champion_attempt(db, run["id"], champion)
    e = evaluation_health(db, attempt.get("val_evaluation_id"))
    if e is not None:
        share = (e["n_failed"] or 0) / max(e["n_cells"] or 1, 1)
        if e["status"] != "done" or share > max_failed_share:
            return (f"the champion's val evaluation is not healthy ({e['n_failed'] or 0} of {e['n_cells']} "
                    f"cells failed, status {e['status']})")
    return tested_out(test, no_harm=no_harm)


def tested_out(test: dict | None, *, no_harm: bool) -> str:
    """Why the champion's latest test refuses it ("" when it does not): worse than the seed on the test
    suite; with `no_harm` (proposeNoHarm), a task it harms."""
    delta = ((test or {}).get("report") or {}).get("splits", {}).get("test") if test else None
    if delta and delta.get("delta", {}).get("mean") is not None and delta["delta"]["mean"] < 0:
        return (f"its latest test run on {test['suite']} is worse than the seed (Δcomposite "
                f"{delta['delta']['mean']:+.4f})")
    if not no_harm:
        return ""
    from mutator.validity.harm import flagged_reason  # scipy.stats: only when asked
    return flagged_reason((test or {}).get("report"))


def latest_test(db: sqlite_utils.Database, run_id: str, champion: str) -> dict | None:
    """The champion's newest finished test: {suite, composite, eval, cost, steps, test_run, report}."""
    t = latest_done_test(db, run_id, champion)
    if t is None:
        return None
    return {"suite": t["suite"], "composite": t["composite"], "eval": t["eval"], "cost": t["cost"],
            "steps": t["steps"], "test_run": t["id"], "report": loads(t["report"], {}) or {}}


def refuse_if_tested_out(db: sqlite_utils.Database, proposal: dict, *, no_harm: bool, action: str) -> None:
    """A proposal made before its champion's latest test is held to that test: with `no_harm`
    (proposeNoHarm) a champion the test flags is neither proposed again nor deployed; a champion the test
    found worse than the seed is not proposed again."""
    from mutator.config import run_py
    test = latest_test(db, proposal["run_id"], proposal["genome_hash"])
    reason = tested_out(test, no_harm=no_harm) if action == "proposed" else \
        (tested_out(test, no_harm=True) if no_harm else "")
    if reason:
        raise ProposalError(f"{proposal['run_id']}'s champion {proposal['genome_hash'][:12]} is not "
                            f"{action}: {reason}. Proposal {proposal['id']} ({proposal['status']}) was made "
                            f"before that test (test run #{test['test_run']}); reject it: {run_py()} "
                            f"--reject {proposal['id']} --reason 'flagged by its test'")


def propose(db: sqlite_utils.Database, genomes: GenomeStore, run_id: str, *, target_dir: Path | None,
            auto: bool = False, min_delta: float = 0.0, max_failed_share: float = 1.0,
            no_harm: bool = False) -> tuple[dict, bool]:
    """The run's champion as a proposal, aimed at `target_dir` or else the run's own skill folder (when the
    run recorded it); returns (proposal, created).

    An open (`proposed`) proposal for the same champion is returned as is; so is any earlier one when
    `auto` (a run finishing again must not pile up proposals). An explicit --propose after a terminal
    decision (rejected, failed, rolled_back, deployed) makes a fresh proposal.
    """
    run = run_row(db, run_id)
    if run is None:
        known = recent_run_ids(db)
        raise ProposalError(f"no run {run_id!r}; recent runs: {', '.join(known) or 'none'}")
    if run["kind"] != "evolve":
        raise ProposalError(f"{run_id} is an {run['kind']} run; only an evolve run's champion can be "
                            "proposed")
    champion = run["incumbent_hash"]
    if champion == run["seed_hash"]:
        raise ProposalError(f"{run_id}'s champion is its seed ({champion[:12]}): no change to propose")
    earlier = proposal_rows.proposals_of(db, run_id, champion)
    for proposal in earlier:
        if proposal["status"] == "proposed" or auto:
            if proposal["status"] == "proposed":   # made before a test that may refuse it now
                refuse_if_tested_out(db, proposal, no_harm=no_harm, action="proposed")
            return proposal, False
    val, test, gates = _figures(db, run, champion)
    reason = why_not(db, run, champion, val, test, min_delta=min_delta, max_failed_share=max_failed_share,
                     no_harm=no_harm)
    if reason:
        raise ProposalError(f"{run_id}'s champion {champion[:12]} is not proposed: {reason}")
    new = proposal_rows.NewProposal(
        run_id=run_id, genome_hash=champion, seed_hash=run["seed_hash"], skill_name=run["skill_name"],
        diff=genomes.diff(run["seed_hash"], champion), val=dumps(val), test=dumps(test), gates=dumps(gates),
        target_dir=str(target_dir.resolve()) if target_dir else run.get("skill_dir"))
    older = proposal_rows.open_proposal_ids(db, run_id)
    proposal_id = proposal_rows.insert_proposal(
        db, new, note="automatic: the run finished" if auto else "run.py --propose", at=now(),
        supersedes=older)
    return get(db, proposal_id), True


def _refuse_unless_proposed(proposal: dict, action: str) -> None:
    if proposal["status"] != "proposed":
        raise ProposalError(f"proposal {proposal['id']} is {proposal['status']}; only a proposed proposal "
                            f"can be {action} (its decisions are on the dashboard's Proposals page)")


ACCEPTABLE = ("proposed", "rolled_back", "failed")


def refuse_unless_acceptable(proposal: dict) -> None:
    if proposal["status"] not in ACCEPTABLE:
        raise ProposalError(f"proposal {proposal['id']} is {proposal['status']}; only a proposed, "
                            "rolled-back or failed proposal can be accepted (its decisions are on the "
                            "dashboard's Proposals page)")


def accept(db: sqlite_utils.Database, proposal_id: int, note: str | None = None) -> dict:
    """proposed | rolled_back | failed -> accepted; the deploy (mutator/after/deploy.py) then moves it to
    deployed or failed."""
    proposal = get(db, proposal_id)
    refuse_unless_acceptable(proposal)
    record(db, proposal_id, "accept", proposal["status"], "accepted", note)
    return get(db, proposal_id)


def reject(db: sqlite_utils.Database, proposal_id: int, reason: str | None = None) -> dict:
    proposal = get(db, proposal_id)
    _refuse_unless_proposed(proposal, "rejected")
    record(db, proposal_id, "reject", "proposed", "rejected", reason)
    return get(db, proposal_id)


def listing(db: sqlite_utils.Database, limit: int = 200) -> list[dict]:
    """Newest first, without the diff (the detail carries it); JSON columns decoded."""
    found = proposal_rows.listing_rows(db, limit)
    for proposal in found:
        for key in ("val", "test", "gates"):
            proposal[key] = loads(proposal[key])
    return found


def detail(db: sqlite_utils.Database, proposal_id: int) -> dict:
    proposal = get(db, proposal_id)
    for key in ("val", "test", "gates"):
        proposal[key] = loads(proposal[key])
    proposal["decisions"] = decisions(db, proposal_id)
    proposal["deployments"] = deploy_rows.deployments_of(db, proposal_id)
    return proposal
