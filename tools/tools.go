//go:build tools

// Package tools records the commands this module builds, so that `go mod tidy` keeps
// their dependencies. It is never compiled (the "tools" build tag is never set); the
// binaries are built with `go build <package>` by scripts/slinky_harness/build/controlplane.py.
package tools

import (
	_ "github.com/SlinkyProject/slurm-bridge/cmd/admission"
	_ "github.com/SlinkyProject/slurm-bridge/cmd/controllers"
	_ "github.com/SlinkyProject/slurm-bridge/cmd/scheduler"
	_ "github.com/SlinkyProject/slurm-operator/cmd/manager"
	_ "github.com/SlinkyProject/slurm-operator/cmd/webhook"
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "sigs.k8s.io/kwok/cmd/kwok"
	_ "sigs.k8s.io/kwok/cmd/kwokctl"
)
