"""Fixtures of the eval tests: a local Messages-API server per test (for the agent backends, the skill-use
parser, ...; a module with its own `server` overrides it)."""

from __future__ import annotations

import pytest

from tests.eval.agents.messages_server import MessagesServer


@pytest.fixture
def server():
    srv = MessagesServer()
    yield srv
    srv.close()
