"""`gounits`: a Go module with no dependencies, then one vendored dependency.

Go 1.23 (bookworm-backports) and no module proxy: a stdlib-only module has nothing to
download, and a vendored one builds from `vendor/` alone. History (PR-titled merge commits and a
Keep-a-Changelog CHANGELOG.md):

- v0.1.0: `ParseSize("10KiB")` in the root package, with tests.
- v0.2.0, "Durations with days and weeks" (PR #2, fixes #1): `ParseDuration` (a new file and a
  shared unit table used by `ParseSize` too) and a `format` subpackage with `format.Duration`.
  Its tests (`duration_test.go`, `format/format_test.go`) do not compile before it, so every one
  of them fails at base: FAIL_TO_PASS are `TestParseDuration` with its subtests `days` and
  `weeks`, `TestParseDurationErrors` and `format::TestDuration`. The module is still stdlib-only.
- v0.3.0, "Plural unit names" (PR #4, fixes #3): `format.Words` through a vendored dependency
  (`github.com/harnessforge-examples/plural`, in `vendor/` with its `modules.txt`); FAIL_TO_PASS
  `format::TestWords`.
"""

from __future__ import annotations

from pathlib import Path

from .common import builder

MODULE = "github.com/harnessforge-examples/gounits"
GO_MOD = f"module {MODULE}\n\ngo 1.18\n"
GO_MOD_VENDORED = GO_MOD + "\nrequire github.com/harnessforge-examples/plural v1.0.0\n"
MODULES_TXT = (
    "# github.com/harnessforge-examples/plural v1.0.0\n## explicit; go 1.18\ngithub.com/harnessforge-examples/plural\n"
)
PLURAL = """// Package plural names a count of things.
package plural

import "fmt"

// Of is "1 day", "2 days".
func Of(n int, unit string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, unit)
	}
	return fmt.Sprintf("%d %ss", n, unit)
}
"""

SIZE = """// Package gounits parses human-written sizes and durations.
package gounits

import (
	"fmt"
	"strconv"
	"strings"
)

var sizeUnits = map[string]int64{"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}

// ParseSize reads "10KiB", "3 MiB" or "512" into bytes.
func ParseSize(text string) (int64, error) {
	number, unit := split(strings.TrimSpace(text))
	factor, ok := sizeUnits[unit]
	if !ok {
		return 0, fmt.Errorf("unknown size unit %q", unit)
	}
	n, err := strconv.ParseInt(number, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad size %q: %w", text, err)
	}
	return n * factor, nil
}

func split(text string) (string, string) {
	i := 0
	for i < len(text) && text[i] >= '0' && text[i] <= '9' {
		i++
	}
	return text[:i], strings.TrimSpace(text[i:])
}
"""

SIZE_TEST = """package gounits

import "testing"

func TestParseSize(t *testing.T) {
	cases := map[string]int64{"512": 512, "10KiB": 10240, "3 MiB": 3 << 20}
	for text, want := range cases {
		got, err := ParseSize(text)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", text, got, err, want)
		}
	}
}

func TestParseSizeRejectsUnknownUnits(t *testing.T) {
	if _, err := ParseSize("3 parsecs"); err == nil {
		t.Error("no error for an unknown unit")
	}
}
"""

UNITS = """package gounits

import (
	"fmt"
	"strconv"
	"strings"
)

// A table of unit names to multiples of a base unit, shared by sizes and durations.
type unitTable map[string]int64

// scale reads "<number><unit>" with the table's units.
func (table unitTable) scale(text, kind string) (int64, error) {
	number, unit := split(strings.TrimSpace(text))
	factor, ok := table[unit]
	if !ok {
		return 0, fmt.Errorf("unknown %s unit %q", kind, unit)
	}
	n, err := strconv.ParseInt(number, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad %s %q: %w", kind, text, err)
	}
	return n * factor, nil
}
"""

DURATION = """package gounits

import (
	"strings"
	"time"
)

var durationUnits = unitTable{
	"s": int64(time.Second), "m": int64(time.Minute), "h": int64(time.Hour),
	"d": int64(24 * time.Hour), "w": int64(7 * 24 * time.Hour),
}

// ParseDuration reads "90s", "2d" or "1w 2d 3h" (parts add up) into a time.Duration.
func ParseDuration(text string) (time.Duration, error) {
	var total int64
	for _, part := range strings.Fields(text) {
		n, err := durationUnits.scale(part, "duration")
		if err != nil {
			return 0, err
		}
		total += n
	}
	return time.Duration(total), nil
}
"""

DURATION_TEST = """package gounits

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	t.Run("days", func(t *testing.T) {
		if got, _ := ParseDuration("2d"); got != 48*time.Hour {
			t.Errorf("2d = %v", got)
		}
	})
	t.Run("weeks", func(t *testing.T) {
		if got, _ := ParseDuration("1w 2d 3h"); got != (9*24+3)*time.Hour {
			t.Errorf("1w 2d 3h = %v", got)
		}
	})
}

func TestParseDurationErrors(t *testing.T) {
	for _, text := range []string{"3 fortnights", "xd"} {
		if _, err := ParseDuration(text); err == nil {
			t.Errorf("no error for %q", text)
		}
	}
}
"""

FORMAT = """// Package format writes durations the way people read them.
package format

import (
	"fmt"
	"time"
)

// Duration is "1w 2d 3h" for 9 days and 3 hours; zero parts are left out.
func Duration(d time.Duration) string {
	hours := int64(d / time.Hour)
	weeks, days, rest := hours/(24*7), hours/24%7, hours%24
	out := ""
	for _, part := range []struct {
		n    int64
		unit string
	}{{weeks, "w"}, {days, "d"}, {rest, "h"}} {
		if part.n > 0 {
			if out != "" {
				out += " "
			}
			out += fmt.Sprintf("%d%s", part.n, part.unit)
		}
	}
	if out == "" {
		return "0h"
	}
	return out
}
"""

FORMAT_TEST = """package format

import (
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	if got := Duration((9*24 + 3) * time.Hour); got != "1w 2d 3h" {
		t.Errorf("got %q", got)
	}
	if got := Duration(0); got != "0h" {
		t.Errorf("got %q", got)
	}
}
"""

WORDS = """package format

import (
	"time"

	"github.com/harnessforge-examples/plural"
)

// Words is "1 week 2 days" for 9 days: whole days and weeks, in words.
func Words(d time.Duration) string {
	days := int(d / (24 * time.Hour))
	if days >= 7 && days%7 == 0 {
		return plural.Of(days/7, "week")
	}
	if days >= 7 {
		return plural.Of(days/7, "week") + " " + plural.Of(days%7, "day")
	}
	return plural.Of(days, "day")
}
"""

WORDS_TEST = """package format

import (
	"testing"
	"time"
)

func TestWords(t *testing.T) {
	cases := map[time.Duration]string{24 * time.Hour: "1 day", 9 * 24 * time.Hour: "1 week 2 days"}
	for d, want := range cases {
		if got := Words(d); got != want {
			t.Errorf("Words(%v) = %q, want %q", d, got, want)
		}
	}
}
"""

CHANGELOG = "# Changelog\n\n"
CHANGES = {
    "0.3.0": "## [0.3.0] - 2026-01-12\n\n### Added\n- Plural unit names: `format.Words` (#4, fixes #3).\n\n",
    "0.2.0": "## [0.2.0] - 2026-01-09\n\n### Added\n- Durations with days and weeks: `ParseDuration` and "
    "`format.Duration` (#2, fixes #1).\n\n",
    "0.1.0": "## [0.1.0] - 2026-01-06\n\n### Added\n- `ParseSize` for sizes like `10KiB`.\n\n",
}
SIZE_SHARED = SIZE.replace(
    """	number, unit := split(strings.TrimSpace(text))
	factor, ok := sizeUnits[unit]
	if !ok {
		return 0, fmt.Errorf("unknown size unit %q", unit)
	}
	n, err := strconv.ParseInt(number, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad size %q: %w", text, err)
	}
	return n * factor, nil
""",
    """	return sizeUnits.scale(text, "size")
""",
).replace('import (\n\t"fmt"\n\t"strconv"\n\t"strings"\n)\n', 'import "strings"\n')
SIZE_SHARED = SIZE_SHARED.replace("var sizeUnits = map[string]int64{", "var sizeUnits = unitTable{")


def _changelog(*versions: str) -> str:
    return CHANGELOG + "".join(CHANGES[v] for v in versions)


def build(dest: Path) -> Path:
    """Write the gounits repository to `dest` and return it."""
    b = builder(dest, "gounits")
    b.commit(
        "Initial commit: ParseSize",
        {
            "README.md": "# gounits\n\nParse human-written sizes and durations.\n",
            "go.mod": GO_MOD,
            "size.go": SIZE,
            "size_test.go": SIZE_TEST,
            "CHANGELOG.md": _changelog("0.1.0"),
        },
    )
    b.tag("v0.1.0", "gounits 0.1.0")
    b.commit("ci: run go test on push", {".github/workflows/ci.yml": "on: [push]\njobs: {}\n"})
    b.merge_pr(
        2,
        "durations",
        "Durations with days and weeks (fixes #1)",
        [
            ("Share one unit table between sizes and durations", {"units.go": UNITS, "size.go": SIZE_SHARED}),
            ("Add ParseDuration", {"duration.go": DURATION, "duration_test.go": DURATION_TEST}),
            ("Add format.Duration", {"format/format.go": FORMAT, "format/format_test.go": FORMAT_TEST}),
        ],
    )
    b.commit("Release 0.2.0", {"CHANGELOG.md": _changelog("0.2.0", "0.1.0")})
    b.tag("v0.2.0", "gounits 0.2.0")
    b.merge_pr(
        4,
        "plural-words",
        "Plural unit names (fixes #3)",
        [
            (
                "Vendor github.com/harnessforge-examples/plural",
                {
                    "go.mod": GO_MOD_VENDORED,
                    "vendor/modules.txt": MODULES_TXT,
                    "vendor/github.com/harnessforge-examples/plural/plural.go": PLURAL,
                },
            ),
            ("Add format.Words", {"format/words.go": WORDS, "format/words_test.go": WORDS_TEST}),
        ],
    )
    b.commit("Release 0.3.0", {"CHANGELOG.md": _changelog("0.3.0", "0.2.0", "0.1.0")})
    b.tag("v0.3.0", "gounits 0.3.0")
    return dest
