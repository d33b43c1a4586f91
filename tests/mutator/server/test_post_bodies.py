"""Every dashboard POST parses its body defensively: a client's charset, size, encoding, nesting or a NUL in a
field is a JSON 4xx naming it (never a 500, never a started process); a POST naming a run the store lacks is
404 and starts nothing; a broken suite behind /api/launch/plan is a 400 naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytest_asyncio

from mutator.server.app import create_app
from mutator.server.common import CHILDREN
from mutator.store.db import connect
from tests.conftest import ROOT
from tests.mutator.server.conftest import TOKEN

POSTS = ("/api/launch", "/api/launch/plan", "/api/test-run", "/api/proposals/1/accept",
         "/api/proposals/1/reject")
pytestmark = pytest.mark.asyncio
LAUNCH = {"suite": "clean-train", "val": "clean-val", "seed": "csv-clean", "strategy": "greedy",
          "model": "claude-haiku-4-5", "replicates": 1, "rounds": 1}


def config_with_broken_suite(tmp: Path) -> Path:
    """The project's config.json, with 'clean-train' pointing at a suite whose tasks.jsonl is not JSON."""
    tree = json.loads((ROOT / "config.json").read_text())
    tree["skillDir"] = str(ROOT / tree["skillDir"])
    tree["suites"] = {name: str(ROOT / path) for name, path in tree["suites"].items()}
    broken = tmp / "broken-train"
    broken.mkdir()
    (broken / "suite.md").write_text("---\nname: broken-train\nsplit: train\n---\n")
    (broken / "tasks.jsonl").write_text('{"id": "t1", "prompt": \n')
    (broken / "run-eval").write_text("#!/bin/sh\necho '{}'\n")
    (broken / "run-eval").chmod(0o755)
    tree["suites"]["clean-train"] = str(broken)
    (tmp / "config.json").write_text(json.dumps(tree))
    return tmp / "config.json"


@pytest_asyncio.fixture
async def client(aiohttp_client, tmp_path: Path):
    data = tmp_path / "data"
    db = connect(data / "mutator.db")
    db["runs"].insert({"id": "run-00aa11bb22cc", "status": "finished", "kind": "evolve", "created_at": 1.0})
    db.conn.close()
    app = create_app(data_dir=data, project_root=tmp_path, token=TOKEN,
                     config_file=config_with_broken_suite(tmp_path))
    return await aiohttp_client(app)


async def post(client, path: str, data: bytes, content_type: str = "application/json"):
    return await client.post(path, data=data, headers={"X-SM-Token": TOKEN, "Content-Type": content_type})


async def refused(response, status: int, *words: str) -> None:
    assert response.status == status, await response.text()
    assert response.content_type == "application/json"
    error = (await response.json())["error"]
    for word in words:
        assert word in error, error


DEEP = ("[" * 100_000 + "]" * 100_000).encode()
BODIES = {   # name: (body bytes, content type, status, words the error says)
    "unknown-charset": (b'{"suite": "clean-train"}', "application/json; charset=x-no-such", 415,
                        ("charset",)),
    "latin-1-charset": (b'{"suite": "clean-train"}', "application/json; charset=latin-1", 415, ("UTF-8",)),
    "not-utf8": (b'{"reason": "caf\xe9"}', "application/json", 400, ("UTF-8",)),
    "100000-deep": (DEEP, "application/json", 400, ("nested deeper",)),
    "deep-field": (json.dumps({"suite": [[[[[[[[[["x"]]]]]]]]]]}).encode(), "application/json", 400,
                   ("suite.0.0", "nested deeper")),
    "nul-in-reason": (json.dumps({"store": "", "reason": "bad\u0000reason"}).encode(), "application/json",
                      400, ("reason: contains a NUL byte",)),
    "8-mb": (b'{"reason": "' + b"x" * (8 * 2**20) + b'"}', "application/json", 413, ("1 MiB",)),
}


@pytest.mark.parametrize("path", POSTS)
@pytest.mark.parametrize("name", list(BODIES))
async def test_every_post_answers_a_bad_body_with_a_json_4xx_naming_it(client, path: str, name: str) -> None:
    data, content_type, status, words = BODIES[name]
    await refused(await post(client, path, data, content_type), status, *words)
    assert client.server.app[CHILDREN].items == []         # nothing started


async def test_a_test_run_of_a_run_the_store_lacks_is_404_and_starts_nothing(client) -> None:
    body = json.dumps({"run_id": "run-0123456789ab", "suite": "clean-test"}).encode()
    await refused(await post(client, "/api/test-run", body), 404, "run_id", "run-0123456789ab")
    assert client.server.app[CHILDREN].items == []


async def test_a_broken_suite_behind_the_plan_is_a_400_naming_its_file(client, tmp_path: Path) -> None:
    await refused(await post(client, "/api/launch/plan", json.dumps(LAUNCH).encode()), 400,
                  str(tmp_path / "broken-train" / "tasks.jsonl"))
