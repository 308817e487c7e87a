"""Crafted milestone runs, written to a store exactly as the harness writes them.

`CraftedRun` builds one milestone's event log call by call (each tool call gets a call id and the
next seq, as the Navigator records them) and `finish()` writes the run directory: metadata.json,
trajectory.jsonl (through the real Recorder), summary.json, test_results.json and the patches.
Analytics and distillation tests use it to make each signal happen on purpose.
"""

from __future__ import annotations

from typing import Any

from harnessforge.harness.recorder import Recorder, write_run_metadata
from harnessforge.models.run import MilestoneSummary, RunMeta
from harnessforge.models.trajectory import Action, Event, TestCounts, Usage
from harnessforge.store import Store

GT_FILE = "src/app.py"
GROUND_TRUTH = (
    "diff --git a/src/app.py b/src/app.py\n--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,4 @@\n"
    " def run(items):\n-    return items\n+    kept = [item for item in items if item.enabled]\n"
    "+    kept.sort(key=lambda item: item.priority)\n+    return kept\n"
)


def diff_adding(lines: list[str], path: str = GT_FILE) -> str:
    body = "".join(f"+{line}\n" for line in lines)
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,1 +1,{len(lines)} @@\n{body}"


class CraftedRun:
    def __init__(
        self,
        store: Store,
        run_id: str,
        mid: str = "m01",
        repo: str = "acme__app",
        model: str = "m-1",
        synthetic: bool = False,
        scaffold: dict | None = None,
    ):
        self.store, self.run_id, self.mid, self.repo, self.model = store, run_id, mid, repo, model
        self.scaffold = scaffold  # RunMeta.scaffold (None: ours)
        self.synthetic = synthetic
        self.events: list[Event] = []
        self.turn = self.edits = self.test_runs = 0
        self.hints: list[int] = []
        self.start("# Filter and order items\n\nUsers want only enabled items, by priority.")

    # ---- events ---------------------------------------------------------------------------------
    def _add(self, role: str, kind: str, content: str = "", args: dict[str, Any] | None = None, **kw) -> Event:
        self.edits += kind in ("write_file", "edit_file") and kw.get("ok", True)
        self.test_runs += kind == "run_tests"
        where = {"run_id": self.run_id, "repo": self.repo, "milestone_id": self.mid, "seq": len(self.events)}
        counters = {"cumulative_edits": self.edits, "cumulative_test_runs": self.test_runs}
        action = Action(type=kind, content=content, args=args or {})
        event = Event(**where, turn_id=self.turn, role=role, action=action, synthetic=self.synthetic, **counters, **kw)
        self.events.append(event)
        return event

    def start(self, task: str) -> None:
        self._add("navigator", "milestone_start", task)

    def say(self, text: str = "", tokens: int = 100, reasoning: str = "") -> CraftedRun:
        """A new Dev turn (one model call), with the model's reasoning when given."""
        self.turn += 1
        args = {"reasoning": reasoning} if reasoning else {}
        self._add("dev", "message", text, args, model=self.model, usage=Usage(input=tokens, output=tokens // 10))
        return self

    def tool(self, kind: str, args: dict[str, Any], observation: str = "", ok: bool = True, **kw) -> CraftedRun:
        """A tool call of the current turn: listed in the turn's message event, as the Navigator records it."""
        call_id = f"call_{len(self.events)}"
        turn = next(e for e in reversed(self.events) if e.role == "dev" and e.action.type == "message")
        turn.action.args.setdefault("tool_calls", []).append({"id": call_id, "name": kind, "args": args})
        self._add("dev", kind, args=args, call_id=call_id, observation=observation, ok=ok, **kw)
        return self

    def compact(self) -> CraftedRun:
        """The harness masked every tool output so far but the latest (a `compaction` event, as `fit` records it)."""
        calls = [event.call_id for event in self.events if event.call_id]
        args = {"policy": "mask", "window": 8000, "before_tokens": 7000, "after_tokens": 3000, "elided": calls[:-1]}
        self._add("navigator", "compaction", f"{len(calls) - 1} outputs elided, 0 messages summarized", args)
        return self

    def list_dir(self, path: str = ".", listing: str = "src/\nREADME.md") -> CraftedRun:
        return self.tool("list_dir", {"path": path}, listing)

    def read(self, path: str, content: str = "def run(items):\n    return items\n") -> CraftedRun:
        return self.tool("read_file", {"path": path}, content)

    def search(self, pattern: str, hits: str = "") -> CraftedRun:
        return self.tool("search", {"pattern": pattern}, hits or f"{GT_FILE}:1:def run(items):")

    def edit(self, path: str = GT_FILE, sha: str = "", ok: bool = True) -> CraftedRun:
        observation = f"edited {path}" if ok else f"error: `old` occurs 0 times in {path}; it must occur exactly once"
        args = {"path": path, "old": "x", "new": "y"} | ({"content_sha": sha or f"sha{len(self.events)}"} if ok else {})
        return self.tool("edit_file", args, observation, ok=ok, files_touched=[path] if ok else [])

    def bash(self, command: str, output: str = "", code: int = 0) -> CraftedRun:
        return self.tool("bash", {"command": command}, f"{output}\n[exit code {code}]", ok=code == 0)

    def test(self, passed: int, failed: int, signature: str | None = "sig-a") -> CraftedRun:
        counts = TestCounts(passed=passed, failed=failed, total=passed + failed)
        return self.tool(
            "run_tests",
            {},
            f"{passed} passed, {failed} failed",
            ok=failed == 0,
            test_status=counts,
            error_signature=signature if failed else None,
        )

    def hint(self, level: int, rule: str = "same_error", text: str = "look at the filter") -> CraftedRun:
        self.hints.append(level)
        self._add("mentor", "hint", f"[hint L{level}] {text}", {"rule": rule}, mentor_hint=text, hint_level=level)
        return self

    # ---- the run directory ----------------------------------------------------------------------
    def finish(self, status: str = "PASS", final_diff: str = "", ground_truth: str = GROUND_TRUTH) -> CraftedRun:
        run_dir = self.store.run_dir(self.repo, self.run_id)
        if not (run_dir / "metadata.json").exists():
            meta = RunMeta(
                run_id=self.run_id,
                repo=self.repo,
                agent="crafted",
                model=self.model,
                harness_version="test",
                rules_hash="r",
                synthetic=self.synthetic,
                **({"scaffold": self.scaffold} if self.scaffold else {}),
            )
            write_run_metadata(run_dir, meta)
        self._add("navigator", "milestone_end", status)
        rec = Recorder.open(run_dir / self.mid)
        for e in self.events:
            rec.append(e)
        rec.write_patch("final_diff.patch", (final_diff or GROUND_TRUTH).encode())
        rec.write_patch("ground_truth.patch", ground_truth.encode())
        report = {
            "milestone_id": self.mid,
            "passed": status == "PASS",
            "ground_truth_files": [GT_FILE],
            "acceptance": {"passed": 1, "failed": 0, "total": 1},
            "candidate_files": [GT_FILE],
        }
        rec.write_json("test_results.json", report)
        rec.write_summary(
            MilestoneSummary(
                run_id=self.run_id,
                milestone_id=self.mid,
                status=status,
                turns=self.turn,
                hints_released=self.hints,
                synthetic=self.synthetic,
            )
        )
        return self
