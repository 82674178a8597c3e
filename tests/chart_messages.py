"""The charts' message table: every message a chart can fail with, one row each.

Shared by the render tier (``tests/render/test_validate_messages.py`` proves each row through the
real Helm and that every ``fail``, ``required`` and ``append $errors`` format of every template has
a row) and the props tier (its oracle accepts a chart failure only with a message a row proves).
See the render test's docstring for what a row holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from slinky_harness.helm import charts
from slinky_harness.helm import client as helm
from slinky_harness.k8s import schemas as kubeschema

CHARTS = {c.name: c for c in charts.discover_charts()}
NEWEST = kubeschema.newest_version()
PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
TOPOLOGY = "- topology: fabric\n  cluster_default: true\n  flat: true\n"


@dataclass(frozen=True)
class Row:
    """One message: the chart, what trips it, and what Helm prints."""

    id: str
    chart: str
    values: dict[str, Any]
    message: str
    """The template's message as Helm prints it for ``values`` (one entry of validate.yaml's list,
    or the whole text of a direct ``fail``/``required``)."""
    schema: tuple[str, str] | None = None
    """Set when values.schema.json refuses ``values`` before the template runs: the JSON pointer
    and the text of the schema error Helm prints then (``- at '<pointer>': <text>``)."""
    why: str = ""
    """For a ``schema`` row: why the template's check cannot be reached."""
    files: dict[str, str] = field(default_factory=dict)
    """Files added to a copy of the chart (path relative to the chart), for checks of its files."""
    release: str = helm.DEFAULT_RELEASE


# -- gpu-topology-labeler ------------------------------------------------------------------------

LABELER = "gpu-topology-labeler"
LABELER_ROWS = (
    Row(
        "replicas-without-leader-election",
        LABELER,
        {"controller": {"replicas": 2, "leaderElection": {"enabled": False}}},
        "controller.replicas is 2 but controller.leaderElection.enabled is false: several controllers would "
        "write at once. Set `controller.leaderElection.enabled: true` or `controller.replicas: 1`.",
    ),
    Row(
        "retry-not-below-renew",
        LABELER,
        {
            "controller": {
                "leaderElection": {
                    "leaseDurationSeconds": 30,
                    "renewDeadlineSeconds": 10,
                    "retryPeriodSeconds": 10,
                }
            }
        },
        "controller.leaderElection.retryPeriodSeconds must be less than renewDeadlineSeconds.",
    ),
    Row(
        "renew-not-below-lease",
        LABELER,
        {
            "controller": {
                "leaderElection": {"leaseDurationSeconds": 15, "renewDeadlineSeconds": 15}
            }
        },
        "controller.leaderElection.renewDeadlineSeconds must be less than leaseDurationSeconds.",
    ),
    Row(
        "request-timeout-outlasts-lease",
        LABELER,
        {"controller": {"requestTimeoutSeconds": 13}},
        "controller.requestTimeoutSeconds (13) plus controller.leaderElection.retryPeriodSeconds (2) must be "
        "less than leaseDurationSeconds (15): a write starts only if it ends before the Lease could pass to "
        "another pod. Lower the timeout or lengthen the Lease.",
    ),
    Row(
        "stuck-seconds-too-short",
        LABELER,
        {"controller": {"stuckSeconds": 70}},
        "controller.stuckSeconds (70) must exceed 70 (watchTimeoutSeconds + requestTimeoutSeconds, and "
        "leaderElection.retryPeriodSeconds + 2 \N{MULTIPLICATION SIGN} requestTimeoutSeconds): a healthy "
        "controller can be quiet that long. Raise it, or leave it null.",
    ),
    Row(
        "grace-period-too-short",
        LABELER,
        {"controller": {"terminationGracePeriodSeconds": 34}},
        "controller.terminationGracePeriodSeconds (34) is less than 35 "
        "(3 \N{MULTIPLICATION SIGN} requestTimeoutSeconds + 5): a stopping controller may need that long to "
        "end its write in flight and release its Lease. Raise it, or leave it null.",
    ),
    Row(
        "service-monitor-without-metrics",
        LABELER,
        {"controller": {"metrics": {"enabled": False, "serviceMonitor": {"enabled": True}}}},
        "controller.metrics.serviceMonitor.enabled is true but controller.metrics.enabled is false: set "
        "`controller.metrics.enabled: true`.",
    ),
    Row(
        "fabric-configmap-is-the-output",
        LABELER,
        {"topology": {"fabricConfigMap": {"name": "rel-gpu-topology-labeler-topology"}}},
        'topology.fabricConfigMap.name and the topology ConfigMap are both "rel-gpu-topology-labeler-topology": '
        "the labeler would overwrite its own input. Give them different names.",
    ),
    Row(
        "block-values-beside-a-fabric-file",
        LABELER,
        {
            "topology": {
                "fabricConfigMap": {"name": "my-fabric"},
                "blockSizes": [18, 36],
                "oversizedDomains": "error",
            }
        },
        "topology.blockSizes, topology.oversizedDomains set together with "
        "topology.fabricConfigMap.name: the fabric file sets blockSizes, source and "
        "oversizedDomains on each of its spec.topologies. Set them there and leave "
        "topology.blockSizes, topology.oversizedDomains at the defaults (blockSizes: [], "
        "blockSource: domain, oversizedDomains: split).",
    ),
    Row(
        "block-sizes-base-over-16-bits",
        LABELER,
        {"topology": {"blockSizes": [65536, 131072]}},
        "topology.blockSizes[0] (the base block size) is 65536, over 65535: slurmctld keeps it in "
        "16 bits (65536 crashes it, more is fatal at start-up). Use a base of at most 65535 nodes, "
        "one NVLink domain (e.g. 18), and reach larger groups with the next values ([18, 36, 72]).",
    ),
    Row(
        "service-accounts-collide",
        LABELER,
        {
            "controller": {"serviceAccount": {"name": "labeler"}},
            "discovery": {"enabled": True, "serviceAccount": {"name": "labeler"}},
        },
        "ServiceAccount names collide (labeler, labeler, rel-gpu-topology-labeler-test): give "
        "controller.serviceAccount.name and discovery.serviceAccount.name different values (the test "
        "ServiceAccount is `<fullname>-test`).",
    ),
    Row(
        "pod-label-the-chart-sets",
        LABELER,
        {"controller": {"podLabels": {"app.kubernetes.io/name": "other"}}},
        'controller.podLabels sets "app.kubernetes.io/name", which the chart sets itself: remove it.',
    ),
    Row(
        "env-the-chart-sets",
        LABELER,
        {"discovery": {"extraEnv": [{"name": "NODE_NAME", "value": "n1"}]}},
        "discovery.extraEnv sets NODE_NAME, which the chart sets itself: remove it.",
    ),
    Row(
        "env-twice",
        LABELER,
        {"controller": {"extraEnv": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}},
        "controller.extraEnv names a variable more than once: remove the duplicates.",
    ),
    Row(
        "network-policy-without-api-ports",
        LABELER,
        {"networkPolicy": {"apiServer": {"ports": []}}},
        "networkPolicy.apiServer.ports is empty: the pods could not reach the API server. List its ports "
        "(443, 6443), or set `networkPolicy.enabled: false`.",
    ),
    Row(
        "tests-without-rbac",
        LABELER,
        {"rbac": {"create": False}},
        "tests.enabled needs rbac.create (the test pod gets its own read-only Role): set `tests.enabled: "
        "false` when RBAC is managed outside the chart.",
    ),
    Row(
        "image-repository-required",
        LABELER,
        {"image": {"repository": ""}},
        "image.repository is required: the image's repository, with or without "
        "its registry host (e.g. ghcr.io/slinkyproject/slurmctld)",
        schema=("/image/repository", "minLength: got 0, want 1"),
        why="the schema gives every image repository minLength 1",
    ),
)


# -- slurm-bridge --------------------------------------------------------------------------------

BRIDGE = "slurm-bridge"
BRIDGE_ROWS = (
    Row(
        "scheduler-replicas-without-leader-elect",
        BRIDGE,
        {"scheduler": {"replicaCount": 2}},
        "scheduler.replicaCount is 2 but scheduler.leaderElect is false: several schedulers would bind the "
        "same pods at once. Set `scheduler.leaderElect: true` or `scheduler.replicaCount: 1`.",
    ),
    Row(
        "replicas-without-leader-election",
        BRIDGE,
        {"controllers": {"replicas": 2, "leaderElection": {"enabled": False}}},
        "controllers.replicas is 2 but controllers.leaderElection.enabled is false: several instances would "
        "act at once. Set `controllers.leaderElection.enabled: true` or `controllers.replicas: 1`.",
    ),
    Row(
        "lease-not-above-renew",
        BRIDGE,
        {
            "scheduler": {
                "leaderElect": True,
                "leaderElection": {"leaseDuration": "10s", "renewDeadline": "10s"},
            }
        },
        "scheduler.leaderElection.leaseDuration (10s) must be longer than scheduler.leaderElection.renewDeadline "
        "(10s): kube-scheduler refuses to start. The defaults are 15s and 10s.",
    ),
    Row(
        "renew-not-above-retry-jitter",
        BRIDGE,
        {
            "scheduler": {
                "leaderElect": True,
                "leaderElection": {"renewDeadline": "2400ms", "retryPeriod": "2s"},
            }
        },
        "scheduler.leaderElection.renewDeadline (2400ms) must be longer than 1.2 x "
        "scheduler.leaderElection.retryPeriod (2s): kube-scheduler refuses to start. The defaults are 10s and 2s.",
    ),
    Row(
        "plugin-config-without-name",
        BRIDGE,
        {"scheduler": {"extraPluginConfig": [{"args": {}}]}},
        "scheduler.extraPluginConfig[0] needs a string `name` (a kube-scheduler plugin name) and optional `args`.",
    ),
    Row(
        "plugin-config-of-slurm-bridge",
        BRIDGE,
        {
            "scheduler": {
                "extraPluginConfig": [{"name": "NodeResourcesFit"}, {"name": "SlurmBridge"}]
            }
        },
        "scheduler.extraPluginConfig[1] configures SlurmBridge: the chart renders its entry itself (it takes no "
        "args in 1.2.1; it reads config.yaml). Remove the entry.",
    ),
    Row(
        "scheduler-service-monitor-without-metrics",
        BRIDGE,
        {"scheduler": {"metrics": {"serviceMonitor": {"enabled": True}}}},
        "scheduler.metrics.serviceMonitor.enabled is true but scheduler.metrics.enabled is false: set "
        "`scheduler.metrics.enabled: true` (the ServiceMonitor scrapes its Service).",
    ),
    Row(
        "metrics-port-is-health-port",
        BRIDGE,
        {"controllers": {"metrics": {"port": 8081}}},
        "controllers.metrics.port and controllers.healthPort are both 8081: give them different ports.",
    ),
    Row(
        "secure-metrics-without-metrics",
        BRIDGE,
        {"controllers": {"metrics": {"enabled": False, "secure": True}}},
        "controllers.metrics.secure is true but controllers.metrics.enabled is false: enable metrics or unset "
        "secure.",
    ),
    Row(
        "controllers-service-monitor-without-metrics",
        BRIDGE,
        {"controllers": {"metrics": {"enabled": False, "serviceMonitor": {"enabled": True}}}},
        "controllers.metrics.serviceMonitor.enabled is true but controllers.metrics.enabled is false: set "
        "`controllers.metrics.enabled: true`.",
    ),
    Row(
        "admission-health-port-is-webhook-port",
        BRIDGE,
        {"admission": {"healthPort": 9443}},
        "admission.healthPort is 9443, the port the v1.2.1 admission binary serves webhooks on (not "
        "configurable): pick another health port.",
    ),
    Row(
        "cert-manager-and-own-secret",
        BRIDGE,
        {
            "admission": {
                "certManager": {"enabled": True},
                "tls": {"existingSecret": "tls", "caBundle": PEM},
            }
        },
        "admission.certManager.enabled is true and admission.tls.existingSecret is set: choose one TLS source. "
        "Unset `admission.tls.existingSecret`, or set `admission.certManager.enabled: false`.",
    ),
    Row(
        "own-secret-without-ca",
        BRIDGE,
        {"admission": {"tls": {"existingSecret": "tls"}}},
        "admission.tls.existingSecret is set but admission.tls.caBundle is empty: set `admission.tls.caBundle` "
        "to the PEM CA that signed the Secret's certificate.",
    ),
    Row(
        "ca-without-own-secret",
        BRIDGE,
        {"admission": {"tls": {"caBundle": PEM}}},
        "admission.tls.caBundle is set without admission.tls.existingSecret: it is only used with your own "
        "Secret. Set `admission.tls.existingSecret` or remove `admission.tls.caBundle`.",
    ),
    Row(
        "ca-not-pem",
        BRIDGE,
        {"admission": {"tls": {"existingSecret": "tls", "caBundle": "TUlJQg=="}}},
        "admission.tls.caBundle must be PEM text (-----BEGIN CERTIFICATE-----), not base64.",
        schema=(
            "/admission/tls/caBundle",
            r"'TUlJQg==' does not match pattern '^(|-----BEGIN CERTIFICATE-----[\\s\\S]*)$'",
        ),
        why="the schema gives caBundle a pattern: empty or PEM",
    ),
    Row(
        "secret-name-and-own-secret",
        BRIDGE,
        {"admission": {"tls": {"existingSecret": "tls", "caBundle": PEM, "secretName": "managed"}}},
        "admission.tls.secretName and admission.tls.existingSecret are both set: existingSecret names your "
        "Secret, secretName only names the Secret the chart manages. Keep one.",
    ),
    Row(
        "issuer-without-cert-manager",
        BRIDGE,
        {"admission": {"certManager": {"issuerRef": {"name": "ca", "kind": "ClusterIssuer"}}}},
        "admission.certManager.issuerRef is set but admission.certManager.enabled is false: enable "
        "cert-manager or remove the issuerRef.",
    ),
    Row(
        "issuer-without-name",
        BRIDGE,
        {"admission": {"certManager": {"enabled": True, "issuerRef": {"kind": "ClusterIssuer"}}}},
        "admission.certManager.issuerRef.name is required when admission.certManager.issuerRef is set.",
    ),
    Row(
        "protected-namespace",
        BRIDGE,
        {"admission": {"managedNamespaces": ["batch", "kube-system"]}},
        'admission.managedNamespaces[1] is "kube-system", a protected namespace (kube-system, kube-public, '
        "kube-node-lease, the release namespace, the namespace of the slurmrestd Service in "
        "`sharedConfig.slurmRestApi` or the operator's `operatorNamespace`: kube-node-lease, kube-public, "
        "kube-system, slinky, slurm, suite-ns): their pods (the bridge, Slurm's daemons, the operator) must "
        "never wait for Slurm, and the webhooks skip them. Remove it from the list.",
    ),
    Row(
        "selector-matches-everything",
        BRIDGE,
        {"admission": {"managedNamespaceSelector": {"matchLabels": {}}}},
        "admission.managedNamespaceSelector has no matchLabels and no matchExpressions: such a selector "
        'matches EVERY namespace. Give it labels (e.g. `matchLabels: {slinky.slurm.net/slurm-bridge: "true"}`), '
        "or set `admission.manageAllNamespaces: true` (and `admission.managedNamespaceSelector: {}`) if every "
        "namespace but the protected ones is really meant.",
    ),
    Row(
        "all-namespaces-and-selector",
        BRIDGE,
        {
            "admission": {
                "manageAllNamespaces": True,
                "managedNamespaceSelector": {"matchLabels": {"slurm": "yes"}},
            }
        },
        "admission.manageAllNamespaces is true and admission.managedNamespaceSelector is set: choose one. "
        "`manageAllNamespaces: true` bridges every namespace but the protected ones; a selector bridges only "
        "the namespaces it matches.",
    ),
    Row(
        "jwt-secret-is-the-key-secret",
        BRIDGE,
        {"token": {"jwtKeySecretRef": {"name": "slurm-bridge-token"}}},
        'sharedConfig.slurmJwtSecret and token.jwtKeySecretRef.name are both "slurm-bridge-token": the Token '
        "would overwrite Slurm's JWT key with the token it signs. sharedConfig.slurmJwtSecret names the Secret "
        "the Token writes (default slurm-bridge-token); token.jwtKeySecretRef.name names slurm-cluster's key "
        "Secret (e.g. slurm-auth-jwt).",
    ),
    Row(
        "service-accounts-collide",
        BRIDGE,
        {
            "scheduler": {"serviceAccount": {"name": "bridge"}},
            "controllers": {"serviceAccount": {"name": "bridge"}},
        },
        "two created ServiceAccounts share a name (bridge, slurm-bridge-admission, bridge, "
        "slurm-bridge-test): give scheduler, admission and controllers different `serviceAccount.name` "
        "values (or leave them empty).",
    ),
    Row(
        "network-policy-without-api-ports",
        BRIDGE,
        {"networkPolicy": {"apiServer": {"ports": []}}},
        "networkPolicy.apiServer.ports is empty: an egress rule without ports would allow every port. List the "
        "API server ports, e.g. `[443, 6443]`.",
    ),
    Row(
        "tests-without-rbac",
        BRIDGE,
        {"rbac": {"create": False}},
        "tests.enabled needs rbac.create (the test pod gets its own read-only Role): set `tests.enabled: "
        "false` when RBAC is managed outside the chart.",
    ),
    Row(
        "image-repository-required",
        BRIDGE,
        {"scheduler": {"image": {"repository": ""}}},
        "scheduler.image.repository is required: the image's repository, with or without "
        "its registry host (e.g. ghcr.io/slinkyproject/slurmctld)",
        schema=("/scheduler/image/repository", "minLength: got 0, want 1"),
        why="the schema gives every image repository minLength 1",
    ),
)


# -- slurm-operator ------------------------------------------------------------------------------

OPERATOR = "slurm-operator"
OPERATOR_ROWS = (
    Row(
        "node-condition-with-comma",
        OPERATOR,
        {"propagatedNodeConditions": ["KernelDeadlock,ReadonlyFilesystem"]},
        'propagatedNodeConditions[0] ("KernelDeadlock,ReadonlyFilesystem") must be one non-empty node '
        "condition type, e.g. `KernelDeadlock`.",
        schema=(
            "/propagatedNodeConditions/0",
            "'KernelDeadlock,ReadonlyFilesystem' does not match pattern "
            r"'^(([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)/)?"
            r"(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])$'",
        ),
        why="the schema's pattern (a qualified name) refuses an empty entry and a comma alike",
    ),
    Row(
        "replicas-without-leader-election",
        OPERATOR,
        {"operator": {"replicas": 2, "leaderElection": False}},
        "operator.replicas is 2 but operator.leaderElection is false: several managers would "
        "reconcile at once. Set `operator.leaderElection: true` or `operator.replicas: 1`.",
    ),
    Row(
        "metrics-port-is-health-port",
        OPERATOR,
        {"operator": {"metricsPort": 8081}},
        "operator.metricsPort and operator.healthPort are both 8081: give them different ports.",
    ),
    Row(
        "secure-metrics-without-metrics",
        OPERATOR,
        {"webhook": {"metricsSecure": True}},
        "webhook.metricsSecure is true but webhook.metricsPort is 0 (metrics off): set a metrics port or "
        "`webhook.metricsSecure: false`.",
    ),
    Row(
        "service-monitor-without-metrics",
        OPERATOR,
        {"operator": {"metricsPort": 0, "metrics": {"serviceMonitor": {"enabled": True}}}},
        "operator.metrics.serviceMonitor.enabled is true but operator.metricsPort is 0 (metrics off): set "
        "`operator.metricsPort`, e.g. 8080.",
    ),
    Row(
        "webhook-server-port-is-health-port",
        OPERATOR,
        {"webhook": {"serverPort": 8081}},
        "webhook.serverPort must differ from webhook.healthPort and webhook.metricsPort.",
    ),
    Row(
        "webhook-service-port-is-metrics-port",
        OPERATOR,
        {"webhook": {"metricsPort": 443}},
        "webhook.service.port (443) equals webhook.metricsPort or webhook.healthPort, and all are ports of "
        "the webhook Service: give them different ports.",
    ),
    Row(
        "cert-manager-and-own-secret",
        OPERATOR,
        {
            "certManager": {"enabled": True},
            "webhook": {"tls": {"existingSecret": "tls", "caBundle": PEM}},
        },
        "certManager.enabled is true and webhook.tls.existingSecret is set: choose one TLS source. "
        "Unset `webhook.tls.existingSecret` to let cert-manager issue the certificate, or set "
        "`certManager.enabled: false` to use your Secret.",
    ),
    Row(
        "own-secret-without-ca",
        OPERATOR,
        {"certManager": {"enabled": False}, "webhook": {"tls": {"existingSecret": "tls"}}},
        "webhook.tls.existingSecret is set but webhook.tls.caBundle is empty: set `webhook.tls.caBundle` to the "
        "PEM CA that signed the Secret's certificate (the API server needs it to call the webhook).",
    ),
    Row(
        "ca-without-own-secret",
        OPERATOR,
        {"webhook": {"tls": {"caBundle": PEM}}},
        "webhook.tls.caBundle is set without webhook.tls.existingSecret: it is only used with your own Secret. "
        "Set `webhook.tls.existingSecret` or remove `webhook.tls.caBundle`.",
    ),
    Row(
        "ca-not-pem",
        OPERATOR,
        {
            "certManager": {"enabled": False},
            "webhook": {"tls": {"existingSecret": "tls", "caBundle": "TUlJQg=="}},
        },
        "webhook.tls.caBundle must be PEM text (-----BEGIN CERTIFICATE-----), not base64.",
        schema=(
            "/webhook/tls/caBundle",
            r"'TUlJQg==' does not match pattern '^(|(-----BEGIN CERTIFICATE-----\\r?\\n([A-Za-z0-9+/=]+\\r?\\n)+"
            r"-----END CERTIFICATE-----(\\r?\\n)*)+)$'",
        ),
        why="the schema gives caBundle a pattern: empty or PEM certificates",
    ),
    Row(
        "issuer-without-cert-manager",
        OPERATOR,
        {"certManager": {"enabled": False, "issuerRef": {"name": "ca", "kind": "ClusterIssuer"}}},
        "certManager.issuerRef is set but certManager.enabled is false: enable cert-manager or "
        "remove the issuerRef.",
    ),
    Row(
        "certificate-too-short",
        OPERATOR,
        {"certManager": {"duration": "59m", "renewBefore": "30m"}},
        "certManager.duration (59m) is shorter than 1h, the minimum cert-manager accepts.",
    ),
    Row(
        "renewal-too-short",
        OPERATOR,
        {"certManager": {"renewBefore": "4m59s"}},
        "certManager.renewBefore (4m59s) is shorter than 5m, the minimum cert-manager accepts.",
    ),
    Row(
        "renewal-not-before-expiry",
        OPERATOR,
        {"certManager": {"duration": "2h", "renewBefore": "120m"}},
        "certManager.renewBefore (120m) must be shorter than certManager.duration (2h), or "
        "cert-manager rejects the Certificate.",
    ),
    Row(
        "issuer-without-name",
        OPERATOR,
        {"certManager": {"issuerRef": {"kind": "ClusterIssuer"}}},
        "certManager.issuerRef.name is required when certManager.issuerRef is set.",
    ),
    Row(
        "name-not-dns-1035",
        OPERATOR,
        {"nameOverride": "1slurm"},
        'the name "1slurm" is not a DNS-1035 label, and it names the operator and webhook Services: set '
        "`nameOverride` to a name that starts with a letter and holds only lowercase letters, digits and '-'.",
    ),
    Row(
        "service-accounts-collide",
        OPERATOR,
        {
            "operator": {"serviceAccount": {"name": "slinky"}},
            "webhook": {"serviceAccount": {"name": "slinky"}},
        },
        'the operator and webhook ServiceAccounts would both be named "slinky": set different '
        "`operator.serviceAccount.name` and `webhook.serviceAccount.name`, or `webhook.serviceAccount.create: "
        "false` to share the operator's.",
    ),
    Row(
        "service-account-is-the-test-account",
        OPERATOR,
        {"webhook": {"serviceAccount": {"name": "rel-slurm-operator-test"}}},
        'webhook.serviceAccount.name ("rel-slurm-operator-test") is the name of the helm test ServiceAccount: '
        "choose another name.",
    ),
    Row(
        "pod-label-the-chart-sets",
        OPERATOR,
        {"webhook": {"podLabels": {"app.kubernetes.io/component": "other"}}},
        'webhook.podLabels sets "app.kubernetes.io/component", which the chart sets itself (and the Deployment '
        "selector may rely on): remove it.",
    ),
    Row(
        "monitor-label-the-chart-sets",
        OPERATOR,
        {"operator": {"metrics": {"serviceMonitor": {"labels": {"helm.sh/chart": "other"}}}}},
        'operator.metrics.serviceMonitor.labels sets "helm.sh/chart", which the chart sets itself: remove it.',
    ),
    Row(
        "default-container-annotation",
        OPERATOR,
        {"operator": {"podAnnotations": {"kubectl.kubernetes.io/default-container": "other"}}},
        'operator.podAnnotations sets "kubectl.kubernetes.io/default-container", which the chart sets to its '
        "own container: remove it.",
    ),
    Row(
        "env-twice",
        OPERATOR,
        {
            "operator": {
                "extraEnv": [
                    {"name": "A", "value": "1"},
                    {"name": "B"},
                    {"name": "A", "value": "2"},
                ]
            }
        },
        'operator.extraEnv[2] sets "A" again: give each variable once.',
    ),
    Row(
        "scrape-timeout-above-interval",
        OPERATOR,
        {
            "operator": {
                "metrics": {
                    "serviceMonitor": {"enabled": True, "interval": "30s", "scrapeTimeout": "1m"}
                }
            }
        },
        "operator.metrics.serviceMonitor.scrapeTimeout (1m) is longer than its interval (30s): Prometheus "
        "rejects the scrape config. Lower scrapeTimeout or raise interval.",
    ),
    Row(
        "profile-not-on-loopback",
        OPERATOR,
        {"operator": {"profile": True, "profileAddr": "0.0.0.0:6060"}},
        "operator.profileAddr (0.0.0.0:6060) is not a loopback address: pprof would be served on the "
        "pod's network (heap and goroutine dumps, CPU profiles). Use `localhost:6060` and `kubectl "
        "port-forward`, or set `operator.profileAllowRemote: true` to open it on purpose.",
    ),
    Row(
        "profile-port-taken",
        OPERATOR,
        {"operator": {"profile": True, "profileAddr": "localhost:8080"}},
        "operator.profileAddr (localhost:8080) uses the port of operator.healthPort or "
        "operator.metricsPort: give pprof its own port.",
    ),
    Row(
        "network-policy-without-api-ports",
        OPERATOR,
        {"networkPolicy": {"apiServer": {"ports": []}}},
        "networkPolicy.apiServer.ports is empty: an egress rule without ports would allow every port. List the "
        "API server ports, e.g. `[443, 6443]`.",
    ),
    Row(
        "tests-without-rbac",
        OPERATOR,
        {"rbac": {"create": False}},
        "tests.enabled needs rbac.create (the test pod gets its own read-only Role): set `tests.enabled: "
        "false` when RBAC is managed outside the chart.",
    ),
    Row(
        "image-repository-required",
        OPERATOR,
        {"webhook": {"image": {"repository": ""}}},
        "webhook.image.repository is required: the image's repository, with or without "
        "its registry host (e.g. ghcr.io/slinkyproject/slurmctld)",
        schema=("/webhook/image/repository", "minLength: got 0, want 1"),
        why="the schema gives every image repository, and an image given as a string, minLength 1",
    ),
)


# -- slurm-cluster -------------------------------------------------------------------------------

CRDS = "slurm-operator-crds"
CRDS_ROWS = (
    Row(
        "crd-file-not-yaml",
        CRDS,
        {},
        "crds.enabled: files/crds/zz-broken.yaml is not valid YAML: error converting YAML to JSON: yaml: line 1: "
        "did not find expected ',' or ']'",
        files={"files/crds/zz-broken.yaml": "kind: [CustomResourceDefinition\n"},
    ),
    Row(
        "crd-file-holds-another-kind",
        CRDS,
        {},
        'crds.enabled: files/crds/zz-configmap.yaml holds a "ConfigMap", only CustomResourceDefinition '
        "documents belong in files/crds/",
        files={
            "files/crds/zz-configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stray\n"
        },
    ),
    Row(
        "crd-file-document-without-kind",
        CRDS,
        {},
        'crds.enabled: files/crds/zz-note.yaml holds a "document without kind", only CustomResourceDefinition '
        "documents belong in files/crds/",
        files={"files/crds/zz-note.yaml": "note: not a Kubernetes object\n"},
    ),
    Row(
        "crds-test-image-repository-required",
        CRDS,
        {"tests": {"image": {"repository": ""}}},
        "tests.image.repository is required: the image's repository, with or without "
        "its registry host (e.g. ghcr.io/slinkyproject/slurmctld)",
        schema=("/tests/image/repository", "minLength: got 0, want 1"),
        why="the schema gives every image repository minLength 1",
    ),
)

CLUSTER = "slurm-cluster"
GPU = {"gpu": {"count": 8}}
KEDA = {"enabled": True, "type": "keda", "minReplicas": 0}
OWN_PARTITION = {"partition": {"enabled": True}}
"""A NodeSet entry with its own partition (the chart lists no NodeSet by default)."""
CLUSTER_ROWS = (
    Row(
        "value-helm-yaml-cannot-carry",
        CLUSTER,
        {"nodesets": {"a": {"updateStrategy": {"scheduledUpdate": {"duration": "\x7f"}}}}},
        "nodesets.a.updateStrategy.scheduledUpdate.duration holds a control character (such as "
        "U+007F, DEL) that Helm's YAML cannot carry: remove it",
    ),
    Row(
        "slurm-conf-file",
        CLUSTER,
        {"configFiles": {"slurm.conf": "ClusterName=x\n"}},
        "configFiles.slurm.conf is refused: the operator generates slurm.conf. Put extra settings in "
        "`controller.extraConf`/`controller.extraConfMap` (slurm.conf).",
    ),
    Row(
        "slurmdbd-conf-file",
        CLUSTER,
        {"configFiles": {"slurmdbd.conf": "DbdHost=x\n"}},
        "configFiles.slurmdbd.conf is refused: the operator generates slurmdbd.conf. Put extra settings in "
        "`controller.extraConf`/`controller.extraConfMap` or `accounting.extraConf` (slurmdbd.conf).",
    ),
    Row(
        "partition-without-nodesets",
        CLUSTER,
        {"partitions": {"debug": {"nodesets": []}}},
        "partitions.debug.nodesets is empty: list NodeSet names (keys of `nodesets`) or `[ALL]`.",
    ),
    Row(
        "partition-names-unknown-nodeset",
        CLUSTER,
        {"nodesets": {"compute": {}}, "partitions": {"debug": {"nodesets": ["compute", "gpu"]}}},
        'partitions.debug.nodesets names NodeSet "gpu" (partition "debug"), which is unknown or disabled: known '
        "NodeSets are [compute]. Fix the name, enable `nodesets.gpu`, or use `ALL`.",
    ),
    Row(
        "partition-default-names-disabled-nodeset",
        CLUSTER,
        {
            "partitionDefaults": {"nodesets": ["gpu"]},
            "partitions": {"debug": {}},
            "nodesets": {"compute": {}, "gpu": {"enabled": False}},
        },
        'partitionDefaults.nodesets names NodeSet "gpu" (partition "debug"), which is unknown or disabled: known '
        "NodeSets are [compute]. Fix the name, enable `nodesets.gpu`, or use `ALL`.",
    ),
    Row(
        "partition-defined-twice",
        CLUSTER,
        {"nodesets": {"compute": OWN_PARTITION}, "partitions": {"compute": {"nodesets": ["ALL"]}}},
        'partition "compute" is defined twice: by `partitions.compute` and by '
        "`nodesets.compute.partition.enabled`. Keep one.",
    ),
    Row(
        "partition-topology-without-topology",
        CLUSTER,
        {"nodesets": {"compute": {"partition": {"enabled": True, "topology": "fabric"}}}},
        'nodesets.compute.partition.topology is "fabric" but no topology is configured: set `topology.yaml` '
        "or `topology.configMapRef`.",
    ),
    Row(
        "partition-topology-undeclared",
        CLUSTER,
        {
            "topology": {"yaml": TOPOLOGY},
            "partitions": {"debug": {"nodesets": ["ALL"], "topology": "rails"}},
        },
        'partitions.debug.topology is "rails" but topology.yaml declares [fabric].',
    ),
    Row(
        "topology-from-two-places",
        CLUSTER,
        {"topology": {"yaml": TOPOLOGY, "configMapRef": {"name": "fabric"}}},
        "topology.yaml comes from more than one place (`topology.yaml`, `topology.configMapRef`, "
        "`configFiles.topology.yaml`): keep one.",
    ),
    Row(
        "topology-configmap-key",
        CLUSTER,
        {"topology": {"configMapRef": {"name": "fabric", "key": "fabric.yaml"}}},
        'topology.configMapRef.key is "fabric.yaml": the ConfigMap is mounted as files in /etc/slurm, so the '
        "key must be `topology.yaml`.",
    ),
    Row(
        "topology-not-a-list",
        CLUSTER,
        {"topology": {"yaml": "topology: fabric\n"}},
        "topology.yaml must be a YAML list of topologies (`- topology: <name>` with tree, block or flat), e.g. "
        "the output of `slinky-topology generate --format values`.",
    ),
    Row(
        "gpus-of-two-vendors",
        CLUSTER,
        {"nodesets": {"compute": GPU, "mi300": {"gpu": {"vendor": "amd", "count": 8}}}},
        "NodeSets use GPUs of several vendors (amd,nvidia): one generated gres.conf cannot AutoDetect both. "
        "Provide `configFiles.gres.conf` (e.g. `NodeName=<nodeset>-[0-63] AutoDetect=nvml` lines).",
    ),
    Row(
        "gres-and-count",
        CLUSTER,
        {
            "nodesetDefaults": {"gpu": {"count": 8}},
            "nodesets": {"compute": {"gpu": {"gres": "gpu:h100:8"}}},
        },
        'nodesets.compute.gpu.gres and nodesetDefaults.gpu.count are both set for NodeSet "compute": set either '
        "`gres` or `type`/`count`, not both.",
    ),
    Row(
        "autoscaling-a-daemonset",
        CLUSTER,
        {"nodesets": {"compute": {"scalingMode": "DaemonSet", "autoscaling": {"enabled": True}}}},
        "nodesets.compute.autoscaling.enabled is true but nodesets.compute.scalingMode is DaemonSet (NodeSet "
        '"compute"): a DaemonSet-mode NodeSet has no replica count to scale. Use `scalingMode: StatefulSet`.',
    ),
    Row(
        "autoscaling-min-above-max",
        CLUSTER,
        {"nodesets": {"compute": {"autoscaling": {"enabled": True, "minReplicas": 5}}}},
        "nodesets.compute.autoscaling.minReplicas (5) is above nodesetDefaults.autoscaling.maxReplicas (4).",
    ),
    Row(
        "hpa-to-zero",
        CLUSTER,
        {"nodesets": {"compute": {"autoscaling": {"enabled": True, "minReplicas": 0}}}},
        "nodesets.compute.autoscaling.minReplicas is 0 with nodesetDefaults.autoscaling.type hpa (NodeSet "
        '"compute"): the HPA cannot scale to zero. Use `type: keda` (with `keda.idleReplicaCount: 0`) or '
        "minReplicas >= 1.",
    ),
    Row(
        "keda-without-trigger",
        CLUSTER,
        {"nodesets": {"compute": {"autoscaling": KEDA}}},
        "nodesets.compute.autoscaling.type is keda but neither `autoscaling.keda.triggers` nor "
        '`autoscaling.keda.prometheusServer` is set for NodeSet "compute": KEDA needs a trigger.',
    ),
    Row(
        "keda-default-trigger-without-partition",
        CLUSTER,
        {
            "controller": {"metrics": {"enabled": True}},
            "nodesets": {
                "batch": {"autoscaling": {**KEDA, "keda": {"prometheusServer": "http://prom:9090"}}}
            },
        },
        "nodesets.batch.autoscaling.keda.prometheusServer: the default trigger counts pending jobs of partition "
        '"batch", which NodeSet "batch" does not have. Set `nodesets.batch.partition.enabled: true` or give '
        "`keda.triggers`.",
    ),
    Row(
        "keda-default-trigger-without-metrics",
        CLUSTER,
        {
            "nodesets": {
                "compute": {
                    **OWN_PARTITION,
                    "autoscaling": {**KEDA, "keda": {"prometheusServer": "http://prom:9090"}},
                }
            }
        },
        "nodesets.compute.autoscaling.keda.prometheusServer: the default trigger reads "
        "slurm_partition_jobs_pending, served only with `controller.metrics.enabled: true` (and scraped by "
        "that Prometheus).",
    ),
    Row(
        "keda-idle-not-below-min",
        CLUSTER,
        {
            "nodesetDefaults": {"autoscaling": {"keda": {"idleReplicaCount": 1}}},
            "nodesets": {
                "compute": {
                    "autoscaling": {
                        **KEDA,
                        "minReplicas": 1,
                        "keda": {"triggers": [{"type": "cpu", "metadata": {"value": "80"}}]},
                    }
                }
            },
        },
        "nodesetDefaults.autoscaling.keda.idleReplicaCount (1) must be below "
        "nodesets.compute.autoscaling.minReplicas (1) (KEDA rule); for plain scale-to-zero set `minReplicas: 0` "
        "and leave idleReplicaCount at -1.",
    ),
    Row(
        "external-controller-without-host",
        CLUSTER,
        {
            "controller": {"external": True, "externalConfig": {"host": ""}},
            "slurmKey": {"create": False, "secretRef": {"name": "slurm-key"}},
            "jwtKey": {"create": False, "secretRef": {"name": "jwt-key"}},
        },
        "controller.external is true but controller.externalConfig.host is empty: set the external slurmctld "
        "host.",
    ),
    Row(
        "external-controller-with-metrics",
        CLUSTER,
        {
            "controller": {
                "external": True,
                "externalConfig": {"host": "ctld.example"},
                "metrics": {"enabled": True},
            },
            "slurmKey": {"create": False, "secretRef": {"name": "slurm-key"}},
            "jwtKey": {"create": False, "secretRef": {"name": "jwt-key"}},
        },
        "controller.metrics.enabled needs a slurmctld in Kubernetes; it is ignored with controller.external: "
        "set it to false.",
    ),
    Row(
        "service-monitor-without-metrics",
        CLUSTER,
        {"controller": {"metrics": {"serviceMonitor": {"enabled": True}}}},
        "controller.metrics.serviceMonitor.enabled is true but controller.metrics.enabled is false: set "
        "`controller.metrics.enabled: true`.",
    ),
    Row(
        "existing-claim-and-storage-class",
        CLUSTER,
        {"controller": {"persistence": {"existingClaim": "state", "storageClassName": "fast"}}},
        "controller.persistence.existingClaim and controller.persistence.storageClassName are both set: the "
        "storage class only applies to a PVC the operator creates. Keep one.",
    ),
    Row(
        "external-accounting-without-host",
        CLUSTER,
        {"accounting": {"enabled": True, "external": True, "externalConfig": {"host": ""}}},
        "accounting.external is true but accounting.externalConfig.host is empty.",
    ),
    Row(
        "accounting-without-database",
        CLUSTER,
        {"accounting": {"enabled": True, "storageConfig": {"host": ""}}},
        "accounting.enabled needs the database: set `accounting.storageConfig.host` and "
        "`accounting.storageConfig.passwordKeyRef.{name,key}` (a Secret you create with the MariaDB/MySQL password).",
    ),
    Row(
        "enforcement-without-accounting",
        CLUSTER,
        {"scheduling": {"preset": "none", "accountingEnforce": ["limits"]}},
        "scheduling.accountingEnforce is set but accounting.enabled is false: enforcement needs slurmdbd.",
    ),
    Row(
        "age-weight-without-accounting",
        CLUSTER,
        {"scheduling": {"priority": {"weights": {"age": 1000}}}},
        "scheduling.priority.weights.age is set but accounting is off: Slurm ignores PriorityWeightAge without "
        "slurmdbd. Enable `accounting` or remove the weight.",
    ),
    Row(
        "fairshare-weight-without-accounting",
        CLUSTER,
        {"scheduling": {"priority": {"weights": {"fairshare": 10000}}}},
        "scheduling.priority.weights.fairshare is set but accounting is off: Slurm ignores "
        "PriorityWeightFairshare without slurmdbd. Enable `accounting` or remove the weight.",
    ),
    Row(
        "gres-weight-without-gpus",
        CLUSTER,
        {"scheduling": {"priority": {"weightTRES": "CPU=1000,GRES/gpu=3000"}}},
        'scheduling.priority.weightTRES names a GRES but no NodeSet has GPUs: Slurm refuses to start ("not a '
        'configured TRES type"). Remove the GRES weight or add a GPU NodeSet.',
    ),
    Row(
        "gres-weight-without-accounting",
        CLUSTER,
        {"nodesets": {"compute": GPU}, "scheduling": {"priority": {"weightTRES": "GRES/gpu=3000"}}},
        "scheduling.priority.weightTRES names a GRES, which needs it tracked as a TRES "
        "(`AccountingStorageTRES=gres/gpu`, set by the chart only with accounting): enable `accounting` or "
        "remove the GRES weight.",
    ),
    Row(
        "sssd-without-conf",
        CLUSTER,
        {"sssd": {"conf": "  \n"}},
        "sssd.conf is empty and sssd.secretRef.name is not set: login and SSH-enabled NodeSets need an "
        "sssd.conf.",
    ),
    Row(
        "cgroups-disabled-default-proctrack",
        CLUSTER,
        {"configFiles": {"cgroup.conf": "CgroupPlugin=disabled\n"}},
        "configFiles.cgroup.conf sets CgroupPlugin=disabled, but slurm.conf keeps a plugin that needs cgroups "
        "(Slurm's default `ProctrackType=proctrack/cgroup`, or `TaskPlugin=task/cgroup`): every slurmd would "
        'exit ("Trying to initialize cgroups but CgroupPlugin=disabled"). Set '
        "`controller.extraConfMap.ProctrackType: proctrack/linuxproc` and no cgroup TaskPlugin (e.g. "
        "`TaskPlugin: task/none`), or the same lines in `controller.extraConf`.",
    ),
    Row(
        "cgroups-disabled-cgroup-task-plugin",
        CLUSTER,
        {
            "configFiles": {"cgroup.conf": "IgnoreSystemd=yes\ncgroupplugin = disabled\n"},
            "controller": {
                "extraConf": "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/affinity,task/cgroup"
            },
        },
        "configFiles.cgroup.conf sets CgroupPlugin=disabled, but slurm.conf keeps a plugin that needs cgroups "
        "(Slurm's default `ProctrackType=proctrack/cgroup`, or `TaskPlugin=task/cgroup`): every slurmd would "
        'exit ("Trying to initialize cgroups but CgroupPlugin=disabled"). Set '
        "`controller.extraConfMap.ProctrackType: proctrack/linuxproc` and no cgroup TaskPlugin (e.g. "
        "`TaskPlugin: task/none`), or the same lines in `controller.extraConf`.",
    ),
    Row(
        "a3mega-networks",
        CLUSTER,
        {
            "nodesets": {"gpu": {"replicas": 1}},
            "vendor": {
                "google": {
                    "a3mega": [
                        {"targetNodeSet": "gpu", "nodePool": "a3", "networks": ["default", "vpc1"]}
                    ]
                }
            },
        },
        "Google Cloud GKE A3 Mega requires exactly 9 networks, but 2 were specified. Set "
        "`vendor.google.a3mega[0].networks` to the 9 VPC networks of the node pool (eth0 on the first).",
    ),
    Row(
        "script-file-names-clash",
        CLUSTER,
        {
            "prologScripts": {"slurmctld-x.sh": "#!/bin/sh\ntrue\n"},
            "prologSlurmctldScripts": {"x.sh": "#!/bin/sh\ntrue\n"},
        },
        "prologScripts.slurmctld-x.sh and prologSlurmctldScripts.x.sh become the same file "
        "/etc/slurm/prolog-slurmctld-x.sh (script keys get their kind's prefix: `prolog-`, `epilog-`, "
        "`prolog-slurmctld-`, `epilog-slurmctld-`): one would replace the others, and Slurm would run it for "
        "each of their directives. Rename the keys so that each file name is unique.",
    ),
    Row(
        "partition-named-default",
        CLUSTER,
        {"partitions": {"Default": {"nodesets": ["ALL"]}}},
        "partitions.Default makes `PartitionName=Default`, Slurm's defaults record (DEFAULT in any case), not a "
        "partition: its options would apply to every partition after it. Give the partition another name "
        "(`Default=YES` in a partition's config makes it the default one).",
    ),
    Row(
        "nodeset-partition-named-default",
        CLUSTER,
        {"nodesets": {"default": OWN_PARTITION}},
        "nodesets.default.partition.enabled makes `PartitionName=default`, Slurm's defaults record (DEFAULT in "
        "any case), not a partition: its options would apply to every partition after it. Give the partition "
        "another name (`Default=YES` in a partition's config makes it the default one).",
    ),
    Row(
        "nodeset-named-all",
        CLUSTER,
        {"nodesets": {"all": {}}},
        "nodesets.all is refused: a partition's `Nodes=all` is Slurm's keyword ALL (every node in the cluster), "
        "so the NodeSet's name could not select it. Rename the NodeSet.",
    ),
    Row(
        "gpus-declared-twice",
        CLUSTER,
        {"nodesets": {"compute": {**GPU, "extraConf": "Weight=10 gres=gpu:h100:8"}}},
        "nodesets.compute.extraConf declares GPUs (gpu:h100:8) and so does nodesets.compute.gpu.count (NodeSet "
        '"compute"): Slurm would count both. Declare the GPUs once, in `gpu` (or by A3 Mega); a `Gres` of '
        "extraConf/extraConfMap is for other GRES only.",
    ),
    Row(
        "image-repository-required",
        CLUSTER,
        {"nodesets": {"compute": {"slurmd": {"image": {"repository": ""}}}}},
        "nodesets.compute.slurmd.image.repository is required: the image's repository, with or without "
        "its registry host (e.g. ghcr.io/slinkyproject/slurmctld)",
        schema=("/nodesets/compute/slurmd/image/repository", "minLength: got 0, want 1"),
        why="the schema gives every image repository minLength 1",
    ),
)

ROWS: tuple[Row, ...] = LABELER_ROWS + BRIDGE_ROWS + OPERATOR_ROWS + CRDS_ROWS + CLUSTER_ROWS


_COMMENT = re.compile(r"\{\{-?\s*/\*.*?\*/\s*-?\}\}", re.S)
_ACTION = re.compile(r"\{\{-?(?P<body>.*?)-?\}\}", re.S)
_GO_STRING = r'"(?P<format>(?:[^"\\]|\\.)*)"'
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|`[^`]*`|\b(?:fail|required)\b|\bappend \$errors\b', re.S)
_CALL = re.compile(r"(?:fail|required|append \$errors)\s+(?:\(\s*printf\s+)?" + _GO_STRING)
_VERB = re.compile(r"%[sdqv%]")
_GO_ESCAPE = re.compile(r"\\(.)")


@dataclass(frozen=True)
class Message:
    """A message format in a chart template, and where it is."""

    chart: str
    where: str
    format: str

    def pattern(self) -> re.Pattern[str]:
        """The format as a regular expression: each verb stands for what it can print."""
        parts = []
        end = 0
        for verb in _VERB.finditer(self.format):
            parts.append(re.escape(self.format[end : verb.start()]))
            parts.append(
                {"%s": ".*?", "%v": ".*?", "%d": "-?[0-9]+", "%q": '".*?"', "%%": "%"}[verb[0]]
            )
            end = verb.end()
        parts.append(re.escape(self.format[end:]))
        return re.compile("".join(parts), re.S)


def _unquote(text: str) -> str:
    return _GO_ESCAPE.sub(lambda m: {"n": "\n", "t": "\t"}.get(m[1], m[1]), text)


def template_messages(chart: charts.Chart) -> tuple[list[Message], list[str]]:
    """Every ``fail``, ``required`` and ``append $errors`` message in the chart's templates, and
    the places of such calls whose message is not a literal format (which the table cannot match)."""
    messages: list[Message] = []
    unread: list[str] = []
    for path in sorted(p for p in (chart.path / "templates").rglob("*") if p.is_file()):
        # comments go first (their "Usage: {{ include ... }}" lines hold actions), lines stay put
        text = _COMMENT.sub(lambda m: "\n" * m[0].count("\n"), path.read_text(encoding="utf-8"))
        for action in _ACTION.finditer(text):
            body = action["body"]
            for token in _TOKEN.finditer(body):
                if token[0][0] in '"`':
                    continue  # a string
                line = text.count("\n", 0, action.start("body") + token.start()) + 1
                where = f"{path.relative_to(chart.path.parent)}:{line}"
                call = _CALL.match(body, token.start())
                if call is None:
                    unread.append(where)
                else:
                    messages.append(Message(chart.name, where, _unquote(call["format"])))
    return messages, unread
