"""The `harnessforge` command: a thin typer front over the core, with rich progress.

One module per stage holds its commands (`planning`, `environments`, `runs`, `datasets`, `reports`,
`examples`); `rendering` lays out what they print, `options` the options they share, and `context`
the store, rules and consoles every command uses. This module registers the commands, in the order
`--help` lists them, and turns every error a user can cause into one line (`main`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn, Optional

import typer
from rich.markup import escape

from ..errors import ConfigError, HarnessForgeError
from ..store import Store, default_store_dir
from . import datasets, environments, examples, planning, reports, runs
from .context import console, state

try:  # typer >= 0.22 carries its own click
    from typer._click.exceptions import ClickException, NoArgsIsHelpError
except ImportError:  # pragma: no cover
    from click.exceptions import ClickException, NoArgsIsHelpError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Turn real repositories' release history into coding-agent training data.",
)


@app.callback()
def main_options(
    store: Optional[Path] = typer.Option(
        None, "--store", help="Store directory (default: $HARNESSFORGE_HOME, else ./forge_store)"
    ),
    rules: Optional[Path] = typer.Option(
        None, "--rules", help="YAML overriding rule thresholds (default: $HARNESSFORGE_RULES)"
    ),
) -> None:
    state.store = Store(store or default_store_dir())
    state.rules_path = rules


env_app = typer.Typer(no_args_is_help=True, help="Sandbox images: base images and per-repo environments.")
COMMANDS = [  # (name, function): `--help` lists them in this order, then the `env` group
    ("schema", datasets.schema),
    ("example-repo", examples.example_repo),
    ("screen", planning.screen),
    ("plan", planning.plan),
    ("add", planning.add),
    ("show", planning.show),
    ("validate", environments.validate),
    ("grade", environments.grade),
    ("run", runs.run),
    ("distill", datasets.distill),
    ("export", datasets.export),
    ("verify-tasks", datasets.verify_tasks),
    ("demo", examples.demo),
    ("report", reports.report),
    ("view", reports.view),
]
ENV_COMMANDS = [
    ("bootstrap-base", environments.bootstrap_base),
    ("build", environments.build),
    ("cleanup", environments.cleanup),
]
for name, command in COMMANDS:
    app.command(name)(command)
for name, command in ENV_COMMANDS:
    env_app.command(name)(command)
app.add_typer(env_app, name="env")


def fail(message: str, code: int) -> NoReturn:
    console.print(f"[red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise SystemExit(code) from None


GLOBAL_OPTIONS = ("--store", "--rules")


def hoist_global_options(argv: list[str]) -> list[str]:
    """typer reads the app's own options only before the subcommand; users type them anywhere
    (`harnessforge plan REPO --store DIR`), so they are moved to the front (up to a `--`)."""
    front, rest, index = [], [], 0
    while index < len(argv):
        argument = argv[index]
        if argument == "--":
            rest += argv[index:]
            break
        if argument.split("=", 1)[0] in GLOBAL_OPTIONS:
            width = 1 if "=" in argument else 2
            if width == 2 and (index + 1 >= len(argv) or argv[index + 1].startswith("--")):
                raise ConfigError(f"{argument} needs a value (e.g. {argument} DIR), before or after the command")
            front += argv[index : index + width]
            index += width
            continue
        rest.append(argument)
        index += 1
    return front + rest


def main() -> None:
    """Every error a user can cause ends in one line on stderr, never a traceback: typer's usage
    errors (a bad option or argument, exit 2) and ours (exit 1)."""
    try:
        args = hoist_global_options(sys.argv[1:])
    except ConfigError as e:  # a usage error, like typer's
        fail(str(e), 2)
    try:
        code = app(args=args, standalone_mode=False)
    except NoArgsIsHelpError:  # typer has printed the help
        raise SystemExit(2) from None
    except ClickException as e:
        context = getattr(e, "ctx", None)
        where = f"{context.command_path}: " if context else ""
        hint = f" (see {context.command_path} --help)" if context else ""
        fail(f"{where}{e.format_message()}{hint}", e.exit_code)
    except typer.Abort:
        fail("aborted", 1)
    except HarnessForgeError as e:
        fail(str(e), 1)
    except OSError as e:  # a path the user gave that cannot be written or read (a directory, no permission)
        if e.filename is None:
            raise
        not_dir = isinstance(e, FileExistsError) and not Path(e.filename).is_dir()  # mkdir over a file
        why = "exists and is not a directory" if not_dir else e.strerror
        fail(f"{e.filename}: {why}", 1)
    raise SystemExit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
