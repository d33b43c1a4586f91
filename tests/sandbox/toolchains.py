"""Version-manager installs laid out as the real ones are, for the resolver and sandbox proofs.

pyenv: `shims/python3` (pyenv's own shim text) → `libexec/pyenv` → `versions/<v>/bin/python3`, where `versions/<v>`
is a real venv of the running Python with a module in its `lib/` (so a test can tell the whole prefix was
mounted). nvm: `versions/node/<v>/bin/claude`, a symlink into `lib/node_modules/@anthropic-ai/claude-code/`, whose
`#!/usr/bin/env node` finds nvm's `bin/node` (the running Python stands in for node: cli.js is Python).
"""

from __future__ import annotations

import sys
import venv
from pathlib import Path

# pyenv 2.x's shim, as `pyenv rehash` writes it.
PYENV_SHIM = '''#!/usr/bin/env bash
set -e
[ -n "$PYENV_DEBUG" ] && set -x

program="${{0##*/}}"

export PYENV_ROOT="{root}"
exec "{root}/libexec/pyenv" exec "$program" "$@"
'''

# The two pyenv commands a shim and the resolver use, with pyenv's version selection (PYENV_VERSION, else
# $PYENV_ROOT/version) and its message for a version that is not installed.
PYENV = '''#!/usr/bin/env bash
set -e
command="$1"; shift
version="${PYENV_VERSION:-$(head -n1 "$PYENV_ROOT/version")}"
bin="$PYENV_ROOT/versions/$version/bin"
[ -d "$bin" ] || { echo "pyenv: version \\`$version' is not installed (set by $PYENV_ROOT/version)" >&2; exit 1; }
case "$command" in
  which) echo "$bin/$1" ;;
  exec) program="$1"; shift; export PATH="$bin:$PATH"; exec "$bin/$program" "$@" ;;
esac
'''

FAKE_CLAUDE = '''#!/usr/bin/env node
import json, sys
if "--version" in sys.argv:
    print("99.0.0 (Claude Code)")
    sys.exit(0)
sys.stdin.read()
print(json.dumps({"type": "system", "subtype": "init", "argv0": sys.argv[0]}))
print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "num_turns": 1,
                  "result": "done by nvm's claude", "total_cost_usd": 0,
                  "usage": {"input_tokens": 1, "output_tokens": 1}}))
'''

PY = f"python{sys.version_info.major}.{sys.version_info.minor}"


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def pyenv_tree(root: Path, version: str = "3.99.0", *, selected: str | None = None) -> Path:
    """A pyenv root with `version` installed and `selected` (default: that one) chosen in $PYENV_ROOT/version."""
    for program in ("python3", "python"):
        executable(root / "shims" / program, PYENV_SHIM.format(root=root))
    executable(root / "libexec" / "pyenv", PYENV)
    (root / "bin").mkdir()
    (root / "bin" / "pyenv").symlink_to("../libexec/pyenv")
    (root / "version").write_text((selected or version) + "\n")
    prefix = root / "versions" / version
    venv.EnvBuilder(symlinks=True, with_pip=False).create(prefix)
    (prefix / "lib" / PY / "site-packages" / "pyenv_marker.py").write_text(f"VERSION = {version!r}\n")
    return root


def nvm_tree(root: Path, version: str = "v99.0.0") -> Path:
    """An nvm root with claude installed globally by npm; returns the node version's prefix."""
    prefix = root / "versions" / "node" / version
    package = prefix / "lib" / "node_modules" / "@anthropic-ai" / "claude-code"
    executable(package / "cli.js", FAKE_CLAUDE)
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "claude").symlink_to("../lib/node_modules/@anthropic-ai/claude-code/cli.js")
    (prefix / "bin" / "node").symlink_to(Path(sys.executable).resolve())
    return prefix
