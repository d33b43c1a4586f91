"""`run.py --serve`: start the dashboard, or reuse a healthy one already on the port.

Alone, --serve serves in the foreground. With a run to do, the dashboard is started as a detached
background process (it outlives the run) and the loop runs in the foreground.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from mutator.config import ROOT, ConfigError, Settings

APP_NAME = "skill-mutator-dashboard"


def healthy(host: str, port: int, timeout_s: float = 1.0) -> bool:
    try:
        url = f"http://{_url_host(host)}:{port}/api/health"
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return json.loads(response.read()).get("app") == APP_NAME
    except (OSError, ValueError):
        return False


def port_busy(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((_url_host(host).strip("[]"), port)) == 0


def _url_host(host: str) -> str:
    host = "127.0.0.1" if host in ("0.0.0.0", "") else "::1" if host == "::" else host
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def exposure_warning(host: str, allow_hosts: list[str]) -> str | None:
    """The warning for a dashboard bound beyond loopback, or None on loopback."""
    if host in LOOPBACK:
        return None
    names = ", ".join([host, "localhost", *allow_hosts])
    return (f"warning: the dashboard listens on {host}, beyond this machine. Anyone who can reach it can "
            "read every run and, with the page's token, start runs and accept proposals. It answers only "
            f"these Host names: {names} (add names with --allow-host NAME).")


def dashboard(settings: Settings, *, host: str, port: int, config: Path | None, foreground: bool,
              allow_hosts: list[str] | None = None) -> int | None:
    """Serve (foreground: blocks, returns an exit code) or ensure one runs in the background (returns
    None)."""
    allow_hosts = list(allow_hosts or [])
    warning = exposure_warning(host, allow_hosts)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    url = f"http://{_url_host(host)}:{port}/"
    if healthy(host, port):
        print(f"Dashboard already running at {url} — reusing it (restart it to load changed server code).",
              flush=True)
        return 0 if foreground else None
    if port_busy(host, port):
        raise ConfigError(f"port {port} on {host} is taken by something that is not the dashboard; pass "
                          "--port to pick another")
    if foreground:
        from mutator.server.app import serve
        serve(host=host, port=port, data_dir=settings.data_dir, config_file=config, allow_hosts=allow_hosts)
        return 0
    argv = [sys.executable, str(ROOT / "run.py"), "--serve", "--host", host, "--port", str(port),
            "--data-dir", str(settings.data_dir)] + (["--config", str(config)] if config else [])
    argv += [arg for name in allow_hosts for arg in ("--allow-host", name)]
    log = Path(tempfile.gettempdir()) / f"skill-mutator-dashboard-{port}.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if healthy(host, port):
            print(f"Dashboard: {url} (background pid {proc.pid}; log {log})", flush=True)
            return None
        if proc.poll() is not None:
            raise ConfigError(f"the dashboard exited with {proc.returncode}; see {log}")
        time.sleep(0.2)
    raise ConfigError(f"the dashboard did not answer on {url} within 20 s; see {log}")
