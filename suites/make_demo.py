"""Generate the three demo suites (clean-train, clean-val, clean-test): fixtures, answer keys, tasks.

Run from the repo root: `python suites/make_demo.py`. Deterministic (one seeded random.Random), so
re-running it reproduces the committed files byte for byte. Answer keys are apply_rules(input, every op
except titlecase) and stay inside each suite dir; the grader is suites/csv_grader.py, copied verbatim.
"""

from __future__ import annotations

import json
import random
import shutil
import sys
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fakes.csv_rules import (  # noqa: E402
    apply_rules,
    is_amount_column,
    is_date_column,
    is_email_column,
    is_flag_column,
    snake_case,
    write_csv,
)

SUITES_DIR = ROOT / "suites"
GRADER = SUITES_DIR / "csv_grader.py"
ANSWER_OPS = ["trim", "headers", "dates", "amounts", "booleans", "emails", "dedupe"]
SPLITS = (("clean-train", "train", 12), ("clean-val", "val", 8), ("clean-test", "test", 8))
SEED = 20240315

TEXT = {
    "name": [
        "Alice Smith",
        "bob jones",
        "María de la Cruz",
        "CHEN WEI",
        "Liam O'Brien",
        "priya patel",
        "Tom McAllister",
        "Zoë Dubois",
        "sam lee",
        "Hannah van der Berg",
        "KWAME MENSAH",
        "eva novak",
        "Jean-Luc Picard",
        "ana lópez",
        "Ravi Shankar",
        "mei LIN",
    ],
    "product": [
        "USB-C hub",
        "iPad case",
        "HDMI cable 2m",
        "wireless mouse",
        "Desk Lamp",
        "standing desk XL",
        "ergonomic chair",
        "SSD 1TB",
        "webcam HD",
        "LED strip",
        "MacBook sleeve",
        "notebook A5",
    ],
    "city": [
        "new york",
        "São Paulo",
        "Lyon",
        "KYOTO",
        "los angeles",
        "Berlin",
        "cape town",
        "Porto",
        "reykjavík",
        "Oslo",
        "NAIROBI",
        "buenos aires",
    ],
    "company": [
        "Acme Corp",
        "globex",
        "Initech LLC",
        "umbrella plc",
        "Stark Industries",
        "wayne enterprises",
        "Hooli",
        "pied piper",
        "Vandelay Imports",
        "soylent GmbH",
    ],
    "carrier": ["UPS", "DHL express", "FedEx", "royal mail", "La Poste", "USPS priority"],
    "category": ["electronics", "Office", "furniture", "CABLES", "accessories", "Lighting"],
    "status": ["open", "Pending", "closed", "ON HOLD", "in progress", "resolved"],
    "plan": ["basic", "Pro", "TEAM", "enterprise", "starter plus"],
    "method": ["card", "PayPal", "bank transfer", "SEPA", "apple pay", "cash"],
    "subject": [
        "login fails on iOS",
        "Refund request",
        "cannot export PDF",
        "API rate limit",
        "wrong VAT on invoice",
        "password reset",
        "SSO setup with Okta",
        "dark mode bug",
    ],
    "warehouse": ["north", "EU-West", "main depot", "Dock 7", "overflow B"],
    "department": ["sales", "R&D", "Finance", "HR", "customer success", "IT ops"],
}

# domain -> columns as (canonical header, kind, detail); the first column is the row id.
DOMAINS = {
    "orders": [
        ("order_id", "id", "ORD"),
        ("customer_name", "text", "name"),
        ("order_date", "date", ""),
        ("total", "amount", ""),
        ("email", "email", ""),
        ("is_paid", "flag", ""),
        ("city", "text", "city"),
    ],
    "customers": [
        ("customer_id", "id", "C"),
        ("full_name", "text", "name"),
        ("email", "email", ""),
        ("signup_date", "date", ""),
        ("is_active", "flag", ""),
        ("city", "text", "city"),
    ],
    "invoices": [
        ("invoice_no", "id", "INV"),
        ("company", "text", "company"),
        ("issue_date", "date", ""),
        ("due_date", "date", ""),
        ("amount_due", "amount", ""),
        ("paid", "flag", ""),
    ],
    "products": [
        ("sku", "id", "SKU"),
        ("product_name", "text", "product"),
        ("unit_price", "amount", ""),
        ("is_available", "flag", ""),
        ("category", "text", "category"),
    ],
    "shipments": [
        ("tracking_id", "id", "TRK"),
        ("carrier", "text", "carrier"),
        ("ship_date", "date", ""),
        ("shipped", "flag", ""),
        ("destination", "text", "city"),
        ("shipping_cost", "amount", ""),
    ],
    "employees": [
        ("employee_id", "id", "E"),
        ("name", "text", "name"),
        ("work_email", "email", ""),
        ("hire_date", "date", ""),
        ("department", "text", "department"),
        ("is_manager", "flag", ""),
    ],
    "payments": [
        ("payment_id", "id", "PAY"),
        ("payer_email", "email", ""),
        ("payment_date", "date", ""),
        ("amount", "amount", ""),
        ("method", "text", "method"),
        ("refunded", "flag", ""),
    ],
    "subscriptions": [
        ("sub_id", "id", "SUB"),
        ("plan", "text", "plan"),
        ("start_date", "date", ""),
        ("monthly_price", "amount", ""),
        ("subscribed", "flag", ""),
        ("contact_email", "email", ""),
    ],
    "tickets": [
        ("ticket_id", "id", "T"),
        ("subject", "text", "subject"),
        ("requester_email", "email", ""),
        ("is_urgent", "flag", ""),
        ("status", "text", "status"),
    ],
    "inventory": [
        ("item_code", "id", "ITM"),
        ("item_name", "text", "product"),
        ("quantity", "text", "qty"),
        ("unit_cost", "amount", ""),
        ("warehouse", "text", "warehouse"),
    ],
}

KIND_TESTS = {
    "date": is_date_column,
    "amount": is_amount_column,
    "flag": is_flag_column,
    "email": is_email_column,
    "id": lambda h: (
        not any(f(h) for f in (is_date_column, is_amount_column, is_flag_column, is_email_column))
    ),
}
KIND_TESTS["text"] = KIND_TESTS["id"]

PROMPTS = [
    "The file input.csv is a messy {what} export. Normalise it following your CSV-cleaning skill "
    "and write the cleaned table to output.csv.",
    "Clean up input.csv (an export of {what}) using the skill's normalisation rules. Save the result "
    "as output.csv and leave the input unchanged.",
    "Please tidy the {what} spreadsheet in input.csv as the CSV-cleaning skill describes, then write "
    "the normalised CSV to output.csv.",
]


def header_variant(rng: random.Random, canonical: str) -> str:
    words = canonical.split("_")
    options = [
        " ".join(w.title() for w in words),
        words[0] + "".join(w.title() for w in words[1:]),
        "-".join(w.upper() for w in words),
        " " + " ".join(words).capitalize() + "  ",
        " ".join(w.upper() for w in words) + " ",
    ]
    variant = rng.choice(options)
    assert snake_case(variant) == canonical, (variant, canonical)
    return variant


def messy_date(rng: random.Random, day: date) -> str:
    formats = ["%m/%d/%Y", "%d.%m.%Y", "%B %d, %Y", "%b %d %Y", "%Y/%m/%d"]
    if rng.random() < 0.04:
        return day.isoformat()
    return day.strftime(rng.choice(formats))


def messy_amount(rng: random.Random) -> str:
    cents = rng.choice([rng.randint(100, 9_999), rng.randint(10_000, 999_999)])
    value = cents / 100
    if rng.random() < 0.04:
        return f"{value:.2f}"
    symbol = rng.choice(["$", "€", "£", "$ "])
    text = rng.choice(
        [f"{value:,.2f}", f"{value:,.1f}" if cents % 10 == 0 else f"{value:,.2f}", f"{value:,g}"]
    )
    return rng.choice([symbol + text, text + " " + symbol.strip() if symbol.strip() else symbol + text])


def messy_flag(rng: random.Random) -> str:
    truth = rng.random() < 0.5
    if rng.random() < 0.05:
        return "true" if truth else "false"
    return rng.choice(["yes", "Y", "TRUE", "1", "Yes"] if truth else ["no", "N", "FALSE", "0", "No"])


def messy_email(rng: random.Random, person: str) -> str:
    local = ".".join(person.replace("'", "").split()[:2])
    address = f"{local}@{rng.choice(['example.com', 'mail.test', 'corp.example'])}"
    if rng.random() < 0.05:
        return address.lower()
    return rng.choice(
        [address.upper(), address.title(), address[:1].upper() + address[1:], address.swapcase()]
    )


def value_for(rng: random.Random, kind: str, detail: str, index: int, person: str) -> str:
    if kind == "id":
        return f"{detail}-{1000 + index}"
    if kind == "date":
        return messy_date(rng, date(2023, 1, 1) + timedelta(days=rng.randint(0, 700)))
    if kind == "amount":
        return messy_amount(rng)
    if kind == "flag":
        return messy_flag(rng)
    if kind == "email":
        return messy_email(rng, person)
    if detail == "qty":
        return str(rng.randint(0, 250))
    return person if detail == "name" else rng.choice(TEXT[detail])


def pad(rng: random.Random, value: str) -> str:
    roll = rng.random()
    if roll < 0.12:
        return " " + value
    if roll < 0.24:
        return value + "  "
    if roll < 0.3:
        return "  " + value + " "
    return value


def make_table(rng: random.Random, domain: str) -> list[list[str]]:
    columns = DOMAINS[domain]
    optional = columns[1:]
    keep = max(3, len(optional) - rng.choice([0, 0, 0, 1, 2]))
    while True:  # a text column besides the id, and at least two kinds of value problems
        picked = rng.sample(optional, keep)
        kinds = {kind for _, kind, _ in picked}
        if "text" in kinds and len(kinds - {"text"}) >= min(2, len({k for _, k, _ in optional} - {"text"})):
            break
    chosen = [columns[0]] + [c for c in optional if c in picked]
    header = [header_variant(rng, name) for name, _, _ in chosen]
    for name, kind, _ in chosen:  # the fake agent and the grader must both see the declared kind
        assert KIND_TESTS[kind](name), (domain, name, kind)
    start = rng.randint(1, 80)
    body = []
    for i in range(rng.randint(5, 10)):
        person = rng.choice(TEXT["name"])
        body.append([pad(rng, value_for(rng, kind, detail, start + i, person)) for _, kind, detail in chosen])
    for _ in range(rng.choice([1, 1, 2, 3])):  # repeats: same record, only the padding differs
        source = rng.choice(body)
        body.insert(rng.randint(body.index(source) + 1, len(body)), [pad(rng, v.strip()) for v in source])
    for _ in range(rng.choice([0, 1, 1, 2])):
        body.insert(rng.randint(1, len(body)), rng.choice([[""] * len(chosen), []]))
    return [header, *body]


def suite_md(name: str, split: str, count: int) -> str:
    return (
        f"---\nname: {name}\nsplit: {split}\nrunner: script\n---\n\n"
        f"# {name}\n\n"
        f"{count} CSV-cleaning tasks (the {split} split of the demo). Each task hands the agent a messy\n"
        "`input.csv` (untidy headers, padded values, dates in mixed formats, currency amounts, yes/no flags,\n"
        "mixed-case e-mails, repeated and blank rows; each task mixes a different subset) and asks for a\n"
        "normalised `output.csv`.\n\n"
        "`run-eval.py` compares the output with `answers/<id>.csv` and scores, each in [0, 1]: `parses`,\n"
        "`headers`, `rows` (row count), `text`, and `dates` / `amounts` / `flags` / `emails` when the task\n"
        "has such columns. Generated by `suites/make_demo.py`; do not edit by hand.\n"
    )


def write_suite(rng: random.Random, name: str, split: str, count: int, first_number: int) -> None:
    suite = SUITES_DIR / name
    for sub in ("fixtures", "answers"):
        shutil.rmtree(suite / sub, ignore_errors=True)
    (suite / "answers").mkdir(parents=True)
    domains = list(DOMAINS)
    rng.shuffle(domains)
    tasks = []
    for n in range(count):
        domain = domains[n % len(domains)]
        task_id = f"{domain}-{first_number + n:02d}"
        table = make_table(rng, domain)
        fixture = suite / "fixtures" / task_id
        fixture.mkdir(parents=True)
        write_csv(fixture / "input.csv", table)
        write_csv(suite / "answers" / f"{task_id}.csv", apply_rules(table, ANSWER_OPS))
        prompt = rng.choice(PROMPTS).format(what=domain)
        tasks.append({"id": task_id, "prompt": prompt, "inputs": ["input.csv"], "required": ["output.csv"]})
    (suite / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    (suite / "suite.md").write_text(suite_md(name, split, count), encoding="utf-8")
    shutil.copyfile(GRADER, suite / "run-eval.py")


def main() -> None:
    rng = random.Random(SEED)
    number = 1
    for name, split, count in SPLITS:
        write_suite(rng, name, split, count, number)
        number += count
    print("wrote", ", ".join(name for name, _, _ in SPLITS))


if __name__ == "__main__":
    main()
