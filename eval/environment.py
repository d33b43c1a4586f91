"""The environment an agent, its tools and a grader get: an allow-list, never the harness's whole environment.

A build agent that runs `env` must not find the user's API key (it would land in its stream, be stored and
be staged for the mutator). What passes: the basics (PATH, locale), HOME pointing into the cell, the
contract's SM_* variables, the fakes' FAKE_* test hooks, the names the user passes (`--pass-env NAME`,
config `passEnv`, carried as SM_PASS_ENV), and the model-API variables only for our own backends' processes.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

BASE = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TERM")
PREFIXES = ("SM_", "FAKE_")     # the agent process contract; the zero-spend fakes' test hooks
PASS_ENV = "SM_PASS_ENV"        # comma-separated names the user passes on (--pass-env / config passEnv)
# What our own backends (eval/agents/*) need to call the model API themselves; their tools never get these.
MODEL_API = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "HTTPS_PROXY", "HTTP_PROXY",
             "NO_PROXY", "https_proxy", "http_proxy", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR")
# The credentials among them: our backends get these through a pipe, never their environment
# (eval/agent_call.py).
CREDENTIALS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
OUR_BACKENDS = Path(__file__).resolve().parent / "agents"
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)


def pass_names(source: Mapping[str, str]) -> list[str]:
    return [name for name in re.split(r"[,\s]+", source.get(PASS_ENV, "")) if name]


def environ_items(source: Mapping[str, str] | None = None) -> tuple:
    """A hashable snapshot of an environment, to work out what derives from it once per version of it: keying
    on os.environ's raw items costs ~5 us, where reading it through its decoding mapping costs ~100 us."""
    return tuple(os.environ._data.items()) if source is None else tuple(source.items())


def runs_our_backend(argv: Iterable[str]) -> bool:
    """True when the process is one of our model backends (eval/agents/*.py),
    which call the API themselves."""
    return _our_backend(tuple(str(part) for part in argv))


@functools.lru_cache(maxsize=64)
def _our_backend(argv: tuple[str, ...]) -> bool:
    for part in argv:
        try:
            if Path(part).resolve().parent == OUR_BACKENDS:
                return True
        except (OSError, ValueError):
            continue
    return False


def allowed_env(*, home: Path, argv: Iterable[str] = (), extra: Mapping[str, str] | None = None,
                source: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for one child process (agent or grader): the allow-list, HOME, then `extra`."""
    env = dict(_allowed(environ_items(source), runs_our_backend(argv)))
    env["HOME"] = str(home)
    env.update(extra or {})
    return env


@functools.lru_cache(maxsize=16)
def _allowed(items: tuple, backend: bool) -> tuple[tuple[str, str], ...]:
    source = {os.fsdecode(name): os.fsdecode(value) for name, value in items}   # bytes from os.environ._data
    names = set(BASE) | set(pass_names(source))
    if backend:
        names |= set(MODEL_API)
    return tuple((name, value) for name, value in source.items()
                 if name in names or name.startswith(PREFIXES))
