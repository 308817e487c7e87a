"""`runits`: a Rust crate without dependencies (no crate registry is reachable offline).

History (PR-titled merge commits and a CHANGELOG.md), edition 2021 and no `rust-version` above
the distribution's rustc (1.63 on bookworm):

- v0.1.0: `parse_size("10KiB")` in `src/lib.rs` (with a doctest) and `src/size.rs`; integration
  tests in `tests/size.rs`.
- v0.2.0, "Durations with days and weeks" (PR #2, fixes #1): `parse_duration` (new `src/duration.rs`
  and a shared unit table `src/units.rs`, used by `parse_size` too) with integration tests in
  `tests/duration.rs`, which do not compile before it: FAIL_TO_PASS are `duration::days`,
  `duration::weeks_and_days` and `duration::unknown_unit`, as libtest names them.
"""

from __future__ import annotations

from pathlib import Path

from .common import builder

CARGO_TOML = """[package]
name = "runits"
version = "{version}"
edition = "2021"
description = "Parse human-written sizes and durations"
license = "MIT"

[dependencies]
"""

LIB = """//! Parse human-written sizes and durations.
//!
//! ```
//! assert_eq!(runits::parse_size("10KiB"), Ok(10240));
//! ```

mod size;

pub use size::parse_size;

/// Why a text could not be read.
#[derive(Debug, PartialEq, Eq)]
pub enum Error {
    /// The number part is missing or too large.
    BadNumber(String),
    /// The unit is not one of the known ones.
    UnknownUnit(String),
}
"""

LIB_020 = LIB.replace(
    "mod size;\n\npub use size::parse_size;\n",
    "mod duration;\nmod size;\nmod units;\n\npub use duration::parse_duration;\npub use size::parse_size;\n",
)

SIZE = """use crate::Error;

const UNITS: &[(&str, u64)] = &[("", 1), ("B", 1), ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30)];

/// "10KiB", "3 MiB" or "512" in bytes.
pub fn parse_size(text: &str) -> Result<u64, Error> {
    let text = text.trim();
    let digits = text.chars().take_while(|c| c.is_ascii_digit()).count();
    let (number, unit) = text.split_at(digits);
    let factor = UNITS
        .iter()
        .find(|(name, _)| *name == unit.trim())
        .map(|(_, factor)| *factor)
        .ok_or_else(|| Error::UnknownUnit(unit.trim().to_string()))?;
    let n: u64 = number.parse().map_err(|_| Error::BadNumber(text.to_string()))?;
    Ok(n * factor)
}
"""

SIZE_020 = """use crate::units::scale;
use crate::Error;

const UNITS: &[(&str, u64)] = &[("", 1), ("B", 1), ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30)];

/// "10KiB", "3 MiB" or "512" in bytes.
pub fn parse_size(text: &str) -> Result<u64, Error> {
    scale(text, UNITS)
}
"""

UNITS = """use crate::Error;

/// "<number><unit>" read with a table of unit names and their multiples of the base unit.
pub(crate) fn scale(text: &str, units: &[(&str, u64)]) -> Result<u64, Error> {
    let text = text.trim();
    let digits = text.chars().take_while(|c| c.is_ascii_digit()).count();
    let (number, unit) = text.split_at(digits);
    let factor = units
        .iter()
        .find(|(name, _)| *name == unit.trim())
        .map(|(_, factor)| *factor)
        .ok_or_else(|| Error::UnknownUnit(unit.trim().to_string()))?;
    let n: u64 = number.parse().map_err(|_| Error::BadNumber(text.to_string()))?;
    n.checked_mul(factor).ok_or_else(|| Error::BadNumber(text.to_string()))
}
"""

DURATION = """use std::time::Duration;

use crate::units::scale;
use crate::Error;

const UNITS: &[(&str, u64)] = &[("s", 1), ("m", 60), ("h", 3600), ("d", 86400), ("w", 604800)];

/// "90s", "2d" or "1w 2d 3h" (the parts add up).
///
/// ```
/// assert_eq!(runits::parse_duration("2d").unwrap().as_secs(), 172800);
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, Error> {
    let mut seconds = 0;
    for part in text.split_whitespace() {
        seconds += scale(part, UNITS)?;
    }
    Ok(Duration::from_secs(seconds))
}
"""

SIZE_TESTS = """use runits::{parse_size, Error};

#[test]
fn plain_bytes() {
    assert_eq!(parse_size("512"), Ok(512));
}

#[test]
fn binary_units() {
    assert_eq!(parse_size("3 MiB"), Ok(3 << 20));
}

#[test]
fn unknown_unit() {
    assert_eq!(parse_size("3 parsecs"), Err(Error::UnknownUnit("parsecs".into())));
}
"""

DURATION_TESTS = """use runits::{parse_duration, Error};

#[test]
fn days() {
    assert_eq!(parse_duration("2d").unwrap().as_secs(), 2 * 86400);
}

#[test]
fn weeks_and_days() {
    assert_eq!(parse_duration("1w 2d 3h").unwrap().as_secs(), (9 * 24 + 3) * 3600);
}

#[test]
fn unknown_unit() {
    assert_eq!(parse_duration("3fortnights"), Err(Error::UnknownUnit("fortnights".into())));
}
"""

CHANGELOG = "# Changelog\n\n"
CHANGES = {
    "0.2.0": "## [0.2.0] - 2026-01-09\n\n### Added\n- Durations with days and weeks: `parse_duration` (#2, fixes #1)."
    "\n\n",
    "0.1.0": "## [0.1.0] - 2026-01-06\n\n### Added\n- `parse_size` for sizes like `10KiB`.\n\n",
}


def build(dest: Path) -> Path:
    """Write the runits repository to `dest` and return it."""
    b = builder(dest, "runits")
    b.commit(
        "Initial commit: parse_size",
        {
            "README.md": "# runits\n\nParse human-written sizes and durations.\n",
            ".gitignore": "/target\nCargo.lock\n",
            "Cargo.toml": CARGO_TOML.format(version="0.1.0"),
            "src/lib.rs": LIB,
            "src/size.rs": SIZE,
            "tests/size.rs": SIZE_TESTS,
            "CHANGELOG.md": CHANGELOG + CHANGES["0.1.0"],
        },
    )
    b.tag("v0.1.0", "runits 0.1.0")
    b.commit("ci: cargo test on push", {".github/workflows/ci.yml": "on: [push]\njobs: {}\n"})
    b.merge_pr(
        2,
        "durations",
        "Durations with days and weeks (fixes #1)",
        [
            ("Share one unit table", {"src/units.rs": UNITS, "src/size.rs": SIZE_020}),
            (
                "Add parse_duration",
                {"src/duration.rs": DURATION, "src/lib.rs": LIB_020, "tests/duration.rs": DURATION_TESTS},
            ),
        ],
    )
    b.commit(
        "Release 0.2.0",
        {
            "Cargo.toml": CARGO_TOML.format(version="0.2.0"),
            "CHANGELOG.md": CHANGELOG + CHANGES["0.2.0"] + CHANGES["0.1.0"],
        },
    )
    b.tag("v0.2.0", "runits 0.2.0")
    return dest
