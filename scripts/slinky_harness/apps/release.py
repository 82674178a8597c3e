"""Release plumbing: every chart's version has a CHANGELOG entry, then ``helm package`` into ``dist/``.

``check`` checks that each chart's README links the ``values/`` profiles that configure it, and reads
each chart's ``CHANGELOG.md`` (Keep a Changelog: ``## [1.2.3] - YYYY-MM-DD`` headings
with ``### Added``/``Changed``/... sections) and refuses a chart whose ``Chart.yaml`` version has no
entry, an empty entry, or an entry newer than the chart. ``package`` runs the same check, then
``helm package`` of every chart into a staging folder beside ``dist/``, verifies each archive
(name, version, CHANGELOG.md inside, suite-only files left out) and writes ``SHA256SUMS``; only then
does the staging folder become ``dist/``. A failure leaves the previous ``dist/`` as it was.

Usage::

    python -m slinky_harness.apps.release check
    python -m slinky_harness.apps.release package [--dist DIR] [--chart NAME ...]

Publishing is manual (see docs/releasing.md):
``helm push dist/<chart>-<version>.tgz oci://<registry>/<path>``.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from slinky_harness.build import cache, toolchain
from slinky_harness.build.gobuild import BuildError
from slinky_harness.core import paths
from slinky_harness.core.errors import HarnessError
from slinky_harness.helm import charts as suite_charts

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

CHARTS_DIR = paths.REPO_ROOT / "charts"
DIST_DIR = paths.REPO_ROOT / "dist"
CHANGE_TYPES = ("Added", "Changed", "Deprecated", "Removed", "Fixed", "Security")
"""Section names Keep a Changelog 1.1.0 defines, in its order."""
PACKAGED = ("Chart.yaml", "values.yaml", "values.schema.json", "README.md", "CHANGELOG.md")
"""Files every package carries at the chart root (CHANGELOG.md deliberately, for ``helm pull`` users)."""
LEFT_OUT = ("ci/", "README.md.gotmpl")
"""Suite-only paths ``.helmignore`` keeps out of every package."""

_SEMVER = r"\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?"
_VERSION_HEADING = re.compile(
    rf"^## \[(?P<version>{_SEMVER}|Unreleased)\](?: - (?P<date>\d{{4}}-\d{{2}}-\d{{2}}))?\s*$"
)
_SECTION_HEADING = re.compile(r"^### (?P<name>\S.*?)\s*$")
_PROFILE_LINK = re.compile(r"\]\(\.\./\.\./values/(?P<profile>[A-Za-z0-9_.-]+)\.yaml\)")


class ReleaseError(HarnessError):
    """A chart cannot be released as it stands; the message says what to fix."""


@dataclass(frozen=True)
class Entry:
    """One ``## [version] - date`` block of a changelog."""

    version: str
    date: str | None
    line: int
    """1-based line of the heading."""
    changes: dict[str, list[str]]
    """Section name to its bullet items (continuation lines joined)."""

    @property
    def is_empty(self) -> bool:
        return not any(self.changes.values())


def parse_changelog(text: str, source: str = "CHANGELOG.md") -> list[Entry]:
    """The entries of a Keep a Changelog file, top to bottom.

    Raises ``ReleaseError`` (with ``source:line``) for a ``##`` heading that is not
    ``## [X.Y.Z] - YYYY-MM-DD`` or ``## [Unreleased]``, a released version without a date, an
    unknown ``###`` section, a bullet outside a section, or a version listed twice.
    """
    entries: list[Entry] = []
    current: Entry | None = None
    section: list[str] | None = None
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        where = f"{source}:{number}"
        if line.startswith("## "):
            match = _VERSION_HEADING.match(line)
            if match is None:
                raise ReleaseError(
                    f"{where}: version heading must read '## [X.Y.Z] - YYYY-MM-DD' "
                    f"or '## [Unreleased]', got {line!r}"
                )
            version, date = match["version"], match["date"]
            if version != "Unreleased" and date is None:
                raise ReleaseError(
                    f"{where}: released version {version} needs a date (' - YYYY-MM-DD')"
                )
            if version in seen:
                raise ReleaseError(f"{where}: version {version} is listed twice")
            seen.add(version)
            current = Entry(version=version, date=date, line=number, changes={})
            entries.append(current)
            section = None
        elif line.startswith("### "):
            if current is None:
                raise ReleaseError(f"{where}: section {line!r} before any version heading")
            name = _SECTION_HEADING.match(line)
            assert name is not None  # "### " followed by anything matches
            if name["name"] not in CHANGE_TYPES:
                raise ReleaseError(
                    f"{where}: unknown section {name['name']!r}; use one of {', '.join(CHANGE_TYPES)}"
                )
            section = current.changes.setdefault(name["name"], [])
        elif line.startswith("- "):
            if section is None:
                raise ReleaseError(
                    f"{where}: change {line[:40]!r}... is not under a '### ' section"
                )
            section.append(line[2:].strip())
        elif line.startswith("  ") and line.strip() and section:
            section[-1] = f"{section[-1]} {line.strip()}"
    return entries


def _semver_key(version: str) -> tuple[int, int, int, int, str]:
    core, _, pre = version.split("+", 1)[0].partition("-")
    major, minor, patch = (int(part) for part in core.split("."))
    return major, minor, patch, 0 if pre else 1, pre


@dataclass(frozen=True)
class ReleaseChart:
    """A chart folder with the metadata a release needs."""

    name: str
    version: str
    path: Path

    @property
    def archive(self) -> str:
        return f"{self.name}-{self.version}.tgz"


def load_chart(path: Path) -> ReleaseChart:
    meta = yaml.safe_load((path / "Chart.yaml").read_text()) or {}
    if not isinstance(meta, dict) or "name" not in meta or "version" not in meta:
        raise ReleaseError(f"{path}/Chart.yaml: needs 'name' and 'version'")
    return ReleaseChart(name=str(meta["name"]), version=str(meta["version"]), path=path)


def discover(root: Path = CHARTS_DIR, names: Iterable[str] = ()) -> list[ReleaseChart]:
    """Every chart under ``root`` (sorted), or only ``names`` (each must exist)."""
    wanted = list(names)
    found = [load_chart(p.parent) for p in sorted(root.glob("*/Chart.yaml"))]
    if not wanted:
        return found
    by_name = {chart.name: chart for chart in found}
    unknown = [name for name in wanted if name not in by_name]
    if unknown:
        raise ReleaseError(f"unknown chart(s) {', '.join(unknown)}; known: {', '.join(by_name)}")
    return [by_name[name] for name in wanted]


def check_changelog(chart: ReleaseChart) -> Entry:
    """The changelog entry of the chart's current version; ``ReleaseError`` when it is not releasable."""
    path = chart.path / "CHANGELOG.md"
    if not path.is_file():
        raise ReleaseError(f"{chart.name}: {path} is missing; every chart keeps a CHANGELOG.md")
    entries = parse_changelog(path.read_text(), str(path))
    released = [entry for entry in entries if entry.version != "Unreleased"]
    matching = [entry for entry in released if entry.version == chart.version]
    if not matching:
        raise ReleaseError(
            f"{chart.name}: Chart.yaml version {chart.version} has no '## [{chart.version}] - YYYY-MM-DD' "
            f"entry in {path}; add one (move the [Unreleased] items under it) before releasing"
        )
    entry = matching[0]
    if entry.is_empty:
        raise ReleaseError(f"{path}:{entry.line}: the entry for {chart.version} lists no changes")
    newer = [e.version for e in released if _semver_key(e.version) > _semver_key(chart.version)]
    if newer:
        raise ReleaseError(
            f"{path}: lists {', '.join(newer)}, newer than Chart.yaml's version {chart.version}"
        )
    order = [_semver_key(e.version) for e in released]
    if order != sorted(order, reverse=True):
        raise ReleaseError(f"{path}: versions must be listed newest first")
    return entry


def profile_links(readme: str) -> set[str]:
    """Profiles a chart README links to, as ``[...](../../values/<profile>.yaml)``."""
    return {match["profile"] for match in _PROFILE_LINK.finditer(readme)}


def check_profile_links(chart: ReleaseChart, profiles: Mapping[str, dict[str, Any]]) -> None:
    """The chart's README links exactly the ``values/`` profiles that apply to it.

    A profile applies to a chart when it has a block for it that is not ``enabled: false``
    (:func:`slinky_harness.helm.charts.profile_block`).
    """
    applies = {
        stem
        for stem, data in profiles.items()
        if suite_charts.profile_block(data, chart.name) is not None
    }
    readme = chart.path / "README.md"
    linked = profile_links(readme.read_text()) if readme.is_file() else set()
    problems = []
    if applies - linked:
        problems.append(f"does not link {', '.join(sorted(applies - linked))}")
    if linked - applies:
        problems.append(
            f"links {', '.join(sorted(linked - applies))}, which configure(s) no block of it"
        )
    if problems:
        raise ReleaseError(
            f"{readme}: {'; '.join(problems)} (edit 'Value profiles' in README.md.gotmpl, run helm-docs)"
        )


def _verify_archive(archive: Path, chart: ReleaseChart) -> None:
    with tarfile.open(archive, "r:gz") as tar:
        names = set(tar.getnames())
        member = tar.extractfile(f"{chart.name}/Chart.yaml")
        packaged = yaml.safe_load(member.read()) if member else {}
    missing = [f for f in PACKAGED if f"{chart.name}/{f}" not in names]
    if missing:
        raise ReleaseError(f"{archive.name}: lacks {', '.join(missing)}")
    leaked = sorted(
        n
        for n in names
        for out in LEFT_OUT
        if n == f"{chart.name}/{out.rstrip('/')}" or n.startswith(f"{chart.name}/{out}")
    )
    if leaked:
        raise ReleaseError(f"{archive.name}: carries suite-only files {leaked}; check .helmignore")
    if str(packaged.get("version")) != chart.version:
        raise ReleaseError(
            f"{archive.name}: Chart.yaml inside says {packaged.get('version')}, expected {chart.version}"
        )


def package(charts: Sequence[ReleaseChart], dist: Path, helm: Path) -> list[Path]:
    """Check, package and verify every chart, then make ``dist`` hold exactly these archives.

    The archives are built in a staging folder beside ``dist``; ``dist`` is replaced only when
    all of them are built and verified, so it is never half-written.
    """
    if not charts:
        raise ReleaseError("no charts to package")
    profiles = suite_charts.profiles()
    for chart in charts:
        check_changelog(chart)
        check_profile_links(chart, profiles)
    with cache.staged_folder(dist, "dist") as staging:
        staging.chmod(0o755)  # mkdtemp makes it private; dist/ is for sharing
        for chart in charts:
            proc = subprocess.run(
                [str(helm), "package", str(chart.path), "--destination", str(staging)],
                capture_output=True,
                text=True,
                check=False,
            )
            archive = staging / chart.archive
            if proc.returncode != 0 or not archive.is_file():
                reason = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
                raise ReleaseError(f"{chart.name}: helm package failed: {reason[0]}")
            _verify_archive(archive, chart)
        sums = [
            f"{hashlib.sha256((staging / c.archive).read_bytes()).hexdigest()}  {c.archive}\n"
            for c in charts
        ]
        (staging / "SHA256SUMS").write_text("".join(sorted(sums, key=lambda s: s.split()[1])))
    return [dist / chart.archive for chart in charts]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m slinky_harness.apps.release", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="check every chart's version against its CHANGELOG.md")
    pack = sub.add_parser("package", help="check, then helm package every chart into dist/")
    pack.add_argument(
        "--dist", type=Path, default=DIST_DIR, help="output folder (default: %(default)s)"
    )
    for command in (check, pack):
        command.add_argument(
            "--chart",
            dest="charts",
            action="append",
            default=[],
            metavar="NAME",
            help="only this chart (repeatable; default: every chart under charts/)",
        )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        charts = discover(CHARTS_DIR, args.charts)
        if args.command == "check":
            profiles = suite_charts.profiles()
            for chart in charts:
                entry = check_changelog(chart)
                check_profile_links(chart, profiles)
                print(f"{chart.name} {chart.version}: CHANGELOG entry of {entry.date}")
            return 0
        archives = package(charts, args.dist, toolchain.ensure("helm"))
    except (ReleaseError, BuildError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for archive in archives:
        print(archive)
    print(f"{len(archives)} chart(s) packaged into {args.dist}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
