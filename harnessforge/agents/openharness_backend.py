"""OpenHarness as the Dev: its QueryEngine, system prompt and coding tools (bash, read_file,
write_file, edit_file, grep), each call run by the harness in the milestone's sandbox
(`drivers/openharness_driver.py`). It has no submit tool: its final answer is the submission."""

from __future__ import annotations

from .scaffold_link import ScaffoldLink


class OpenHarnessAgent(ScaffoldLink):
    scaffold = "openharness"
    package = "openharness-ai"
    supported = ">=0.1.9,<0.2"
    driver = "openharness_driver.py"
    native_tools = {
        "bash": "bash",
        "read_file": "read_file",
        "write_file": "write_file",
        "edit_file": "edit_file",
        "grep": "search",
    }
    ends_with_answer = True

    def arguments(self, tool: str, args: dict) -> dict:
        """OpenHarness' arguments as ours: its own options (a read window, a grep file glob) are its to apply."""
        if tool == "bash":
            command = args.get("command", "")
            return {"command": f"cd {args['cwd']} && {command}" if args.get("cwd") else command}
        if tool == "edit_file":
            return {"path": args.get("path", ""), "old": args.get("old_str", ""), "new": args.get("new_str", "")}
        if tool == "write_file":
            return {"path": args.get("path", ""), "content": args.get("content", "")}
        if tool == "grep":
            return {"pattern": args.get("pattern", ""), "path": args.get("root") or "."}
        return {"path": args.get("path", "")}
