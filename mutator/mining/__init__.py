"""From real use to suites: mine agent transcripts (Claude Code session JSONL, or our plain trace JSONL)
into judge-graded train/val/test suites, and the opt-in watch that re-mines, runs the loop and proposes.

May import: `eval/` (suite loading, the judge's rubric and backends), `mutator/store/` (the triggers
table), `mutator/config`, `mutator/after/importer` (the judge-suite writer) and `mutator/after/spend` with
`mutator/budget` (the daily budget a tick's judge pass counts against). Never stores a raw
session id, a trace's text outside the written suites, or a value its secret scan flagged; never deploys.
"""
