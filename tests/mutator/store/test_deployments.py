"""A deployment's rows from `deploying` to `deployed` and back (`rolled_back`), found by target folder."""

from __future__ import annotations

from mutator.store import deployments as D
from mutator.store import proposals as P

from .conftest import RUN


def test_a_deploy_then_its_rollback(db) -> None:
    proposal = P.NewProposal(RUN, "c" * 64, "s" * 64, "csv-clean", "", "{}", "null", "[]", None)
    pid = P.insert_proposal(db, proposal, note="n", at=1.0, supersedes=[])
    first = D.start_deployment(db, pid, "/skills/x", "c" * 64)
    D.deployment_failed(db, first, "OSError: no room")
    assert D.live_deployment(db, "/skills/x") is None
    second = D.start_deployment(db, pid, "/skills/x", "c" * 64)
    D.deployment_done(db, second, "p" * 64, "/backups/2")
    assert D.live_deployment(db, "/skills/x")["id"] == second
    assert D.deployment_row(db, second)["backup_dir"] == "/backups/2"
    D.rolled_back(db, second)
    assert D.live_deployment(db, "/skills/x") is None and D.last_rolled_back(db, "/skills/x")["id"] == second
    assert [d["status"] for d in D.deployments_of(db, pid)] == ["failed", "rolled_back"]
