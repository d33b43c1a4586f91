"""Genome hashes are stable and junk-blind; every backend's stream reads the same way."""

from __future__ import annotations

import json
from pathlib import Path

from eval.snapshot import copy_tree, hash_tree, list_files
from eval.stream_metrics import read_stream


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_hash_independent_of_creation_order_and_junk(tmp_path: Path) -> None:
    a = _tree(tmp_path / "a", {"SKILL.md": "x", "scripts/run.py": "y"})
    b = _tree(tmp_path / "b", {"scripts/run.py": "y", "SKILL.md": "x", ".git/HEAD": "ref", "__pycache__/z.pyc": "c",
                               ".DS_Store": "j"})
    assert hash_tree(a) == hash_tree(b)
    assert [p.as_posix() for p in list_files(b)] == ["SKILL.md", "scripts/run.py"]


def test_hash_sees_content_and_path(tmp_path: Path) -> None:
    base = hash_tree(_tree(tmp_path / "a", {"SKILL.md": "x"}))
    assert hash_tree(_tree(tmp_path / "b", {"SKILL.md": "x "})) != base
    assert hash_tree(_tree(tmp_path / "c", {"skill.md": "x"})) != base


def test_known_hash_is_stable_across_machines(tmp_path: Path) -> None:
    # sha256 over b"SKILL.md\0" + sha256(b"x"): fixed by construction, so a change in the scheme shows here.
    _tree(tmp_path / "a", {"SKILL.md": "x"})
    assert hash_tree(tmp_path / "a") == "10bb85a82ff956be09418fb7198ebe35f7cdd5976ed1d285f9e9bb5c635154f7"


def test_copy_tree_preserves_hash(tmp_path: Path) -> None:
    src = _tree(tmp_path / "a", {"SKILL.md": "x", "refs/r.md": "r", ".git/x": "j"})
    copy_tree(src, tmp_path / "b")
    assert hash_tree(tmp_path / "b") == hash_tree(src) and not (tmp_path / "b" / ".git").exists()


def test_stream_with_result(tmp_path: Path) -> None:
    stream = tmp_path / "s.jsonl"
    events = [{"type": "system"}, {"type": "assistant", "message": {"content": [{"type": "tool_use"}],
                                                                     "usage": {"input_tokens": 5}}},
              {"type": "result", "subtype": "success", "is_error": False, "num_turns": 3,
               "usage": {"input_tokens": 10, "output_tokens": 2, "cache_read_input_tokens": 7}}]
    stream.write_text("\n".join(json.dumps(e) for e in events) + "\n{half a line")
    m = read_stream(stream)
    assert (m.has_result, m.steps, m.usage.input_tokens, m.usage.output_tokens, m.usage.cache_read_input_tokens,
            m.bad_lines, m.tool_uses) == (True, 3, 10, 2, 7, 1, 1)


def test_stream_without_result_sums_assistant_usage(tmp_path: Path) -> None:
    stream = tmp_path / "s.jsonl"
    turn = {"type": "assistant", "message": {"content": [], "usage": {"input_tokens": 4, "output_tokens": 1}}}
    stream.write_text(json.dumps(turn) + "\n" + json.dumps(turn) + "\n")
    m = read_stream(stream)
    assert (m.has_result, m.is_error, m.steps, m.usage.input_tokens, m.subtype) == (False, True, 2, 8, "no_result")
    assert read_stream(tmp_path / "missing.jsonl").events == 0


def test_a_claude_cli_stream_cut_before_its_result_counts_each_message_once(tmp_path: Path) -> None:
    """Claude Code writes one assistant event per content block, each with its message's id and usage:
    4 messages of 1,200 input tokens, one of them in two blocks, are 4,800 tokens and 4 steps (not 6,000, 5)."""
    import json
    usage = {"input_tokens": 1200, "output_tokens": 30, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    events = []
    for n in range(4):
        blocks = [{"type": "text", "text": "thinking aloud"}, {"type": "tool_use", "id": f"t{n}", "name": "Bash"}] \
            if n == 2 else [{"type": "tool_use", "id": f"t{n}", "name": "Read"}]
        events += [{"type": "assistant", "message": {"id": f"msg_{n}", "content": [block], "usage": usage}}
                   for block in blocks]
    stream = tmp_path / "s.jsonl"
    stream.write_text("".join(json.dumps(e) + "\n" for e in events))
    m = read_stream(stream)
    assert (m.has_result, m.steps, m.usage.input_tokens, m.usage.output_tokens, m.tool_uses) == (False, 4, 4800, 120, 4)
