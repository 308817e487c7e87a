"""`jsunits`: an npm package (ES modules, type declarations) tested with ava, which reports in TAP.

ava comes from the npm registry when the image is built (the only time the registry is reachable);
the package has no lockfile (`npm install`), like many small packages (`package-lock=false`).
History (PR-titled merge commits and a CHANGELOG.md):

- v0.1.0: `parseSize("10KiB")` (`src/size.js`, re-exported by `index.js`, typed in `index.d.ts`),
  tested in `test/size.test.js`.
- v0.2.0, "Durations with days and weeks" (PR #2, fixes #1): `parseDuration` (new `src/duration.js`
  and a shared unit table `src/units.js` that `parseSize` uses too). Its tests (`test/duration.test.js`)
  import a name the base does not export, so the file does not load at base: FAIL_TO_PASS are
  `test/duration.test.js::parses days`, `::adds weeks and days` and `::rejects unknown units`.
"""

from __future__ import annotations

import json
from pathlib import Path

from .common import builder

AVA_VERSION = "6.1.3"  # supports Node 18.18+, bookworm's Node is 18.20


def _package_json(version: str) -> str:
    data = {
        "name": "jsunits",
        "version": version,
        "description": "Parse human-written sizes and durations",
        "type": "module",
        "exports": {"types": "./index.d.ts", "default": "./index.js"},
        "engines": {"node": ">=18"},
        "scripts": {"test": "ava"},
        "devDependencies": {"ava": AVA_VERSION},
    }
    return json.dumps(data, indent=2) + "\n"


INDEX = 'export {parseSize} from "./src/size.js";\n'
INDEX_020 = INDEX + 'export {parseDuration} from "./src/duration.js";\n'
TYPES = "export function parseSize(text: string): number;\n"
TYPES_020 = TYPES + "export function parseDuration(text: string): number;\n"

SIZE = """const units = {"": 1, B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3};

/** "10KiB", "3 MiB" or "512" in bytes. */
export function parseSize(text) {
\tconst match = /^(\\d+)\\s*(\\w*)$/.exec(text.trim());
\tif (!match) {
\t\tthrow new TypeError(`bad size ${JSON.stringify(text)}`);
\t}

\tconst factor = units[match[2]];
\tif (factor === undefined) {
\t\tthrow new TypeError(`unknown size unit ${JSON.stringify(match[2])}`);
\t}

\treturn Number(match[1]) * factor;
}
"""

SIZE_020 = """import {scale} from "./units.js";

const units = {"": 1, B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3};

/** "10KiB", "3 MiB" or "512" in bytes. */
export function parseSize(text) {
\treturn scale(text, units, "size");
}
"""

UNITS = """/** "<number><unit>" read with a table of unit names and their multiples of the base unit. */
export function scale(text, units, kind) {
\tconst match = /^(\\d+)\\s*(\\w*)$/.exec(text.trim());
\tif (!match) {
\t\tthrow new TypeError(`bad ${kind} ${JSON.stringify(text)}`);
\t}

\tconst factor = units[match[2]];
\tif (factor === undefined) {
\t\tthrow new TypeError(`unknown ${kind} unit ${JSON.stringify(match[2])}`);
\t}

\treturn Number(match[1]) * factor;
}
"""

DURATION = """import {scale} from "./units.js";

const units = {s: 1, m: 60, h: 3600, d: 86_400, w: 604_800};

/** "90s", "2d" or "1w 2d 3h" (the parts add up) in seconds. */
export function parseDuration(text) {
\tlet seconds = 0;
\tfor (const part of text.trim().split(/\\s+/)) {
\t\tseconds += scale(part, units, "duration");
\t}

\treturn seconds;
}
"""

SIZE_TEST = """import test from "ava";
import {parseSize} from "../index.js";

test("plain bytes", t => {
\tt.is(parseSize("512"), 512);
});

test("binary units", t => {
\tt.is(parseSize("3 MiB"), 3 * 1024 ** 2);
});

test("rejects unknown units", t => {
\tt.throws(() => parseSize("3 parsecs"), {message: /unknown size unit/});
});
"""

DURATION_TEST = """import test from "ava";
import {parseDuration} from "../index.js";

test("parses days", t => {
\tt.is(parseDuration("2d"), 2 * 86_400);
});

test("adds weeks and days", t => {
\tt.is(parseDuration("1w 2d 3h"), ((9 * 24) + 3) * 3600);
});

test("rejects unknown units", t => {
\tt.throws(() => parseDuration("3fortnights"), {message: /unknown duration unit/});
});
"""

CHANGELOG = "# Changelog\n\n"
CHANGES = {
    "0.2.0": "## [0.2.0] - 2026-01-09\n\n### Added\n- Durations with days and weeks: `parseDuration` (#2, fixes #1)."
    "\n\n",
    "0.1.0": "## [0.1.0] - 2026-01-06\n\n### Added\n- `parseSize` for sizes like `10KiB`.\n\n",
}


def build(dest: Path) -> Path:
    """Write the jsunits repository to `dest` and return it."""
    b = builder(dest, "jsunits")
    b.commit(
        "Initial commit: parseSize",
        {
            "readme.md": "# jsunits\n\nParse human-written sizes and durations.\n",
            ".gitignore": "node_modules\n",
            ".npmrc": "package-lock=false\n",
            "package.json": _package_json("0.1.0"),
            "index.js": INDEX,
            "index.d.ts": TYPES,
            "src/size.js": SIZE,
            "test/size.test.js": SIZE_TEST,
            "CHANGELOG.md": CHANGELOG + CHANGES["0.1.0"],
        },
    )
    b.tag("v0.1.0", "jsunits 0.1.0")
    b.commit("ci: npm test on push", {".github/workflows/ci.yml": "on: [push]\njobs: {}\n"})
    b.merge_pr(
        2,
        "durations",
        "Durations with days and weeks (fixes #1)",
        [
            ("Share one unit table", {"src/units.js": UNITS, "src/size.js": SIZE_020}),
            (
                "Add parseDuration",
                {
                    "src/duration.js": DURATION,
                    "index.js": INDEX_020,
                    "index.d.ts": TYPES_020,
                    "test/duration.test.js": DURATION_TEST,
                },
            ),
        ],
    )
    b.commit(
        "Release 0.2.0",
        {"package.json": _package_json("0.2.0"), "CHANGELOG.md": CHANGELOG + CHANGES["0.2.0"] + CHANGES["0.1.0"]},
    )
    b.tag("v0.2.0", "jsunits 0.2.0")
    return dest
