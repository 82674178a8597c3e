{{- /*
SPDX-License-Identifier: Apache-2.0
RBAC helpers. Rules live in files/rbac/<component>-rules.yaml. ClusterRoles and their bindings
are named as upstream names them: after the component ("slurm-bridge.component.fullname").
*/}}

{{- /*
Whether a component's RBAC is rendered: rbac.create and the component deployed.
Usage: {{ if include "slurm-bridge.rbac.enabled" (dict "context" . "component" "admission") }}
*/}}
{{- define "slurm-bridge.rbac.enabled" -}}
{{- if and .context.Values.rbac.create (or (ne .component "admission") .context.Values.admission.enabled) }}true{{- end }}
{{- end }}

{{- /*
ClusterRole ("kind" "ClusterRole") or ClusterRoleBinding ("kind" "ClusterRoleBinding") of a component.
Usage: {{ include "slurm-bridge.rbac.cluster" (dict "context" . "component" "scheduler" "kind" "ClusterRole") }}
*/}}
{{- define "slurm-bridge.rbac.cluster" -}}
{{- if include "slurm-bridge.rbac.enabled" . }}
{{- $file := include "slurm-bridge.rbacRules" . | fromYaml }}
{{- $name := include "slurm-bridge.component.fullname" . }}
{{- if eq .kind "ClusterRole" }}
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ $name }}
  labels:
    {{- include "slurm-bridge.labels" . | nindent 4 }}
rules:
  {{- toYaml $file.clusterRules | nindent 2 }}
{{- else }}
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ $name }}
  labels:
    {{- include "slurm-bridge.labels" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ $name }}
subjects:
  - kind: ServiceAccount
    name: {{ include "slurm-bridge.serviceAccountName" . | quote }}
    namespace: {{ include "slurm-bridge.namespace" .context }}
{{- end }}
{{- end }}
{{- end }}

{{- /*
Leader-election Role ("kind" "Role") or RoleBinding ("kind" "RoleBinding") of a component in the
release namespace (when it elects).
Usage: {{ include "slurm-bridge.rbac.leaderElection" (dict "context" . "component" "controllers" "kind" "Role") }}
*/}}
{{- define "slurm-bridge.rbac.leaderElection" -}}
{{- if and (include "slurm-bridge.rbac.enabled" .) (include "slurm-bridge.leaderElect" .) }}
{{- $file := include "slurm-bridge.rbacRules" . | fromYaml }}
{{- $name := printf "%s-leader" (include "slurm-bridge.component.fullname" . | trunc 56 | trimSuffix "-") }}
{{- $ns := include "slurm-bridge.namespace" .context }}
{{- if eq .kind "Role" }}
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $name }}
  namespace: {{ $ns }}
  labels:
    {{- include "slurm-bridge.labels" . | nindent 4 }}
rules:
  {{- toYaml $file.leaderElectionRules | nindent 2 }}
{{- else }}
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $name }}
  namespace: {{ $ns }}
  labels:
    {{- include "slurm-bridge.labels" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $name }}
subjects:
  - kind: ServiceAccount
    name: {{ include "slurm-bridge.serviceAccountName" . | quote }}
    namespace: {{ $ns }}
{{- end }}
{{- end }}
{{- end }}
