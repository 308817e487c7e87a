"""The corpus benchmark's report: totals per language group and overall, the targets of issue 16 (item 6)
judged on them, and the document written as JSON and as the Markdown tables of docs/corpus.md.
"""

from __future__ import annotations

import os
import platform
import subprocess
from collections import Counter
from dataclasses import asdict
from datetime import datetime, timezone

from corpus_entries import EntryResult, Options

# Targets of issue 16, item 6. Valid shares are judged per group; JavaScript counts with TypeScript
# (one Node toolchain, one recipe).
VALID_TARGETS = {"python": 0.60, "go": 0.50, "typescript": 0.50}
TITLED_TARGET, COVERED_TARGET, SPEEDUP_TARGET = 0.90, 0.70, 5.0
MIN_FEATURES, MIN_MILESTONES = 5, 3


# ---- totals and targets ---------------------------------------------------------------------------------------------
def _share(num: int, den: int) -> float | None:
    return num / den if den else None


def totals(results: list[EntryResult]) -> dict[str, dict]:
    """Sums per language group and overall."""
    groups: dict[str, list[EntryResult]] = {}
    for r in results:
        groups.setdefault(r.group, []).append(r)
    out = {g: _total(rs) for g, rs in sorted(groups.items())}
    out["all"] = _total(results)
    return out


def _total(rs: list[EntryResult]) -> dict:
    milestones = sum(r.milestones for r in rs)
    valid = sum(r.valid for r in rs)
    env_s = sum(r.env_s or 0.0 for r in rs)
    val_s = sum(r.validation_s or 0.0 for r in rs)
    not_valid: Counter = Counter()
    for r in rs:
        not_valid.update(r.not_valid)
    mix: Counter = Counter()
    for r in rs:
        mix.update(r.type_mix)
    return {
        "ranges": len(rs),
        "failed_entries": sum(1 for r in rs if set(r.errors) & {"entry", "clone", "plan"}),
        "milestones": milestones,
        "type_mix": dict(mix),
        "feature_titled": sum(r.feature_titled for r in rs),
        "entries_citing": sum(r.entries_citing for r in rs),
        "entries_covered": sum(r.entries_covered for r in rs),
        "validated_milestones": sum(r.milestones for r in rs if r.validated),
        "valid": valid,
        "fail_to_pass": sum(r.fail_to_pass for r in rs),
        "not_valid": dict(not_valid.most_common()),
        "env_s": round(env_s, 1),
        "validation_s": round(val_s, 1),
        "per_valid_s": round((env_s + val_s) / valid, 1) if valid else None,
    }


def targets(results: list[EntryResult], sums: dict[str, dict]) -> list[dict]:
    """Issue 16's targets, each with what was measured and whether it is met (None: nothing to judge)."""
    out = []
    rich = [r for r in results if r.entries_citing >= MIN_FEATURES]
    short = [f"{r.name} ({r.milestones})" for r in rich if r.milestones < MIN_MILESTONES]
    out.append(
        {
            "target": f"every range with >= {MIN_FEATURES} changelog features (citing entries) gives "
            f">= {MIN_MILESTONES} milestones",
            "measured": f"{len(rich) - len(short)}/{len(rich)} ranges"
            + (f"; short: {', '.join(short)}" if short else ""),
            "met": (not short) if rich else None,
        }
    )
    a = sums["all"]
    for text, num, den, goal in (
        ("milestones titled by features", a["feature_titled"], a["milestones"], TITLED_TARGET),
        ("citing changelog entries covered by a milestone", a["entries_covered"], a["entries_citing"], COVERED_TARGET),
    ):
        share = _share(num, den)
        out.append(
            {
                "target": f">= {goal:.0%} of {text}",
                "measured": _pct(num, den),
                "met": None if share is None else share >= goal,
            }
        )
    for group, goal in VALID_TARGETS.items():
        s = sums.get(group)
        den = s["milestones"] if s else 0
        num = s["valid"] if s else 0
        share = _share(num, den)
        validated = bool(s) and s["validated_milestones"] > 0
        out.append(
            {
                "target": f">= {goal:.0%} of {group} milestones valid",
                "measured": _pct(num, den),
                "met": share >= goal if share is not None and validated else None,
            }
        )
    ratios = [(r.name, r.baseline["speedup"]) for r in results if r.baseline and r.baseline.get("speedup")]
    out.append(
        {
            "target": f">= {SPEEDUP_TARGET:g}x faster per validated milestone than the per-instance way",
            "measured": ", ".join(f"{n} {x:.1f}x" for n, x in ratios) or "not measured",
            "met": all(x >= SPEEDUP_TARGET for _, x in ratios) if ratios else None,
        }
    )
    return out


def _pct(num: int, den: int) -> str:
    return f"{num}/{den} ({num / den:.0%})" if den else f"{num}/0 (-)"


# ---- output ---------------------------------------------------------------------------------------------------------
def machine() -> dict:
    info = {
        "cpus": os.cpu_count(),
        "loadavg": [round(x, 1) for x in os.getloadavg()],
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    try:
        proc = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"], capture_output=True, text=True)
        info["docker_server"] = proc.stdout.strip() or proc.stderr.strip()[:200]
    except OSError:
        info["docker_server"] = "no docker CLI"
    return info


def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def _mix(mix: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(mix.items(), key=lambda kv: -kv[1])) or "-"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(doc: dict) -> str:
    lines = ["# Real-repository corpus", ""]
    if doc.get("note"):
        lines += [f"> **{doc['note']}**", ""]
    lines += [
        f"Measured {doc['measured_at']} with `{doc['command']}`",
        f"(K = {doc['repeats']} runs per side; machine: {doc['machine']['cpus']} CPUs, load average "
        f"{doc['machine']['loadavg']} at the end, Docker {doc['machine'].get('docker_server', '-')}; "
        f"total wall time {doc['wall_s'] / 60:.1f} min).",
        "",
        "Columns: *feature-titled* = milestones titled by a feature (changelog, issue or work PR; "
        "`plan.report.feature_titled`); *entries covered* = changelog entries of the range that cite a PR, an "
        "issue or a commit (housekeeping excluded) and describe some milestone; *valid* = `validate` status "
        "`valid`; *F2P* = FAIL_TO_PASS tests; *not valid* = every other status (`status: reason`, count); "
        "*env s* = wall seconds of `env build` (about 0 when the images were cached); *s / valid* = "
        "(env + validation seconds) / valid milestones. JavaScript ranges count with TypeScript in the totals "
        "and targets (one Node toolchain, one recipe).",
        "",
        "| Repository | Lang | Range planned | Screen | Milestones | Type mix | Feature-titled | Entries covered "
        "| Valid | F2P | Not valid | Env s | Validation s | s / valid | Errors |",
        "|---|---|---|---|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for r in doc["entries"]:
        screen_text = (
            "-"
            if r["screen_passed"] is None
            else ("pass" if r["screen_passed"] else "fail: " + ", ".join(r["screen_failed"]))
        )
        valid = f"{r['valid']}/{r['milestones']}" if r["validated"] else "not run"
        f2p = r["fail_to_pass"] if r["validated"] else "-"
        not_valid = "; ".join(f"{k} ×{v}" for k, v in r["not_valid"].items()) or "-"
        errors = "; ".join(f"{k}: {v}" for k, v in r["errors"].items()) or "-"
        lines.append(
            f"| {r['name']} | {r['language']} | {_cell(r['range'] or r['requested'])} | {_cell(screen_text)} "
            f"| {r['milestones']} | {_mix(r['type_mix'])} | {_pct(r['feature_titled'], r['milestones'])} "
            f"| {_pct(r['entries_covered'], r['entries_citing'])} | {valid} | {f2p} | {_cell(not_valid)} "
            f"| {_s(r['seconds'].get('env build'))} | {_s(r['seconds'].get('validate'))} | {_s(r['per_valid_s'])} "
            f"| {_cell(errors)} |"
        )
    lines += [
        "",
        "## Totals",
        "",
        "| Language | Ranges | Milestones | Type mix | Feature-titled | Entries covered "
        "| Valid | F2P | Not valid | Env s | Validation s | s / valid |",
        "|---|---:|---:|---|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for group, t in doc["totals"].items():
        not_valid = "; ".join(f"{k} ×{v}" for k, v in t["not_valid"].items()) or "-"
        lines.append(
            f"| {'**all**' if group == 'all' else group} | {t['ranges']} | {t['milestones']} | {_mix(t['type_mix'])} "
            f"| {_pct(t['feature_titled'], t['milestones'])} | {_pct(t['entries_covered'], t['entries_citing'])} "
            f"| {_pct(t['valid'], t['milestones'])} | {t['fail_to_pass']} | {_cell(not_valid)} | {_s(t['env_s'])} "
            f"| {_s(t['validation_s'])} | {_s(t['per_valid_s'])} |"
        )
    lines += ["", "## Targets (issue 16, item 6)", "", "| Target | Measured | Met |", "|---|---|---|"]
    for t in doc["targets"]:
        met = "not measured" if t["met"] is None else ("met" if t["met"] else "**not met**")
        lines.append(f"| {t['target']} | {_cell(t['measured'])} | {met} |")
    lines += _baseline_markdown(doc)
    lines += ["", "## Milestones", ""]
    for r in doc["entries"]:
        if not r["rows"]:
            continue
        lines += [f"**{r['name']}** {_cell(r['range'])}", ""]
        lines += [f"> {_cell(note)}" for note in r["notes"]] + ([""] if r["notes"] else [])
        lines += [
            "| Milestone | Type | Title from | Status | F2P | s | Title / why not valid |",
            "|---|---|---|---|---:|---:|---|",
        ]
        for m in r["rows"]:
            status = f"{m['status']}: {m['reason']}" if m["reason"] else m["status"]
            text = m["title"] if m["status"] == "valid" or not m["detail"] else f"{m['title']} — {m['detail']}"
            lines.append(
                f"| {m['id']} | {m['type'] or '-'} | {m['title_source'] or '-'} | {status} "
                f"| {m['fail_to_pass']} | {_s(m['validation_s'])} | {_cell(text[:240])} |"
            )
        lines.append("")
    lines += ["## How to run", "", "```", *doc["how_to_run"], "```", ""]
    return "\n".join(lines)


def _baseline_markdown(doc: dict) -> list[str]:
    runs = [(r["name"], r["baseline"]) for r in doc["entries"] if r.get("baseline")]
    if not runs:
        return []
    lines = [
        "",
        "## Per-instance baseline (the SWE-bench harness's way)",
        "",
        "Per milestone, one image from a Dockerfile (a git bundle of the repository copied in, the base commit "
        "checked out, our recipe's requirements and the project installed, `docker build --network host`, no "
        "layer cache), then K runs at base + test.patch and K at base + ground_truth.patch + test.patch, each in "
        "a fresh `--network none` container. Ours on the same milestones: our images built from scratch (under a "
        "fresh tag; each dependency epoch once) plus `validate`. Seconds are wall seconds.",
        "",
        "| Repository | Milestones | Ours s (valid) | Baseline s (valid) | Ours s / valid | Baseline s / valid "
        "| Speed-up | Same FAIL_TO_PASS |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, b in runs:
        if b.get("error"):
            lines.append(f"| {name} | - | - | - | - | - | - | {_cell(b['error'])} |")
            continue
        speedup = f"{b['speedup']:.1f}x" if b.get("speedup") else "-"
        lines.append(
            f"| {name} | {b['compared']} | {_s(b['ours_s'])} ({b['ours_valid']}) | {_s(b['baseline_s'])} "
            f"({b['baseline_valid']}) | {_s(b['ours_per_valid_s'])} | {_s(b['baseline_per_valid_s'])} "
            f"| {speedup} | {b['same_verdicts']}/{b['compared']} |"
        )
    lines += [
        "",
        "| Repository | Milestone | Ours | Baseline | Baseline build s | Base runs s | Verify runs s "
        "| Ours image build s | Ours validation s |",
        "|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for name, b in runs:
        for m in b.get("milestones", []):
            theirs = m.get("status", "error") + (f": {m['reason']}" if m.get("reason") else "")
            if m.get("error"):
                theirs = f"error: {m['error']}"
            lines.append(
                f"| {name} | {m['milestone']} | {m['ours_status']} ({m['ours_fail_to_pass']} F2P) "
                f"| {_cell(theirs)} ({m.get('fail_to_pass', 0)} F2P) | {_s(m.get('build_s'))} "
                f"| {_s(m.get('base_runs_s'))} | {_s(m.get('verify_runs_s'))} | {_s(m['ours_image_build_s'])} "
                f"| {_s(m['ours_validation_s'])} |"
            )
    return lines


def document(results: list[EntryResult], options: Options, command: str, wall_s: float, note: str = "") -> dict:
    sums = totals(results)
    entries = []
    for r in results:
        row = asdict(r)
        row["per_valid_s"] = r.per_valid_s
        entries.append(row)
    return {
        "measured_at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command,
        "note": note,
        "repeats": options.repeats,
        "wall_s": round(wall_s, 1),
        "machine": machine(),
        "entries": entries,
        "totals": sums,
        "targets": targets(results, sums),
        "how_to_run": HOW_TO_RUN,
    }


HOW_TO_RUN = [
    "# the whole corpus (local clones under --root; without one an entry is cloned from GitHub); about 100 min",
    "# on 2 CPUs with K=3 (pyparsing and ky take half of it), plus the baseline's per-milestone builds and runs",
    ".venv/bin/python benchmarks/corpus.py --repos benchmarks/corpus.yaml --root /work/trial/repos \\",
    "    --store /tmp/corpus-store --out docs/corpus.md --json benchmarks/results/corpus.json \\",
    "    --baseline pluggy,httprouter --repeats 3",
    "# some entries only; the baseline on the first 2 milestones; no Docker (plan only, or --backend local)",
    ".venv/bin/python benchmarks/corpus.py --repos benchmarks/corpus.yaml --root /work/trial/repos \\",
    "    --store /tmp/corpus-store --out /tmp/corpus.md --only pluggy,kleur --baseline pluggy --baseline-milestones 2",
    ".venv/bin/python benchmarks/corpus.py --repos benchmarks/corpus.yaml --root /work/trial/repos \\",
    "    --store /tmp/corpus-store --out /tmp/corpus.md --no-docker",
]
