"""What the Harbor trial machinery decides without starting a container: short image names qualified as docker
reads them (unless podman searches registries of its own), a Dockerfile's FROM lines rewritten (stage names
kept), a prebuilt image pulled by its qualified name, and the mount points a trial makes in the work dir
removed with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.container import (
    BUILD_FAILED,
    BuildError,
    ContainerEngine,
    Finished,
    Limits,
    podman_search,
    qualified_dockerfile,
    qualify,
)
from sandbox.container_launcher import TaskContainer


@pytest.mark.parametrize(("ref", "expected"), [
    ("jasonish/suricata", "docker.io/jasonish/suricata"),
    ("bugswarm/cached-images:tag", "docker.io/bugswarm/cached-images:tag"),
    ("ubuntu:24.04", "docker.io/library/ubuntu:24.04"),
    ("python", "docker.io/library/python"),
    ("ghcr.io/owner/img:1", "ghcr.io/owner/img:1"),
    ("localhost/sm-harbor-base", "localhost/sm-harbor-base"),
    ("registry:5000/x", "registry:5000/x"),
    ("docker.io/library/debian", "docker.io/library/debian"),
    ("scratch", "scratch"),
    ("${BASE}", "${BASE}"),
])
def test_short_names_are_qualified_as_docker_reads_them(ref: str, expected: str) -> None:
    assert qualify(ref) == expected


def test_a_dockerfiles_from_lines_are_qualified_and_its_stage_names_kept() -> None:
    text = ("FROM --platform=linux/amd64 golang:1.22 AS build\nRUN go build\n"
            "FROM jasonish/suricata\nCOPY --from=build /out /out\nfrom build\nFROM localhost/sm-harbor-base\n")
    assert qualified_dockerfile(text) == (
        "FROM --platform=linux/amd64 docker.io/library/golang:1.22 AS build\nRUN go build\n"
        "FROM docker.io/jasonish/suricata\nCOPY --from=build /out /out\nfrom build\n"
        "FROM localhost/sm-harbor-base\n")


def test_podmans_unqualified_search_registries_are_read_from_its_info() -> None:
    assert podman_search({"registries": {"search": ["docker.io", "quay.io"]}}) == ["docker.io", "quay.io"]
    assert podman_search({"registries": {}}) == [] and podman_search({}) == []


class FakeEngine(ContainerEngine):
    """Records each engine command; `fail` names the subcommands that fail; a build's Dockerfile is read."""

    def __init__(self, search: tuple[str, ...] = (), fail: tuple[str, ...] = ()) -> None:
        super().__init__("podman", search=search)
        self.calls: list[list[str]] = []
        self.built: list[str] = []
        self.fail = fail

    def _run(self, args, timeout_s):
        self.calls.append(list(args))
        if args[0] == "build":
            self.built.append(Path(args[args.index("-f") + 1]).read_text())
        if args[0] in self.fail:
            return Finished(125, "Error: short-name \"x\" did not resolve to an alias")
        return Finished(0, "")


def test_a_build_gets_the_qualified_dockerfile_unless_podman_searches(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM jasonish/suricata\n")
    plain = FakeEngine(fail=("image",))          # no image yet: it is built
    plain.image_for(tmp_path, "abc")
    searching = FakeEngine(search=("docker.io",), fail=("image",))
    searching.image_for(tmp_path, "abc")
    assert (plain.built, searching.built) == (["FROM docker.io/jasonish/suricata\n"], ["FROM jasonish/suricata\n"])
    assert (tmp_path / "Dockerfile").read_text() == "FROM jasonish/suricata\n"   # the suite's copy untouched


def test_a_prebuilt_image_is_pulled_by_its_qualified_name_and_a_failed_pull_is_a_build_error(tmp_path: Path) -> None:
    engine = FakeEngine(fail=("image",))
    assert engine.image_for(tmp_path, "abc", base_image="bugswarm/cached-images") == "docker.io/bugswarm/cached-images"
    assert ["pull", "-q", "docker.io/bugswarm/cached-images"] in engine.calls
    with pytest.raises(BuildError, match=f"^{BUILD_FAILED}: pulling docker.io/jasonish/suricata failed"):
        FakeEngine(fail=("image", "pull")).image_for(tmp_path, "abc", base_image="jasonish/suricata")


def test_a_trials_mount_points_in_the_work_dir_go_with_it(tmp_path: Path) -> None:
    """WORKDIR=/root and the harness's Python under /root: the engine makes the mount point inside the work dir
    (bound at /root); closing the trial removes the folders it made, and nothing that was there before."""
    work = tmp_path / "work"
    (work / "kept" / "sub").mkdir(parents=True)
    engine = FakeEngine()
    container = TaskContainer(engine, "img", workdir="/root", work=work, limits=Limits())
    specs = ["-v", "/host/py:/root/work/.pyenv/versions/3.11.7:ro", "-v", "/host/k:/root/kept/sub/x:ro",
             "-v", "/host/cell:/tmp/cell:rw"]
    container._start(specs)
    assert engine.calls[0][:2] == ["run", "-d"] and engine.calls[0][-3:] == ["tail", "-f", "/dev/null"]
    for made in ("work/.pyenv/versions/3.11.7", "kept/sub/x"):   # as the engine makes them
        (work / made).mkdir(parents=True)
    (work / "kept" / "sub" / "agent-output.txt").write_text("the agent's")
    container.close()
    assert not (work / "work").exists() and not (work / "kept" / "sub" / "x").exists()
    assert (work / "kept" / "sub" / "agent-output.txt").read_text() == "the agent's"
    assert [c[0] for c in engine.calls[-2:]] == ["kill", "rm"]


def test_an_agent_call_is_execed_into_the_trial_with_its_env_file(tmp_path: Path) -> None:
    engine = FakeEngine()
    container = TaskContainer(engine, "img", workdir="/app", work=tmp_path, limits=Limits())
    argv = container.wrap(["/bin/true"], cwd=tmp_path, writable=[], readable=[], network=False,
                          env={"SM_STREAM": "/x"})
    start = engine.calls[0]
    assert start[:2] == ["run", "-d"] and "--network" in start and "--env-file" not in start
    inner = argv[argv.index("podman") + 1:]
    assert inner[:4] == ["exec", "-i", "--workdir", "/app"] and inner[4] == "--env-file"
    assert inner[6] == container.name
    container.wrap(["/bin/true"], cwd=tmp_path, writable=[], readable=[], network=False)
    assert [c[0] for c in engine.calls].count("run") == 1     # one container for the whole trial
    container.close()
