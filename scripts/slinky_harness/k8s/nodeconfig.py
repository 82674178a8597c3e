"""The real node's configuration (slinky_harness.k8s.realnode): its names and addresses, the
files containerd, CNI, kubelet and kube-proxy read, and the CoreDNS objects it deploys as
``kube-dns``. Pure data: nothing here starts or changes anything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from slinky_harness.build.nodeparts import COREDNS_IMAGE, PAUSE_IMAGE

NODE_NAME = "realnode"
NETNS_NAME = "slinky-realnode"
NETNS = Path("/run/netns") / NETNS_NAME
RUN_DIR = Path("/run/slinky-realnode")
"""containerd's sockets (short and fixed: shims are found by them)."""
ROOT = Path("/var/lib/slinky-realnode")
"""kubelet's and containerd's roots (short and fixed: kubelet makes sockets in its root)."""
NODE_IP = "10.250.0.1"
SERVICE_IP = "10.0.0.1"
"""The ``kubernetes`` Service (first address of kwokctl's service range 10.0.0.0/24)."""
DNS_IP = "10.0.0.10"
POD_CIDR = "10.88.0.0/16"
CNI_BIN = Path("/usr/lib/cni")


def containerd_config(state: Path) -> str:
    """containerd 1.6's configuration: its root in :data:`ROOT`, sockets in :data:`RUN_DIR`."""
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{ROOT}/containerd"
state = "{RUN_DIR}/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = "{RUN_DIR}/containerd.sock"

[ttrpc]
  address = "{RUN_DIR}/containerd.sock.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "{ROOT}/opt"

[{cri}]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  [{cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [{cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [{cri}.containerd.runtimes.runc.options]
        BinaryName = "runc"
        SystemdCgroup = false
  [{cri}.cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{state}/cni/net.d"
"""


def cni_config(state: Path) -> dict[str, Any]:
    """Bridge ``cni0`` with host-local addresses from :data:`POD_CIDR`, and portmap."""
    return {
        "cniVersion": "0.4.0",
        "name": NETNS_NAME,
        "plugins": [
            {
                "type": "bridge",
                "bridge": "cni0",
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": POD_CIDR}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(state / "cni" / "ipam"),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def kubelet_config(state: Path) -> dict[str, Any]:
    """kubelet's configuration (see the module docstring for why each setting)."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "containerRuntimeEndpoint": f"unix://{RUN_DIR}/containerd.sock",
        "address": NODE_IP,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
        "authorization": {"mode": "AlwaysAllow"},
        "clusterDNS": [DNS_IP],
        "clusterDomain": "cluster.local",
        "resolvConf": "",
        "failSwapOn": False,
        "podLogsDir": str(state / "pod-logs"),
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%"},
        "serializeImagePulls": False,
        "shutdownGracePeriod": "0s",
        "rotateCertificates": False,
        "registerNode": True,
    }


def kube_proxy_config(kubeconfig: Path) -> dict[str, Any]:
    """kube-proxy in iptables mode, leaving the machine-wide conntrack settings alone."""
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": NODE_NAME,
        "mode": "iptables",
        "clusterCIDR": POD_CIDR,
        "bindAddress": NODE_IP,
        "healthzBindAddress": "127.0.0.1:10256",
        "metricsBindAddress": "127.0.0.1:10249",
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
    }


COREFILE = """.:53 {
    errors
    health :8080
    ready :8181
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 30
    loop
    reload
    loadbalance
}
"""


def coredns_manifests() -> list[dict[str, Any]]:
    """``kube-dns``: CoreDNS on the real node, the Service at :data:`DNS_IP`, its RBAC."""
    meta = {"name": "coredns", "namespace": "kube-system"}
    labels = {"k8s-app": "kube-dns"}
    container = {
        "name": "coredns",
        "image": COREDNS_IMAGE,
        "imagePullPolicy": "Never",
        "args": ["-conf", "/etc/coredns/Corefile"],
        "ports": [
            {"name": "dns", "containerPort": 53, "protocol": "UDP"},
            {"name": "dns-tcp", "containerPort": 53, "protocol": "TCP"},
        ],
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8181}, "periodSeconds": 1},
        "volumeMounts": [{"name": "config", "mountPath": "/etc/coredns"}],
    }
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "slinky-suite:coredns"},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["endpoints", "services", "pods", "namespaces"],
                    "verbs": ["list", "watch"],
                },
                {
                    "apiGroups": ["discovery.k8s.io"],
                    "resources": ["endpointslices"],
                    "verbs": ["list", "watch"],
                },
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "slinky-suite:coredns"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "slinky-suite:coredns",
            },
            "subjects": [{"kind": "ServiceAccount", **meta}],
        },
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"Corefile": COREFILE}},
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta,
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": "coredns",
                        "nodeSelector": {"kubernetes.io/hostname": NODE_NAME},
                        "dnsPolicy": "Default",
                        # cluster DNS stays when slurm-bridge taints the node it registers in
                        # Slurm (NoExecute evicts every pod that does not tolerate it)
                        "tolerations": [
                            {
                                "key": "slinky.slurm.net/managed-node",
                                "operator": "Exists",
                                "effect": "NoExecute",
                            }
                        ],
                        "terminationGracePeriodSeconds": 1,
                        "containers": [container],
                        "volumes": [{"name": "config", "configMap": {"name": "coredns"}}],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": "kube-system", "labels": labels},
            "spec": {
                "clusterIP": DNS_IP,
                "selector": labels,
                "ports": [
                    {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                    {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                ],
            },
        },
    ]
