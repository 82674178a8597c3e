{{- /*
SPDX-License-Identifier: Apache-2.0
RBAC helpers. Rules live in files/rbac/<component>-rules.yaml (one place, checked by tests).
*/}}

{{- /*
Whether a component's RBAC is rendered: rbac.create and the component deployed.
Usage: {{ if include "slurm-operator.rbac.enabled" (dict "context" . "component" "webhook") }}
*/}}
{{- define "slurm-operator.rbac.enabled" -}}
{{- if and .context.Values.rbac.create (index .context.Values .component).enabled }}true{{- end }}
{{- end }}

{{- /*
Cluster-wide rules of a component: clusterRules, authDelegatorRules when its metrics are served
securely, and namespacedRules when all namespaces are watched.
Usage: {{ include "slurm-operator.rbac.clusterRules" (dict "context" . "component" "operator") | fromYamlArray }}
*/}}
{{- define "slurm-operator.rbac.clusterRules" -}}
{{- $file := include "slurm-operator.rbacRules" . | fromYaml }}
{{- $values := index .context.Values .component }}
{{- $rules := $file.clusterRules | default list }}
{{- if and (include "slurm-operator.metricsPort" $values.metricsPort | int) $values.metricsSecure }}
{{- $rules = concat $rules ($file.authDelegatorRules | default list) }}
{{- end }}
{{- if not (include "slurm-operator.namespaces" . | fromYamlArray) }}
{{- $rules = concat $rules ($file.namespacedRules | default list) }}
{{- end }}
{{- toYaml $rules }}
{{- end }}

{{- /*
ClusterRole of a component.
Usage: {{ include "slurm-operator.rbac.clusterRole" (dict "context" . "component" "operator") }}
*/}}
{{- define "slurm-operator.rbac.clusterRole" -}}
{{- if include "slurm-operator.rbac.enabled" . }}
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ include "slurm-operator.rbacName" . | quote }}
  labels:
    {{- include "slurm-operator.labels" . | nindent 4 }}
rules:
  {{- include "slurm-operator.rbac.clusterRules" . | nindent 2 }}
{{- end }}
{{- end }}

{{- /*
ClusterRoleBinding of a component.
Usage: {{ include "slurm-operator.rbac.clusterRoleBinding" (dict "context" . "component" "operator") }}
*/}}
{{- define "slurm-operator.rbac.clusterRoleBinding" -}}
{{- if include "slurm-operator.rbac.enabled" . }}
{{- $name := include "slurm-operator.rbacName" . }}
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ include "slurm-operator.rbacName" (merge (dict "binding" true) .) | quote }}
  labels:
    {{- include "slurm-operator.labels" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ $name | quote }}
subjects:
  - kind: ServiceAccount
    name: {{ include "slurm-operator.serviceAccountName" . | quote }}
    namespace: {{ include "slurm-operator.namespace" .context | quote }}
{{- end }}
{{- end }}

{{- /*
One Role per watched namespace with a component's namespacedRules (namespace-scoped mode only).
Usage: {{ include "slurm-operator.rbac.roles" (dict "context" . "component" "operator") }}
*/}}
{{- define "slurm-operator.rbac.roles" -}}
{{- $namespaces := include "slurm-operator.namespaces" . | fromYamlArray }}
{{- if and (include "slurm-operator.rbac.enabled" .) $namespaces }}
{{- $file := include "slurm-operator.rbacRules" . | fromYaml }}
{{- $name := include "slurm-operator.rbacName" . }}
{{- range $i, $ns := $namespaces }}
{{- if $i }}
---
{{- end }}
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $name | quote }}
  namespace: {{ $ns | quote }}
  labels:
    {{- include "slurm-operator.labels" $ | nindent 4 }}
rules:
  {{- toYaml $file.namespacedRules | nindent 2 }}
{{- end }}
{{- end }}
{{- end }}

{{- /*
One RoleBinding per watched namespace binding the component's Role to its ServiceAccount.
Usage: {{ include "slurm-operator.rbac.roleBindings" (dict "context" . "component" "operator") }}
*/}}
{{- define "slurm-operator.rbac.roleBindings" -}}
{{- $namespaces := include "slurm-operator.namespaces" . | fromYamlArray }}
{{- if and (include "slurm-operator.rbac.enabled" .) $namespaces }}
{{- $name := include "slurm-operator.rbacName" . }}
{{- $sa := include "slurm-operator.serviceAccountName" . }}
{{- $saNamespace := include "slurm-operator.namespace" .context }}
{{- range $i, $ns := $namespaces }}
{{- if $i }}
---
{{- end }}
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $name | quote }}
  namespace: {{ $ns | quote }}
  labels:
    {{- include "slurm-operator.labels" $ | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $name | quote }}
subjects:
  - kind: ServiceAccount
    name: {{ $sa | quote }}
    namespace: {{ $saNamespace | quote }}
{{- end }}
{{- end }}
{{- end }}

{{- /*
Components that use leader election (and so need the leader-election Role), as a YAML list.
Usage: {{ include "slurm-operator.rbac.leaderElectionComponents" . | fromYamlArray }}
*/}}
{{- define "slurm-operator.rbac.leaderElectionComponents" -}}
{{- $components := list }}
{{- if .Values.rbac.create }}
{{- if and .Values.operator.enabled .Values.operator.leaderElection }}
{{- $components = append $components "operator" }}
{{- end }}
{{- if and .Values.webhook.enabled .Values.webhook.leaderElection }}
{{- $components = append $components "webhook" }}
{{- end }}
{{- end }}
{{- toYaml $components }}
{{- end }}
