"""The secret scan of mined traces: key shapes and `NAME_KEY=value` assignments, found or replaced.

Wider than eval/redact.py's run-time redaction (which knows the harness's own environment): a user's
transcript can hold any provider's key, so every common shape counts. A trace holding one is dropped,
or with --redact has each value replaced by [REDACTED]. Pure text in, text out.
"""

from __future__ import annotations

import re

from eval.redact import REDACTED

SHAPES = re.compile(
    r"sk-ant-[A-Za-z0-9_\-]{6,}"                    # Anthropic
    r"|\bsk-(?:proj-)?[A-Za-z0-9_\-]{20,}"          # OpenAI-style
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"               # AWS access key id
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}\b|\bgithub_pat_[A-Za-z0-9_]{20,}"   # GitHub
    r"|\bglpat-[A-Za-z0-9_\-]{20,}"                 # GitLab
    r"|\bxox[abprs]-[A-Za-z0-9\-]{10,}"             # Slack
    r"|\bAIza[0-9A-Za-z_\-]{35}"                    # Google API key
    r"|\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"   # a JWT
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)")
# NAME=value / NAME: value where NAME ends like a secret (API_KEY, GH_TOKEN, DB_PASSWORD, client_secret, pwd)
ASSIGNMENT = re.compile(
    r"(?i)\b((?:[A-Za-z0-9_.\-]*[_.\-])?(?:api_?key|access_?key|key|token|secret|password|passwd|pwd|"
    r"credentials?))(\"?\s*[=:]\s*[\"']?)"
    r"(?![$<{\[])([^\s\"',;}]{6,})")
PLACEHOLDER = re.compile(r"^(?:x+|\.+|\*+|sk-ant-\.+|your[-_a-z]*|changeme|example\w*|redacted|"
                         r"\[redacted\])$", re.I)


def findings(text: str) -> int:
    """How many secret-looking values the text holds."""
    count = len(SHAPES.findall(text))
    count += sum(1 for m in ASSIGNMENT.finditer(text) if not PLACEHOLDER.match(m.group(3))
                 and REDACTED not in m.group(3))
    return count


def redact(text: str) -> str:
    text = SHAPES.sub(REDACTED, text)
    return ASSIGNMENT.sub(lambda m: m.group(0) if PLACEHOLDER.match(m.group(3)) else m.group(1)
                          + m.group(2) + REDACTED, text)
