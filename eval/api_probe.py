"""One cheap request to the Messages API, the way the run's agents and judges will call it: a one-token
reply from one model, at one endpoint, with one key. The run asks it once per distinct (endpoint, key, model)
before its first cell (mutator/round/api_check.py), so a dead endpoint, a refused key, an overloaded API or an
unknown model is said in seconds, not after every retry of every cell. Knows nothing of runs; never raises.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from eval.cost import Usage

DEFAULT_ENDPOINT = "https://api.anthropic.com"
PROMPT = "Reply with the one word: ok"
RETRIES = 2          # the SDK's own retries (with its backoff): a blip is not an outage
TIMEOUT_S = 20.0


@dataclass(frozen=True)
class Endpoint:
    """Where the run's model calls go and with which credential (read as the agents read them)."""
    url: str
    credential: Mapping[str, str] = field(default_factory=dict, repr=False)   # api_key or auth_token

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Endpoint:
        url = environ.get("ANTHROPIC_BASE_URL") or ""
        if environ.get("ANTHROPIC_API_KEY"):
            credential = {"api_key": environ["ANTHROPIC_API_KEY"]}
        elif environ.get("ANTHROPIC_AUTH_TOKEN"):
            credential = {"auth_token": environ["ANTHROPIC_AUTH_TOKEN"]}
        else:   # a local server needs no key: the agents send a placeholder (eval/agents/warm.py)
            credential = {"api_key": "local-server"}
        return cls(url.rstrip("/") or DEFAULT_ENDPOINT, credential)

    @property
    def key_id(self) -> str:
        """Tells keys apart without holding the key: a digest of it."""
        import hashlib
        return hashlib.sha256(repr(sorted(self.credential.items())).encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Answer:
    """What the probe got: `kind` is "" when the API answered, else unreachable | timeout | auth | model |
    overloaded | rate | server | other; `said` is the SDK's or the API's words."""
    kind: str
    said: str = ""
    status: int | None = None
    usage: Usage = field(default_factory=Usage)
    requests: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.kind


def kind_of(err: Exception) -> tuple[str, int | None]:
    import anthropic
    if isinstance(err, anthropic.APITimeoutError):
        return "timeout", None
    if isinstance(err, anthropic.APIConnectionError):
        return "unreachable", None
    status = getattr(err, "status_code", None)
    text = str(err).lower()
    if status in (401, 403):
        return "auth", status
    if status in (400, 404) and "model" in text:
        return "model", status
    if status == 529 or "overloaded" in text:
        return "overloaded", status
    if status == 429:
        return "rate", status
    if status is not None and status >= 500:
        return "server", status
    return "other", status


def probe(endpoint: Endpoint, model: str, *, retries: int = RETRIES, timeout_s: float = TIMEOUT_S) -> Answer:
    """Ask `model` for one token; the answer, never an exception."""
    import anthropic
    import httpx2  # the SDK's own HTTP library

    sent = [0]

    def count(_request: object) -> None:
        sent[0] += 1
    started = time.monotonic()
    timeout = httpx2.Timeout(timeout_s, connect=10.0)
    http = anthropic.DefaultHttpxClient(event_hooks={"request": [count]}, timeout=timeout)
    client = anthropic.Anthropic(**endpoint.credential, base_url=endpoint.url, max_retries=retries,
                                 timeout=timeout, http_client=http)
    try:
        message = client.messages.create(model=model, max_tokens=1,
                                         messages=[{"role": "user", "content": PROMPT}])
    except anthropic.APIError as err:
        kind, status = kind_of(err)
        cause = err.__cause__ or err.__context__
        said = f"{type(err).__name__}: {err}" + (f" ({cause})" if cause and kind == "unreachable" else "")
        return Answer(kind, said[:500], status, requests=sent[0], seconds=time.monotonic() - started)
    except Exception as err:   # a malformed URL, a proxy setting the SDK refuses: said, never raised
        return Answer("other", f"{type(err).__name__}: {err}"[:500], requests=sent[0],
                      seconds=time.monotonic() - started)
    finally:
        client.close()
    u = message.usage
    usage = Usage(u.input_tokens or 0, u.output_tokens or 0,
                  getattr(u, "cache_creation_input_tokens", 0) or 0,
                  getattr(u, "cache_read_input_tokens", 0) or 0)
    return Answer("", usage=usage, status=200, requests=sent[0], seconds=time.monotonic() - started)
