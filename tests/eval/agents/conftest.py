"""Fixtures for the agent backends: a local Messages-API server per test."""

from __future__ import annotations

import pytest

from tests.eval.agents.messages_server import MessagesServer


@pytest.fixture
def server():
    srv = MessagesServer()
    yield srv
    srv.close()
