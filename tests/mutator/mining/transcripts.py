"""Fixture transcripts in Claude Code's session JSONL shape (~/.claude/projects/<project>/<session>.jsonl),
and plain trace JSONL, written for the mining tests: several projects and sessions, planted secrets,
duplicates, corrections, and sessions that never used the skill."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.conftest import ROOT

START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
SECRETS = ("AKIAIOSFODNN7EXAMPLE", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "hunter2hunter",
           "sk-ant-api03-PLANTEDplantedPLANTED")


def seed_skill(root: Path) -> Path:
    skill = root / "skills" / "csv-clean"
    shutil.copytree(ROOT / "suites" / "csv-clean", skill)
    return skill


class Session:
    """Appends Claude Code transcript lines for one session."""

    def __init__(self, sid: str, start: datetime, cwd: str = "/home/u/shop") -> None:
        self.sid, self.t, self.cwd, self.lines, self.n = sid, start, cwd, [], 0

    def _line(self, kind: str, message: dict, **extra) -> Session:
        self.n += 1
        self.t += timedelta(seconds=30)
        self.lines.append({"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": self.cwd,
                           "sessionId": self.sid, "version": "2.0.14", "gitBranch": "main", "type": kind,
                           "message": message, "uuid": f"{self.sid}-{self.n}",
                           "timestamp": self.t.isoformat().replace("+00:00", "Z"), **extra})
        return self

    def ask(self, text: str) -> Session:
        return self._line("user", {"role": "user", "content": text})

    def meta(self, text: str) -> Session:
        return self._line("user", {"role": "user", "content": [{"type": "text", "text": text}]}, isMeta=True)

    def tool(self, name: str, args: dict, result: str = "ok") -> Session:
        tid = f"toolu_{self.sid}_{self.n}"
        self._line("assistant", {"id": f"msg_{self.n}", "type": "message", "role": "assistant", "model": "claude-x",
                                 "content": [{"type": "tool_use", "id": tid, "name": name, "input": args}],
                                 "usage": {"input_tokens": 10, "output_tokens": 5}})
        return self._line("user", {"role": "user", "content": [{"tool_use_id": tid, "type": "tool_result",
                                                                "content": result}]}, toolUseResult={"stdout": result})

    def say(self, text: str) -> Session:
        return self._line("assistant", {"id": f"msg_{self.n}", "type": "message", "role": "assistant",
                                        "model": "claude-x", "content": [{"type": "text", "text": text}],
                                        "usage": {"input_tokens": 10, "output_tokens": 5}})

    def sidechain(self, text: str) -> Session:
        self._line("user", {"role": "user", "content": text})
        self.lines[-1]["isSidechain"] = True
        return self

    def write(self, projects: Path, project: str) -> Path:
        path = projects / project / f"{self.sid}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"type": "summary", "summary": "Cleaning CSVs", "leafUuid": "x"}) + "\n")
            for line in self.lines:
                f.write(json.dumps(line) + "\n")
        return path


# the tasks the fixture must yield (prompt -> result), in drop mode
EXPECTED = {
    "How should the order dates in my sales export be written?": "accepted",
    "Thanks. And what about the amount column with dollar signs?": "accepted",
    "Clean up the customer emails column in the CRM export please": "corrected",
    "tidy the shipping report headers and dates": "accepted",
    "Should I keep the original column order when cleaning the stock list?": "accepted",
    "Which format should the invoice totals use after cleaning?": "accepted",
}
# the extra tasks --redact keeps (their secrets replaced)
REDACTED_EXTRA = {
    "Please normalise the booleans in the subscribers export, my key is [REDACTED] btw": "accepted",
    "Which header style should the inventory columns follow?": "accepted",
    "Format the phone numbers column in the contacts export": "corrected",
}


def write_fixture(root: Path, skill: Path) -> Path:
    """Six Claude Code sessions in two projects plus a plain trace file; returns the projects folder."""
    projects = root / "claude" / "projects"
    t = START
    s1 = Session("11111111-aaaa-4aaa-8aaa-000000000001", t)
    s1.ask("How should the order dates in my sales export be written?").tool("Skill", {"skill": "csv-clean"},
                                                                           "Launching skill: csv-clean")
    s1.say("Write every date as ISO YYYY-MM-DD, for example 2024-03-15.")
    s1.ask("Thanks. And what about the amount column with dollar signs?")
    s1.say("Drop the currency symbols and thousands separators, and keep two decimals.")
    s1.write(projects, "-home-u-shop")

    s2 = Session("22222222-bbbb-4bbb-8bbb-000000000002", t + timedelta(hours=1))
    s2.ask("Clean up the customer emails column in the CRM export please")
    s2.tool("Read", {"file_path": str(skill / "SKILL.md")}, "# Cleaning a messy CSV")
    s2.say("I lowercased the emails column and kept every row as it was.")
    s2.ask("No, you must also remove the duplicate customer rows.").say("Removed them.")
    s2.write(projects, "-home-u-shop")

    s3 = Session("33333333-cccc-4ccc-8ccc-000000000003", t + timedelta(hours=2))
    s3.ask("Write a haiku about spreadsheets and morning coffee").tool("Bash", {"command": "env"},
                                                                       f"ANTHROPIC_API_KEY={SECRETS[3]}").say("Rows of numbers wake / steam curls over "
                                                                     "column B / the sum finally fits.")
    s3.write(projects, "-home-u-shop")

    s4 = Session("44444444-dddd-4ddd-8ddd-000000000004", t + timedelta(hours=3), cwd="/home/u/infra")
    s4.ask(f"Please normalise the booleans in the subscribers export, my key is {SECRETS[0]} btw")
    s4.tool("Skill", {"skill": "csv-clean"}).say("Write yes/no flags as lowercase true and false values.")
    s4.ask("Which header style should the inventory columns follow?")
    s4.tool("Bash", {"command": f"export GH_TOKEN={SECRETS[1]} && ls"}, "inventory.csv")
    s4.say("Use lowercase snake_case headers such as order_date and unit_price.")
    s4.write(projects, "-home-u-infra")

    s5 = Session("55555555-eeee-4eee-8eee-000000000005", t + timedelta(hours=4), cwd="/home/u/infra")
    s5.ask("<command-message>csv-clean is running…</command-message>\n<command-name>/csv-clean</command-name>\n"
           "<command-args>tidy the shipping report headers and dates</command-args>")
    s5.say("I trimmed whitespace, wrote the headers in snake_case and converted the dates to ISO.")
    s5.ask("ok do it").say("Done, the file is written.")
    s5.ask("Now clean the refunds export in the same way as before").say("Let me run the cleaner on it.")
    s5.tool("Bash", {"command": "python clean.py"})       # narration, then tool calls and no answer: tool noise
    s5.ask("how should the ORDER dates in my   sales export be written").say("As ISO dates, YYYY-MM-DD, always.")
    s5.ask("Explain the dedupe rule for repeated invoice rows").ask("[Request interrupted by user]")
    s5.sidechain("Subagent: search the repository for every CSV file and list them")
    s5.write(projects, "-home-u-infra")

    s6 = Session("66666666-ffff-4fff-8fff-000000000006", t + timedelta(hours=5))
    s6.ask("Should I keep the original column order when cleaning the stock list?")
    s6.meta("Base directory for this skill: /home/u/.claude/skills/csv-clean\n\n# Cleaning a messy CSV")
    s6.say("Yes, keep every column in its original order and never reorder the rows.")
    s6.write(projects, "-home-u-shop")

    plain = root / "claude" / "projects" / "other-agent" / "traces.jsonl"
    plain.parent.mkdir(parents=True)
    at = (t + timedelta(hours=6)).isoformat()
    lines = [
        {"input": "Which format should the invoice totals use after cleaning?", "output": "Totals are plain "
         "numbers with two decimals, like 1234.50, without a currency sign.", "outcome": "success",
         "tool_calls": [{"name": "Skill", "input": {"skill": "csv-clean"}}], "feedback": "", "session": "plain-1",
         "timestamp": at},
        {"input": "What happens to blank rows in the export file?", "output": "They are dropped at the end.",
         "outcome": "pending", "tool_calls": [], "skills": ["csv-clean"], "session": "plain-2", "timestamp": at},
        {"input": "Summarise the quarterly sales memo for the team", "output": "Sales rose four percent in the "
         "quarter thanks to the new region.", "outcome": "success", "tool_calls": [], "session": "plain-3",
         "timestamp": at},
        {"input": "Format the phone numbers column in the contacts export", "output": "I kept them as plain digits.",
         "outcome": "corrected", "feedback": f"They need the +44 country prefix too, password={SECRETS[2]}",
         "tool_calls": [], "skills": ["csv-clean"], "session": "plain-4", "timestamp": at},
    ]
    plain.write_text("".join(json.dumps(line) + "\n" for line in lines) + "not json at all\n")
    return projects


TOPICS = (
    ("How should I write the {thing} dates in the {where} export?",
     "Convert every date to ISO YYYY-MM-DD, like 2024-03-15."),
    ("What should the amount column in the {where} export look like after cleaning the {thing} rows?",
     "Drop currency symbols and thousands separators and write two decimals, like 1234.50."),
    ("How should the {thing} headers of the {where} file be named?",
     "Rewrite each header in lowercase snake_case, like order_date."),
)
THINGS = ("order", "invoice", "refund", "shipping", "signup", "renewal", "payment", "delivery", "return", "booking")
PLACES = ("shop", "crm", "billing", "warehouse", "newsletter", "partner", "ledger", "support")


def grow(projects: Path, first: int, count: int, *, start: datetime = START) -> None:
    """`count` more one-request sessions that used the skill (numbered from `first`), each an hour apart;
    dates and amounts questions the demo's fake mutator learns to answer, and headers ones it already can."""
    for n in range(first, first + count):
        prompt, answer = TOPICS[n % 5 % 3]
        thing, where = THINGS[n % len(THINGS)], PLACES[(n // len(THINGS) + n) % len(PLACES)]
        session = Session(f"{n:08d}-0000-4000-8000-{n:012d}", start + timedelta(hours=n))
        session.ask(prompt.format(thing=thing, where=where)).tool("Skill", {"skill": "csv-clean"}).say(answer)
        session.write(projects, f"-home-u-p{n % 3}")
