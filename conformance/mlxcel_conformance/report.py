"""The run's report: one merged record per feature, written as `conformance.json` (for machines)
and `conformance.md` (the human matrix), plus the one summary line printed at the end.

Merging: several tests may contribute to one (family, feature). FAIL wins over ERROR, ERROR over
LENIENT, LENIENT over INCONCLUSIVE, INCONCLUSIVE over PASS, PASS over UNSUPPORTED: a feature is
PASS only when nothing that ran of it found anything or failed to decide, and UNSUPPORTED only
when nothing about it ran. LENIENT and INCONCLUSIVE are shown and counted apart, never as FAIL
(docs/conformance/verdicts.md).

Each failing test also leaves a defect entry (``defects``): the report counts and lists the
distinct defects behind its FAILs, each once with the features it fails.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from mlxcel_conformance import defects as defects_
from mlxcel_conformance.checks.verdict_policy import VerdictClass, read_skip
from mlxcel_conformance.errors import ConformanceFailure, Severity, clip_evidence
from mlxcel_conformance.profiles import FAMILIES

JSON_NAME = "conformance.json"
MARKDOWN_NAME = "conformance.md"
_CELL_LIMIT = 300
TIERS = ("contract", "extension")


class Verdict(str, enum.Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    UNSUPPORTED = "UNSUPPORTED"
    ERROR = "ERROR"  # the suite's own setup failed; says nothing about the server
    LENIENT = "LENIENT"  # accepted a request the public API calls invalid: shown, not a FAIL
    INCONCLUSIVE = "INCONCLUSIVE"  # what the server answered cannot decide it: not a PASS


PRECEDENCE = {Verdict.UNSUPPORTED: 0, Verdict.PASS: 1, Verdict.INCONCLUSIVE: 2,
               Verdict.LENIENT: 3, Verdict.ERROR: 4, Verdict.FAIL: 5}
_SEVERITY_RANK = {s.value: rank for rank, s in enumerate(reversed(list(Severity)))}


@dataclass
class Record:
    family: str
    feature: str
    verdict: Verdict
    checks: list[str] = field(default_factory=list)
    severity: str | None = None
    message: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0
    # "contract" (a public API's requirement) or "extension" (an mlxcel feature the target
    # claims): the report counts the two apart.
    tier: str = "contract"
    # one entry per failing test ({"key", "check", "message", "source"}; see defects.py)
    defects: list[dict[str, str]] = field(default_factory=list)

    @classmethod
    def from_failure(
        cls,
        family: str,
        feature: str,
        failure: ConformanceFailure,
        *,
        checks: list[str] | None = None,
        duration_s: float = 0.0,
    ) -> Record:
        names = list(checks or [])
        if failure.check not in names:
            names.append(failure.check)
        return cls(
            family=family,
            feature=feature,
            verdict=Verdict.FAIL,
            checks=names,
            severity=failure.severity.value,
            message=str(failure),
            evidence=failure.evidence,
            duration_s=duration_s,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "feature": self.feature,
            "verdict": self.verdict.value,
            "checks": list(self.checks),
            "severity": self.severity,
            "message": self.message,
            "evidence": clip_evidence(self.evidence),
            "duration_s": round(self.duration_s, 3),
            "tier": self.tier,
            "defects": list(self.defects),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Record:
        record = cls(**{**data, "verdict": Verdict(data["verdict"])})
        if record.verdict is Verdict.UNSUPPORTED:
            # a report written when LENIENT and INCONCLUSIVE were UNSUPPORTED rows named so
            said = read_skip(record.message)
            if said is not None and said.verdict is not VerdictClass.UNSUPPORTED:
                record.verdict = Verdict(said.verdict.value)
                record.checks = [said.check] if said.check else record.checks
                record.message = said.message
        return record


def merge_records(first: Record, second: Record) -> Record:
    """Combine two records of the same feature."""
    winner = max(first, second, key=lambda record: PRECEDENCE[record.verdict])
    verdict = winner.verdict
    same = [record for record in (first, second) if record.verdict is verdict]
    messages = list(dict.fromkeys(r.message for r in same if r.message))
    found = {d["key"]: d for r in same if r.verdict is Verdict.FAIL for d in r.defects}
    severities = [r.severity for r in same if r.severity is not None]
    return replace(
        first,
        verdict=verdict,
        checks=list(dict.fromkeys(first.checks + second.checks)),
        severity=max(severities, key=lambda s: _SEVERITY_RANK.get(s, -1)) if severities else None,
        message="; ".join(messages),
        evidence=next((r.evidence for r in same if r.evidence), {}),
        duration_s=first.duration_s + second.duration_s,
        defects=list(found.values()),
    )


def plural(count: int, noun: str) -> str:
    """``1 distinct defect``, ``2 distinct defects``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _family_key(family: str) -> tuple[int, str]:
    return (FAMILIES.index(family) if family in FAMILIES else len(FAMILIES), family)


def _cell(text: str, limit: int = _CELL_LIMIT) -> str:
    if len(text) > limit:
        text = text[:limit] + "…"
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", "").replace("\n", "<br>")


Link = Callable[[str, str], str]


def _where(family: str, feature: str, link: Link | None) -> str:
    return f"[{family} {feature}]({link(family, feature)})" if link else f"{family} {feature}"


def _fail_cells(record: Record, role: defects_.RowRole | None,
                link: Link | None) -> tuple[str, str]:
    """The verdict and message cells of a FAIL row: the defects it shows, with where else they
    were seen; or, for a repeat, where its defects are counted (one FAIL per defect)."""
    verdict = "FAIL" + (f" ({record.severity})" if record.severity else "")
    message = _cell(record.message)
    if role is None:
        return verdict, message
    if role.repeat:
        numbers = ", ".join(f"#{number}" for number, _ in role.counted_at)
        counted = ", ".join(dict.fromkeys(_where(*where, link) for _, where in role.counted_at))
        return (f"repeat of {numbers}",
                _cell(f"the same defect, counted once at {counted}: ", limit=100_000) + message)
    seen = role.also_seen(record.family, record.feature)
    if seen:
        message += "<br>" + _cell("also seen in: " + ", ".join(
            _where(family, feature, link) for family, feature in seen), limit=100_000)
    return verdict, message


def _tier_section(tier: str, records: list[Record],
                  roles: dict[tuple[str, str], defects_.RowRole], link: Link | None) -> list[str]:
    if not records:
        return []
    title = "Contract checks" if tier == "contract" else "Extension checks (mlxcel features)"
    lines = ["", f"## {title}"]
    current = None
    for record in records:
        if record.family != current:
            current = record.family
            lines += ["", f"### {tier}: {current}", "",
                      "| feature | verdict | checks | message | source |", "|---|---|---|---|---|"]
        verdict, message = record.verdict.value, _cell(record.message)
        if record.verdict is Verdict.FAIL:
            verdict, message = _fail_cells(record, roles.get((record.family, record.feature)),
                                           link)
        checks = ", ".join(f"`{name}`" for name in record.checks)
        source = str(record.evidence.get("source", "")) if record.verdict is Verdict.FAIL else ""
        lines.append(f"| {_cell(record.feature)} | {verdict} | {checks} | "
                     f"{message} | {_cell(source)} |")
    return lines


def defects_section(found: list[defects_.Defect], link: Link | None = None) -> list[str]:
    """The distinct defects behind the FAILs, each once, with the features it fails (each
    linked to its evidence where ``link`` gives the address of a (family, feature))."""
    if not found:
        return []
    lines = ["", '<a id="distinct-defects"></a>', "", f"## Distinct defects: {len(found)}", "",
             "Each row is one thing the server does wrong (FAILs grouped by check and cause), "
             "with every feature it fails.", "",
             "| # | defect | checks | features | source |", "|---:|---|---|---|---|"]
    for number, defect in enumerate(found, 1):
        checks = ", ".join(f"`{name}`" for name in defect.checks)
        features = ", ".join(f"[{feature}]({link(family, feature)})" if link else feature
                             for family, feature in defect.features)
        lines.append(f"| {number} | {_cell(defect.message)} | {checks} | "
                     f"{_cell(features, limit=100_000)} | {_cell(defect.source)} |")
    return lines


@dataclass
class Report:
    target: str
    profile: str
    started: datetime = field(default_factory=_now)
    finished: datetime | None = None
    _by_feature: dict[tuple[str, str], Record] = field(default_factory=dict, repr=False)

    def add(self, record: Record) -> Record:
        """Add a test's record, merged with earlier ones for the same feature."""
        key = (record.family, record.feature)
        if record.verdict is Verdict.FAIL and not record.defects:
            record.defects = defects_.entries(record.checks[-1] if record.checks else "?",
                                              record.message, record.evidence, record.family,
                                              record.feature)
        earlier = self._by_feature.get(key)
        merged = record if earlier is None else merge_records(earlier, record)
        self._by_feature[key] = merged
        return merged

    def finish(self, when: datetime | None = None) -> None:
        self.finished = when or _now()

    @property
    def records(self) -> list[Record]:
        """Merged records, families in the canonical order, features in arrival order."""
        return sorted(self._by_feature.values(), key=lambda r: _family_key(r.family))

    @property
    def duration_s(self) -> float:
        return ((self.finished or _now()) - self.started).total_seconds()

    def counts(self) -> dict[Verdict, int]:
        totals = dict.fromkeys(Verdict, 0)
        for record in self._by_feature.values():
            totals[record.verdict] += 1
        return totals

    def family_counts(self) -> dict[str, dict[str, int]]:
        table: dict[str, dict[str, int]] = {}
        for record in self.records:
            row = table.setdefault(record.family, {v.value: 0 for v in Verdict})
            row[record.verdict.value] += 1
        return table

    def tier_counts(self) -> dict[str, dict[str, int]]:
        """Verdicts per tier: {"contract": {"PASS": n, ...}, "extension": {...}}."""
        table = {tier: {v.value: 0 for v in Verdict} for tier in TIERS}
        for record in self._by_feature.values():
            table.setdefault(record.tier, {v.value: 0 for v in Verdict})
            table[record.tier][record.verdict.value] += 1
        return table

    def distinct_defects(self) -> list[defects_.Defect]:
        return defects_.distinct(record.to_dict() for record in self.records)

    def fail_rows(self) -> dict[str, int]:
        """FAIL rows per tier: one per distinct defect, in the tier of the feature that first
        showed it (the features that saw it again are repeats, not FAIL rows)."""
        tiers = {(r.family, r.feature): r.tier for r in self.records}
        rows = dict.fromkeys(TIERS, 0)
        for defect in self.distinct_defects():
            tier = tiers.get(defect.features[0], "contract")
            rows[tier] = rows.get(tier, 0) + 1
        return rows

    def summary_line(self) -> str:
        """One line: each verdict's count, FAIL counted once per defect (its rows), with the
        features the defects failed and the rows per tier."""
        counts = self.counts()
        rows = self.fail_rows()
        shown = {**counts, Verdict.FAIL: sum(rows.values())}
        totals = ", ".join(f"{n} {verdict.value}" for verdict, n in shown.items())
        split = ", ".join(f"{rows[tier]} {tier}" for tier in TIERS)
        features = plural(counts[Verdict.FAIL], "feature")
        return (
            f"mlxcel-conformance: {totals} [FAIL: {split}, one per defect, seen in {features}] "
            f"(profile {self.profile}, target {self.target}, {self.duration_s:.1f} s)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "profile": self.profile,
            "started": self.started.isoformat(),
            "finished": self.finished.isoformat() if self.finished else None,
            "duration_s": round(self.duration_s, 3),
            "summary": {
                "line": self.summary_line(),
                "counts": {v.value: n for v, n in self.counts().items()},
                "tiers": self.tier_counts(),
                "distinct_defects": len(self.distinct_defects()),
                "fail_rows": self.fail_rows(),
            },
            "families": self.family_counts(),
            "records": [record.to_dict() for record in self.records],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        report = cls(
            target=data["target"],
            profile=data["profile"],
            started=datetime.fromisoformat(data["started"]),
            finished=datetime.fromisoformat(data["finished"]) if data.get("finished") else None,
        )
        for record in data.get("records", []):
            report.add(Record.from_dict(record))
        return report

    def to_markdown(self, link: Link | None = None) -> str:
        verdicts = [v.value for v in Verdict]
        lines = [
            "# Conformance report",
            "",
            f"`{self.summary_line()}`",
            "",
            "Contract checks judge what a public API (OpenAI, Anthropic, Open Responses, "
            "llama-server's README, mlx-lm's documented fields) requires and name that source; "
            "extension checks judge mlxcel's own features, and run only where the profile "
            "claims them.",
            "",
            "| tier | " + " | ".join(verdicts) + " |",
            "|---|" + "---:|" * len(verdicts),
        ]
        for tier, row in self.tier_counts().items():
            lines.append(f"| {tier} | " + " | ".join(str(row[v]) for v in verdicts) + " |")
        lines += ["", "| family | " + " | ".join(verdicts) + " |",
                  "|---|" + "---:|" * len(verdicts)]
        for family, row in self.family_counts().items():
            lines.append(f"| {family} | " + " | ".join(str(row[v]) for v in verdicts) + " |")
        found = self.distinct_defects()
        if found:
            lines += ["", f"FAILs come from [{plural(len(found), 'distinct defect')}]"
                      "(#distinct-defects), listed after the matrix. Each defect is one FAIL "
                      "row, at the feature that first showed it, with where else it was seen; "
                      "a feature that only saw defects counted elsewhere is a `repeat of #N`."]
        roles = defects_.row_roles(found)
        for tier in TIERS:
            lines += _tier_section(tier, [r for r in self.records if r.tier == tier], roles,
                                   link)
        lines += defects_section(found, link)
        return "\n".join(lines) + "\n"

    def write(self, directory: str | Path) -> tuple[Path, Path]:
        """Write `conformance.json` and `conformance.md` into `directory` (created if needed)."""
        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        json_path, markdown_path = folder / JSON_NAME, folder / MARKDOWN_NAME
        json_path.write_text(self.to_json(), encoding="utf-8")
        markdown_path.write_text(self.to_markdown(), encoding="utf-8")
        return json_path, markdown_path
