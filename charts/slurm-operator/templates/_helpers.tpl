{{- /*
SPDX-License-Identifier: Apache-2.0
Helpers of the slurm-operator chart. Every define is prefixed with "slurm-operator.".
The helpers the suite's charts share (name, namespace, image reference, ...) are generated into
_common.tpl.
*/}}

{{- /*
Name of the webhook objects (Deployment, Service, ServiceAccount, webhook configurations):
"<name>-webhook", as upstream Slinky names them.
Usage: {{ include "slurm-operator.webhook.name" . }}
*/}}
{{- define "slurm-operator.webhook.name" -}}
{{- printf "%s-webhook" (include "slurm-operator.name" . | trunc 55 | trimSuffix "-") }}
{{- end }}

{{- /*
Base name of a component's objects and its `app.kubernetes.io/name` label: "<name>" for the
operator's Deployment, Service and PDB, "<name>-<component>" for the others ("<name>-webhook",
upstream Slinky's names; "<name>-test" for the helm test pod).
Usage: {{ include "slurm-operator.componentObjectName" (dict "context" . "component" "operator") }}
*/}}
{{- define "slurm-operator.componentObjectName" -}}
{{- if eq .component "operator" }}
{{- include "slurm-operator.name" .context }}
{{- else if eq .component "webhook" }}
{{- include "slurm-operator.webhook.name" .context }}
{{- else }}
{{- printf "%s-%s" (include "slurm-operator.name" .context | trunc (int (sub 62 (len .component))) | trimSuffix "-") .component }}
{{- end }}
{{- end }}

{{- /*
Name of a component's RBAC objects, as upstream's. The ClusterRoleBinding (binding=true) is named
after the ServiceAccount the chart creates (`serviceAccount.name` when set); so is the operator's
ClusterRole, while the webhook's ClusterRole is always "<name>-webhook". Without a custom name:
"<fullname>" for the operator, "<name>-webhook" for the webhook. Roles and RoleBindings (our
namespace scoping) take the ClusterRole's name.
Usage: {{ include "slurm-operator.rbacName" (dict "context" . "component" "webhook" "binding" true) }}
*/}}
{{- define "slurm-operator.rbacName" -}}
{{- $sa := (index .context.Values .component).serviceAccount }}
{{- if and $sa.create $sa.name (or .binding (eq .component "operator")) }}
{{- $sa.name }}
{{- else if eq .component "operator" }}
{{- include "slurm-operator.fullname" .context }}
{{- else }}
{{- include "slurm-operator.webhook.name" .context }}
{{- end }}
{{- end }}

{{- /*
Selector labels, as upstream Slinky's (selectors are immutable, so `helm upgrade` from upstream's
chart keeps its Deployments): name ("<name>", "<name>-webhook" for the webhook) and instance.
Usage: {{ include "slurm-operator.selectorLabels" (dict "context" . "component" "operator") }}
*/}}
{{- define "slurm-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "slurm-operator.componentObjectName" . | quote }}
app.kubernetes.io/instance: {{ .context.Release.Name | quote }}
{{- end }}

{{- /*
Full metadata labels: selector labels plus chart, version, part-of and managed-by.
Usage: {{ include "slurm-operator.labels" (dict "context" . "component" "operator") }}
*/}}
{{- define "slurm-operator.labels" -}}
helm.sh/chart: {{ include "slurm-operator.chart" .context | quote }}
{{ include "slurm-operator.selectorLabels" . }}
app.kubernetes.io/component: {{ .component | quote }}
{{- with .context.Chart.AppVersion }}
app.kubernetes.io/version: {{ . | replace "+" "_" | trunc 63 | quote }}
{{- end }}
app.kubernetes.io/part-of: slurm-operator
app.kubernetes.io/managed-by: {{ .context.Release.Service | quote }}
{{- end }}

{{- /*
ServiceAccount name of a component ("operator" or "webhook").
Usage: {{ include "slurm-operator.serviceAccountName" (dict "context" . "component" "webhook") }}
*/}}
{{- define "slurm-operator.serviceAccountName" -}}
{{- $sa := (index .context.Values .component).serviceAccount }}
{{- if $sa.create }}
{{- if eq .component "operator" }}
{{- default (include "slurm-operator.fullname" .context) $sa.name }}
{{- else }}
{{- default (include "slurm-operator.webhook.name" .context) $sa.name }}
{{- end }}
{{- else }}
{{- default "default" $sa.name }}
{{- end }}
{{- end }}

{{- /*
Image pull policy of a component: its own imagePullPolicy, else the top-level one.
Usage: {{ include "slurm-operator.imagePullPolicy" (dict "context" . "component" "operator") }}
*/}}
{{- define "slurm-operator.imagePullPolicy" -}}
{{- (index .context.Values .component).imagePullPolicy | default .context.Values.imagePullPolicy | default "IfNotPresent" }}
{{- end }}

{{- /*
Secret name of the webhook serving certificate: webhook.tls.existingSecret, else
certManager.secretName (upstream's key, the same Secret whether cert-manager or the chart makes it).
Usage: {{ include "slurm-operator.webhook.tlsSecretName" . }}
*/}}
{{- define "slurm-operator.webhook.tlsSecretName" -}}
{{- .Values.webhook.tls.existingSecret | default .Values.certManager.secretName }}
{{- end }}

{{- /*
Namespaces a component watches, from its comma-separated `namespaces`, as a YAML list (trimmed,
empty entries and duplicates dropped; an empty list means all namespaces).
Usage: {{ $namespaces := include "slurm-operator.namespaces" (dict "context" . "component" "operator") | fromYamlArray }}
*/}}
{{- define "slurm-operator.namespaces" -}}
{{- $out := list }}
{{- range (splitList "," (toString ((index .context.Values .component).namespaces | default ""))) }}
{{- if trim . }}
{{- $out = append $out (trim .) }}
{{- end }}
{{- end }}
{{- toYaml ($out | uniq) }}
{{- end }}

{{- /*
A metrics port value (an integer, or a string of digits) as an integer; 0 when off.
Usage: {{ $port := include "slurm-operator.metricsPort" .Values.operator.metricsPort | int }}
*/}}
{{- define "slurm-operator.metricsPort" -}}
{{- if kindIs "invalid" . }}0{{- else }}{{ toString . | atoi }}{{- end }}
{{- end }}

{{- /*
Health probes on the probe port (/healthz liveness, /readyz readiness).
Usage: {{- include "slurm-operator.probes" . | nindent 10 }} (the container names its probe port "health")
*/}}
{{- define "slurm-operator.probes" -}}
livenessProbe:
  httpGet:
    path: /healthz
    port: health
  initialDelaySeconds: 15
  periodSeconds: 20
readinessProbe:
  httpGet:
    path: /readyz
    port: health
  initialDelaySeconds: 5
  periodSeconds: 10
{{- end }}

{{- /*
ServiceMonitor spec endpoint for a component's metrics.
Usage: {{- include "slurm-operator.serviceMonitorEndpoint" .Values.operator | nindent 4 }}
*/}}
{{- define "slurm-operator.serviceMonitorEndpoint" -}}
- port: metrics
  path: /metrics
  {{- if .metricsSecure }}
  scheme: https
  bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
  tlsConfig:
    {{- toYaml (.metrics.serviceMonitor.tlsConfig | default (dict "insecureSkipVerify" true)) | nindent 4 }}
  {{- else }}
  scheme: http
  {{- end }}
  {{- with .metrics.serviceMonitor.interval }}
  interval: {{ . | quote }}
  {{- end }}
  {{- with .metrics.serviceMonitor.scrapeTimeout }}
  scrapeTimeout: {{ . | quote }}
  {{- end }}
  {{- with .metrics.serviceMonitor.relabelings }}
  relabelings:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .metrics.serviceMonitor.metricRelabelings }}
  metricRelabelings:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{- /*
Seconds in a duration string, as a decimal string: Go durations (`1h30m`, `1.5h`, `500ms`, `10us`)
and Prometheus durations (`1d12h`, `2w`, `1y`). "" and "0" are 0.
Usage: {{ include "slurm-operator.durationSeconds" "1h30m" | float64 }}
*/}}
{{- define "slurm-operator.durationSeconds" -}}
{{- $units := dict "ns" 0.000000001 "us" 0.000001 "µs" 0.000001 "ms" 0.001 "s" 1.0 "m" 60.0 "h" 3600.0 "d" 86400.0 "w" 604800.0 "y" 31536000.0 }}
{{- $total := 0.0 }}
{{- range (regexFindAll "[0-9]+(\\.[0-9]+)?(ns|us|µs|ms|y|w|d|h|m|s)" (toString .) -1) }}
{{- $number := regexFind "^[0-9]+(\\.[0-9]+)?" . }}
{{- $unit := trimPrefix $number . }}
{{- $total = addf $total (mulf (float64 $number) (get $units $unit)) }}
{{- end }}
{{- $total }}
{{- end }}

{{/*
An integer or a percentage string as YAML: whole numbers print as integers (a large number from
values is a float64, which Go would print as 1e+09), strings are quoted.
Usage: {{ include "slurm-operator.intOrPercent" .Values.operator.pdb.maxUnavailable }}
*/}}
{{- define "slurm-operator.intOrPercent" -}}
{{- if kindIs "string" . -}}
{{ . | quote }}
{{- else -}}
{{ . | int64 }}
{{- end -}}
{{- end }}

{{- /*
"true" when operator.profileAddr binds a loopback host (localhost, 127.0.0.0/8, [::1]).
Usage: {{ if include "slurm-operator.profile.loopback" . }}
*/}}
{{- define "slurm-operator.profile.loopback" -}}
{{- $host := regexReplaceAll ":[0-9]+$" (toString .Values.operator.profileAddr) "" }}
{{- if or (eq $host "localhost") (eq $host "[::1]") (regexMatch "^127\\.[0-9]+\\.[0-9]+\\.[0-9]+$" $host) }}true{{- end }}
{{- end }}
