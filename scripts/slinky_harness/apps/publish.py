"""What a release publishes and its notes, for ``.github/workflows/release.yaml``.

A release is a git tag ``v<version>``. It publishes every chart (``helm push`` of ``nox -s
package``'s archives) to :func:`chart_repository` and the labeler image under the reference the
labeler chart's default values give (:func:`slinky_harness.helm.charts.published_ref`), so the chart's
default image is the one the release pushes. The tag's version must be the labeler chart's
``appVersion`` (the image tag), and the repository owner must be the registry namespace of that
image (``GITHUB_TOKEN`` can push only there).

Usage::

    python -m slinky_harness.apps.publish check --tag v0.1.0 --owner slinky-suite   # key=value lines
    python -m slinky_harness.apps.publish notes --tag v0.1.0                        # Markdown
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from slinky_harness.apps import release
from slinky_harness.build import labeler_image as image
from slinky_harness.core.errors import HarnessError
from slinky_harness.helm.charts import published_ref

if TYPE_CHECKING:
    from collections.abc import Sequence

PLATFORMS = ("linux/amd64", "linux/arm64")
"""The platforms the release builds the image for."""
_TAG = re.compile(r"^v(?P<version>\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)$")


class PublishError(HarnessError):
    """The tag or the repository cannot be released as they stand; the message says what to fix."""


@dataclass(frozen=True)
class Plan:
    """Where a release publishes."""

    version: str
    image: str
    """Image reference without its tag (``ghcr.io/slinky-suite/gpu-topology-labeler``)."""
    image_ref: str
    """With its tag: the labeler chart's default image."""
    charts: str
    """OCI repository the charts go to (``oci://ghcr.io/slinky-suite/charts``)."""
    registry: str
    namespace: str

    def outputs(self) -> list[str]:
        """``key=value`` lines for ``$GITHUB_OUTPUT``."""
        return [
            f"version={self.version}",
            f"image={self.image}",
            f"image-ref={self.image_ref}",
            f"charts={self.charts}",
            f"registry={self.registry}",
            f"platforms={','.join(PLATFORMS)}",
        ]


def chart_repository(image_ref: str) -> str:
    """``oci://<registry>/<namespace>/charts`` beside the image (the chart name is appended by
    ``helm push``)."""
    registry, namespace, _ = _split(image_ref)
    return f"oci://{registry}/{namespace}/charts"


def _split(image_ref: str) -> tuple[str, str, str]:
    """``(registry, namespace, name)`` of a reference (its tag and digest dropped)."""
    head, _, last = image_ref.split("@", 1)[0].rpartition("/")
    parts = [*head.split("/"), last.split(":", 1)[0]] if head else [last]
    if len(parts) < 3:
        raise PublishError(f"{image_ref}: expected <registry>/<namespace>/<name>")
    return parts[0], "/".join(parts[1:-1]), parts[-1]


def plan(tag: str, owner: str | None = None) -> Plan:
    """Check ``tag`` (and the repository ``owner``) against the labeler chart and say where the
    release publishes."""
    match = _TAG.match(tag)
    if match is None:
        raise PublishError(f"tag {tag!r} is not v<major>.<minor>.<patch>[-<pre-release>]")
    version = match["version"]
    app_version = image.labeler_version()
    if version != app_version:
        raise PublishError(
            f"tag {tag} is version {version}, but charts/gpu-topology-labeler/Chart.yaml has "
            f"appVersion {app_version}: the image is published under appVersion, which the "
            f"chart's default image names; tag v{app_version} or bump appVersion"
        )
    ref = published_ref()
    registry, namespace, name = _split(ref)
    if owner is not None and namespace.split("/")[0].lower() != owner.lower():
        raise PublishError(
            f"the labeler chart's default image is {ref}, in namespace {namespace!r} of "
            f"{registry}; a release of {owner!r} cannot push there (set image.repository in "
            "charts/gpu-topology-labeler/values.yaml to its own namespace)"
        )
    for chart in release.discover():
        release.check_changelog(chart)
    return Plan(
        version=version,
        image=f"{registry}/{namespace}/{name}",
        image_ref=ref,
        charts=chart_repository(ref),
        registry=registry,
        namespace=namespace,
    )


def changelog_text(chart: release.ReleaseChart) -> tuple[release.Entry, str]:
    """The chart's entry for its version, as written (its ``###`` sections and bullets)."""
    entry = release.check_changelog(chart)
    lines = (chart.path / "CHANGELOG.md").read_text(encoding="utf-8").splitlines()
    body: list[str] = []
    for line in lines[entry.line :]:
        if line.startswith("## "):
            break
        body.append(line)
    return entry, "\n".join(body).strip()


def notes(tag: str) -> str:
    """Release notes: what was published and how to install it, then every chart's CHANGELOG entry
    for the version it is released at (sections one level down)."""
    where = plan(tag)
    charts = release.discover()
    out = [
        f"Charts in `{where.charts}` and the labeler image `{where.image_ref}` "
        f"({', '.join(PLATFORMS)}), each signed with cosign (keyless, GitHub OIDC); the image's "
        "SPDX SBOMs are attached below and to the image.",
        "",
        "| chart | version | install |",
        "| --- | --- | --- |",
    ]
    for chart in charts:
        out.append(
            f"| {chart.name} | {chart.version} | `helm install {chart.name} "
            f"{where.charts}/{chart.name} --version {chart.version}` |"
        )
    out += [
        "",
        "Verify a signature (the identity is this repository's release workflow):",
        "",
        "```sh",
        f"cosign verify {where.image_ref} \\",
        "  --certificate-oidc-issuer https://token.actions.githubusercontent.com \\",
        "  --certificate-identity-regexp '^https://github.com/.+/.github/workflows/release.yaml@'",
        "```",
    ]
    for chart in charts:
        entry, body = changelog_text(chart)
        out += ["", f"## {chart.name} {chart.version} ({entry.date})", ""]
        out += [f"#{line}" if line.startswith("### ") else line for line in body.splitlines()]
    return "\n".join(out) + "\n"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m slinky_harness.apps.publish", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="check the tag; print key=value lines for $GITHUB_OUTPUT")
    check.add_argument("--tag", required=True, help="the release tag, v<version>")
    check.add_argument("--owner", help="the repository owner ($GITHUB_REPOSITORY_OWNER)")
    text = sub.add_parser("notes", help="print the release notes (Markdown)")
    text.add_argument("--tag", required=True, help="the release tag, v<version>")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "check":
            print("\n".join(plan(args.tag, args.owner).outputs()))
        else:
            sys.stdout.write(notes(args.tag))
    except (PublishError, release.ReleaseError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
