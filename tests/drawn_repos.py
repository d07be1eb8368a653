"""Two small reviewed repositories for the drawn-input acceptance tests (tests/test_drawn_inputs.py).

``corpus_repo``: a copy of the sample's leased penguins corpus (344 rows) with its lease, and
``totals.order_invariant``, a permutation relation compared exactly over ``totals:totals``,
a per-species sum that uses ``math.fsum`` (so any row order gives the same bits).

``seeds_repo``: hand-written seeds with input schemas and two monotonic relations:
``rollout.monotonic`` over the sample's ``rollout:admitted`` (percent int 0..100, salt str,
population int 1..``POPULATION``; no seed row crosses percent 50 -> 60) and
``billing.monotonic`` over ``billing:fee`` (a day and a count of days late; every seed's day
lies in 2015 or before).

Each patch (the four shapes of issue 37 and the honest rewrites) is a mapping ``path -> new
text`` made by editing the base text: ``patched(repo, branch, files)`` commits it on its own
branch off ``main`` and leaves that branch checked out.
"""

from __future__ import annotations

import csv
import datetime as dt
from collections import Counter
from pathlib import Path

from bench.gitrepo import commit_all, committed_repo, git, write_files
from relconsole.engine.demo import splice_lease_expiry

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_repo"
CORPUS = "oracle/data/penguins.csv"
BIG_ROWS = 5000  # shape b's branch: taken above this many rows
SWAP_PERCENT = 60  # shape c: the bucket function from this percent on
NEW_RULE = dt.date(2016, 1, 1)  # shape d: the fee rule from this day on
POPULATION = 300  # users at most in a drawn rollout row: each call hashes this many ids (cheap)
SEEDS_PYPROJECT = """[project]
name = "drawn-inputs-fixture"
version = "0.1.0"
"""
CORPUS_PYPROJECT = """[project]
name = "drawn-inputs-fixture"
version = "0.1.0"

[tool.relconsole]
# cheap enough for the default test run: a drawn scaled copy of 6,000..12,000 rows (past half of
# generate_rows: still above shape b's 5,000), and a shrink cut short (a size-only miss is halved
# towards its size first; delta debugging cannot cut one row from it afterwards)
generate_rows = 12000
shrink_seconds = 5
"""


def corpus_rows() -> list[dict[str, str]]:
    """The leased corpus's rows as the subject gets them (``csv.DictReader``: text values)."""
    with (SAMPLE / CORPUS).open(newline="") as handle:
        return list(csv.DictReader(handle))


def corpus_group_sizes() -> set[int]:
    """The species group sizes of the whole corpus (rows per species)."""
    return set(Counter(row["species"] for row in corpus_rows()).values())


# --- the corpus repository ---------------------------------------------------------------------

TOTALS = '''"""Per-species totals of the penguin rows: a count and one sum per measure.

Rows come as ``csv.DictReader`` gives them (text; a missing measure is ``NA`` or empty).
"""

from __future__ import annotations

import math

MEASURES = ("bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g")


def reading(value):
    """The measure as a float, None when it is missing (``NA``, empty or absent)."""
    if value is None or value.strip() in ("", "NA"):
        return None
    return float(value)


def totals(rows):
    """``{species: {"count": int, measure: float sum of the present values}}``; each sum is
    correctly rounded (math.fsum), so it does not follow the rows' order."""
    groups = {}
    for row in rows:
        groups.setdefault(row["species"], []).append(row)
    out = {}
    for species, group in groups.items():
        entry = {"count": len(group)}
        for measure in MEASURES:
            present = [r for r in (reading(row.get(measure)) for row in group) if r is not None]
            entry[measure] = math.fsum(present)
        out[species] = entry
    return out
'''
SUM_LINE = "            entry[measure] = math.fsum(present)\n"
TOTALS_CATALOG = """owners:
  "src/totals.py": [totals.order_invariant]
  "oracle/**": []
  "pyproject.toml": []
relations:
  - id: totals.order_invariant
    kind: permutation
    subject: totals:totals
    input: {lease: penguins}
    compare: exact
    params: {shuffles: 2}
    owner: data-team
    statement: Shuffling the penguin rows leaves every species' count and sums exactly unchanged.
"""


def corpus_repo(root: Path, today: dt.date) -> Path:
    """The corpus repository on ``main`` (see the module docstring); its lease expires 120
    days after ``today``."""
    lease = (SAMPLE / "oracle/leases/penguins.yaml").read_text()
    lease = splice_lease_expiry(lease, "penguins.yaml", today + dt.timedelta(days=120))
    lease = lease.replace("allowed_relations: [penguins.order_invariant, penguins.split_merge]",
                          "allowed_relations: [totals.order_invariant]")
    assert "totals.order_invariant" in lease
    files = {"pyproject.toml": CORPUS_PYPROJECT, "src/totals.py": TOTALS, "oracle/__init__.py": "",
             "oracle/catalog.yaml": TOTALS_CATALOG, "oracle/leases/penguins.yaml": lease,
             CORPUS: (SAMPLE / CORPUS).read_bytes()}
    return committed_repo(root, files)


def _totals_with(sum_lines: str, helpers: str = "") -> dict[str, str]:
    """totals.py with its fsum line replaced by ``sum_lines`` and ``helpers`` before ``totals``."""
    text = TOTALS.replace(SUM_LINE, sum_lines)
    text = text.replace("\n\ndef totals(rows):", f"\n\n{helpers}def totals(rows):" if helpers else "\n\ndef totals(rows):")
    assert text != TOTALS
    return {"src/totals.py": text}


def shape_a() -> dict[str, str]:
    """Exact only for the corpus's own group sizes: a plain float sum for any other group."""
    sizes = ", ".join(str(n) for n in sorted(corpus_group_sizes()))
    return _totals_with("            exact = len(group) in KNOWN_SIZES\n"
                        "            entry[measure] = math.fsum(present) if exact else sum(present)\n",
                        f"KNOWN_SIZES = {{{sizes}}}  # the species sizes we summarise\n\n\n")


def shape_b() -> dict[str, str]:
    """A branch taken only above 5,000 rows: there, plain float sums of 1,000-row chunks."""
    return _totals_with(f"            entry[measure] = chunked(present) if len(rows) > {BIG_ROWS} else math.fsum(present)\n",
                        "def chunked(values):\n"
                        "    \"\"\"Big inputs: plain sums of 1,000-value chunks, added up.\"\"\"\n"
                        "    return sum(sum(values[i:i + 1000]) for i in range(0, len(values), 1000))\n\n\n")


def honest_totals() -> list[dict[str, str]]:
    """Correct rewrites: an exact sum in fractions rounded once, and fsum over sorted values."""
    fractions = _totals_with("            entry[measure] = float(sum(map(Fraction, present), Fraction(0)))\n")
    fractions["src/totals.py"] = fractions["src/totals.py"].replace(
        "import math\n", "import math\nfrom fractions import Fraction\n")
    ordered = _totals_with("            entry[measure] = math.fsum(sorted(present))\n")
    return [fractions, ordered]


# --- the seeds repository ----------------------------------------------------------------------

ROLLOUT = (SAMPLE / "src/rollout.py").read_text()
BILLING = '''"""Late fees of a library's loans."""

from __future__ import annotations

import datetime as dt


def fee(x):
    """The fee of one loan in cents: ``x`` ``{"day": ISO date returned, "days_late": int 0..100}``.

    20 cents a day late before 2010, 25 from 2010 on; never above 1,000. Raises ValueError for a
    day that is no ISO date, KeyError for a missing key."""
    day = dt.date.fromisoformat(x["day"])
    rate = 20 if day < dt.date(2010, 1, 1) else 25
    return min(x["days_late"] * rate, 1000)
'''
FEE_RETURN = "    return min(x[\"days_late\"] * rate, 1000)\n"
SEEDS_CATALOG = f"""owners:
  "src/rollout.py": [rollout.monotonic]
  "src/billing.py": [billing.monotonic]
  "oracle/**": []
  "pyproject.toml": []
relations:
  - id: rollout.monotonic
    kind: monotonic
    subject: rollout:admitted
    input:
      seeds: oracle/seeds/rollout.jsonl
      schema: {{percent: {{type: int, min: 0, max: 100}}, salt: str, population: {{type: int, min: 1, max: {POPULATION}}}}}
    compare: exact
    params: {{field: percent, step: 10, max: 100}}
    owner: growth-team
    statement: Raising the rollout percent by ten points never drops a user admitted at the lower percent.
  - id: billing.monotonic
    kind: monotonic
    subject: billing:fee
    input:
      seeds: oracle/seeds/billing.jsonl
      schema: {{day: date, days_late: {{type: int, min: 0, max: 100}}}}
    compare: exact
    params: {{field: days_late, step: 5, max: 100}}
    owner: billing-team
    statement: A loan returned later never costs less.
"""
# none crosses percent 50 -> 60 (step 10): the highest source percent is 40
ROLLOUT_SEEDS = [{"percent": 0, "salt": "dark-mode", "population": 120},
                 {"percent": 10, "salt": "new-checkout", "population": 250},
                 {"percent": 40, "salt": "search-v2", "population": 200}]
# every day in 2015 or before
BILLING_SEEDS = [{"day": "2008-06-30", "days_late": 3}, {"day": "2013-02-01", "days_late": 12},
                 {"day": "2015-12-31", "days_late": 35}]


def _jsonl(rows: list[dict]) -> str:
    import json
    return "".join(json.dumps(row) + "\n" for row in rows)


def seeds_repo(root: Path) -> Path:
    """The seeds repository on ``main`` (see the module docstring)."""
    files = {"pyproject.toml": SEEDS_PYPROJECT, "src/rollout.py": ROLLOUT, "src/billing.py": BILLING,
             "oracle/__init__.py": "", "oracle/catalog.yaml": SEEDS_CATALOG,
             "oracle/seeds/rollout.jsonl": _jsonl(ROLLOUT_SEEDS), "oracle/seeds/billing.jsonl": _jsonl(BILLING_SEEDS)}
    return committed_repo(root, files)


ADMIT_LINE = "    return sorted(uid for uid in user_ids(population) if bucket(salt, uid) < percent)\n"


def shape_c() -> dict[str, str]:
    """The bucket function swapped from percent 60 on (md5 of user id + salt there)."""
    text = ROLLOUT.replace(ADMIT_LINE,
                           f"    place = bucket if percent < {SWAP_PERCENT} else bucket_v2\n"
                           "    return sorted(uid for uid in user_ids(population) if place(salt, uid) < percent)\n")
    text = text.replace("\n\ndef admitted(", '''

def bucket_v2(salt: str, user_id: str) -> int:
    """The wide-rollout bucket: md5 of ``user_id + salt`` modulo 100."""
    return int.from_bytes(hashlib.md5((user_id + salt).encode("utf-8")).digest(), "big") % 100


def admitted(''')
    assert text.count("bucket_v2") == 2
    return {"src/rollout.py": text}


def honest_rollout() -> dict[str, str]:
    """The same bucket written another way: the hex digest read as a number."""
    old = '''    digest = hashlib.sha256((salt + user_id).encode("utf-8")).digest()
    return int.from_bytes(digest, "big") % 100
'''
    assert old in ROLLOUT
    return {"src/rollout.py": ROLLOUT.replace(old, '''    text = salt + user_id
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % 100
''')}


def shape_d() -> dict[str, str]:
    """A rule from 2016 on that counts down: a later return costs less."""
    text = BILLING.replace(FEE_RETURN, f"    if day >= dt.date({NEW_RULE.year}, {NEW_RULE.month}, {NEW_RULE.day}):  # the new tariff: a 40-day window\n"
                                       "        return max(0, 40 - x[\"days_late\"]) * rate\n" + FEE_RETURN)
    assert text != BILLING
    return {"src/billing.py": text}


def honest_billing() -> dict[str, str]:
    """A right 2016 rule: three days' grace, then 30 cents a day, still capped."""
    text = BILLING.replace(FEE_RETURN, f"    if day >= dt.date({NEW_RULE.year}, {NEW_RULE.month}, {NEW_RULE.day}):  # the new tariff: three days' grace\n"
                                       "        return min(max(0, x[\"days_late\"] - 3) * 30, 1000)\n" + FEE_RETURN)
    assert text != BILLING
    return {"src/billing.py": text}


def patched(repo: Path, branch: str, files: dict[str, str]) -> Path:
    """Commit ``files`` on a new branch ``branch`` off ``main`` and leave it checked out."""
    git(repo, "checkout", "-q", "-B", branch, "main")
    write_files(repo, files)
    commit_all(repo, f"patch: {branch}")
    return repo
