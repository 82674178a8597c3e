"""A Helm 4 post-renderer that keeps admission webhooks pointed where the harness pointed them.

The harness runs an operator's webhook server as a local process and points the release's
webhook configurations at it (:func:`slinky_harness.k8s.operator.point_webhooks_at`). A later
``helm upgrade`` of that release applies the chart's ``clientConfig`` (a Service no one serves
under kwok) again: server-side apply refuses the patched fields, client-side apply restores them.
Rendered through this post-renderer, the upgrade carries the live ``clientConfig``,
``failurePolicy`` and ``timeoutSeconds`` of every webhook named in the parameters file instead,
so the objects it creates pass the real webhook server.

Helm 4 takes post-renderers only as plugins: :func:`install_plugin` writes one into a Helm home
(``helm upgrade --post-renderer NAME``). The plugin runs ``python -m
slinky_harness.helm.webhook_postrender PARAMS.json`` on the rendered manifests (standard input
to standard output).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from collections.abc import Sequence

PLUGIN = "slinky-served-webhooks"
KINDS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
KEPT = ("clientConfig", "failurePolicy", "timeoutSeconds")


def live_settings(objects: Sequence[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{"<Kind>/<name>": {"<webhook name>": {clientConfig, failurePolicy, timeoutSeconds}}}``
    of live webhook configurations."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for obj in objects:
        if obj.get("kind") in KINDS:
            out[f"{obj['kind']}/{obj['metadata']['name']}"] = {
                str(hook["name"]): {k: hook[k] for k in KEPT if k in hook}
                for hook in obj.get("webhooks") or []
            }
    return out


def rewrite(text: str, settings: dict[str, dict[str, dict[str, Any]]]) -> str:
    """The manifests of ``text`` with the webhooks of ``settings`` given their live fields."""
    docs = list(yaml.safe_load_all(text))
    for doc in docs:
        if not isinstance(doc, dict) or doc.get("kind") not in KINDS:
            continue
        hooks = settings.get(f"{doc['kind']}/{doc['metadata']['name']}", {})
        for hook in doc.get("webhooks") or []:
            hook.update(hooks.get(str(hook.get("name")), {}))
    return yaml.safe_dump_all([d for d in docs if d is not None], sort_keys=False)


def install_plugin(helm_data_home: Path, params: Path) -> str:
    """Write the plugin into ``<HELM_DATA_HOME>/plugins`` with ``params`` (a JSON file of
    :func:`live_settings`); returns the name ``--post-renderer`` takes."""
    folder = helm_data_home / "plugins" / PLUGIN
    folder.mkdir(parents=True, exist_ok=True)
    meta = {
        "apiVersion": "v1",
        "name": PLUGIN,
        "version": "0.1.0",
        "type": "postrenderer/v1",
        "runtime": "subprocess",
        "runtimeConfig": {
            "platformCommand": [{
                "command": sys.executable,
                "args": ["-m", "slinky_harness.helm.webhook_postrender", str(params)],
            }],
        },
    }  # fmt: skip
    (folder / "plugin.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    return PLUGIN


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print(
            "usage: python -m slinky_harness.helm.webhook_postrender PARAMS.json", file=sys.stderr
        )
        return 2
    try:
        settings = json.loads(Path(args[0]).read_text())
        sys.stdout.write(rewrite(sys.stdin.read(), settings))
    except (OSError, ValueError, yaml.YAMLError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
