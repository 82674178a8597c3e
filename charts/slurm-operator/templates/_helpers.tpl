{{- /*
SPDX-License-Identifier: Apache-2.0
Helpers of the slurm-operator chart. Every define is prefixed with "slurm-operator.".
*/}}

{{- /*
Chart name, truncated to 63 characters.
Usage: {{ include "slurm-operator.name" . }}
*/}}
{{- define "slurm-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- /*
Fully qualified base name of every object, truncated to 63 characters.
Usage: {{ include "slurm-operator.fullname" . }}
*/}}
{{- define "slurm-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- /*
Name of a component object: the base name truncated to 52 characters (less for suffixes over
10 characters, so the result stays within 63), then "-<suffix>".
Usage: {{ include "slurm-operator.componentName" (dict "context" . "suffix" "webhook") }}
*/}}
{{- define "slurm-operator.componentName" -}}
{{- $max := min 52 (sub 62 (len .suffix)) | int }}
{{- printf "%s-%s" (include "slurm-operator.fullname" .context | trunc $max | trimSuffix "-") .suffix }}
{{- end }}

{{- /*
Name of the webhook objects (Deployment, Service, webhook configurations).
Usage: {{ include "slurm-operator.webhook.fullname" . }}
*/}}
{{- define "slurm-operator.webhook.fullname" -}}
{{- include "slurm-operator.componentName" (dict "context" . "suffix" "webhook") }}
{{- end }}

{{- /*
Chart name and version for the helm.sh/chart label.
Usage: {{ include "slurm-operator.chart" . }}
*/}}
{{- define "slurm-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- /*
Namespace of every namespaced object.
Usage: {{ include "slurm-operator.namespace" . }}
*/}}
{{- define "slurm-operator.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- /*
Selector labels: name, instance and component only (selectors are immutable).
Usage: {{ include "slurm-operator.selectorLabels" (dict "context" . "component" "operator") }}
*/}}
{{- define "slurm-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "slurm-operator.name" .context | quote }}
app.kubernetes.io/instance: {{ .context.Release.Name | quote }}
app.kubernetes.io/component: {{ .component | quote }}
{{- end }}

{{- /*
Full metadata labels: selector labels plus chart, version, part-of and managed-by.
Usage: {{ include "slurm-operator.labels" (dict "context" . "component" "operator") }}
*/}}
{{- define "slurm-operator.labels" -}}
helm.sh/chart: {{ include "slurm-operator.chart" .context | quote }}
{{ include "slurm-operator.selectorLabels" . }}
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
{{- default (include "slurm-operator.componentName" (dict "context" .context "suffix" .component)) $sa.name }}
{{- end }}
{{- else }}
{{- default "default" $sa.name }}
{{- end }}
{{- end }}

{{- /*
Image reference from an image object {registry, repository, tag, digest}.
global.imageRegistry replaces the registry; tag defaults to .Chart.AppVersion; digest wins over tag.
Usage: {{ include "slurm-operator.image" (dict "context" . "image" .Values.operator.image) }}
*/}}
{{- define "slurm-operator.image" -}}
{{- $image := .image }}
{{- $global := .context.Values.global | default dict }}
{{- $registry := $global.imageRegistry | default $image.registry }}
{{- $repository := required "an image repository is required (image.repository)" $image.repository }}
{{- $ref := $repository }}
{{- if $registry }}
{{- $ref = printf "%s/%s" (trimSuffix "/" $registry) $repository }}
{{- end }}
{{- if $image.digest }}
{{- printf "%s@%s" $ref $image.digest }}
{{- else }}
{{- printf "%s:%s" $ref (toString ($image.tag | default .context.Chart.AppVersion)) }}
{{- end }}
{{- end }}

{{- /*
imagePullSecrets block: global.imagePullSecrets then imagePullSecrets, strings or {name}, deduplicated.
Renders nothing when the list is empty.
Usage: {{- include "slurm-operator.imagePullSecrets" . | nindent 6 }}
*/}}
{{- define "slurm-operator.imagePullSecrets" -}}
{{- $global := .Values.global | default dict }}
{{- $names := list }}
{{- range (concat ($global.imagePullSecrets | default list) (.Values.imagePullSecrets | default list)) }}
{{- if kindIs "map" . }}
{{- if .name }}{{- $names = append $names .name }}{{- end }}
{{- else if . }}
{{- $names = append $names (toString .) }}
{{- end }}
{{- end }}
{{- with ($names | uniq) }}
imagePullSecrets:
{{- range . }}
  - name: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}

{{- /*
PriorityClass of a component: its own value, else the top-level priorityClassName.
Usage: {{ include "slurm-operator.priorityClassName" (dict "context" . "component" "operator") }}
*/}}
{{- define "slurm-operator.priorityClassName" -}}
{{- (index .context.Values .component).priorityClassName | default .context.Values.priorityClassName }}
{{- end }}

{{- /*
Secret name of the webhook serving certificate.
Usage: {{ include "slurm-operator.webhook.tlsSecretName" . }}
*/}}
{{- define "slurm-operator.webhook.tlsSecretName" -}}
{{- if .Values.webhook.tls.existingSecret }}
{{- .Values.webhook.tls.existingSecret }}
{{- else }}
{{- .Values.webhook.tls.secretName | default (include "slurm-operator.componentName" (dict "context" . "suffix" "webhook-tls")) }}
{{- end }}
{{- end }}

{{- /*
Comma-joined watched namespaces ("" = all namespaces).
Usage: {{ include "slurm-operator.watchNamespaces" . }}
*/}}
{{- define "slurm-operator.watchNamespaces" -}}
{{- join "," (.Values.watchNamespaces | default list | uniq) }}
{{- end }}

{{- /*
RBAC rules file of a component, parsed.
Usage: {{ $rules := include "slurm-operator.rbacRules" (dict "context" . "component" "operator") | fromYaml }}
*/}}
{{- define "slurm-operator.rbacRules" -}}
{{- .context.Files.Get (printf "files/rbac/%s-rules.yaml" .component) }}
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
Usage: {{- include "slurm-operator.serviceMonitorEndpoint" .Values.operator.metrics | nindent 4 }}
*/}}
{{- define "slurm-operator.serviceMonitorEndpoint" -}}
- port: metrics
  path: /metrics
  {{- if .secure }}
  scheme: https
  bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
  tlsConfig:
    {{- toYaml (.serviceMonitor.tlsConfig | default (dict "insecureSkipVerify" true)) | nindent 4 }}
  {{- else }}
  scheme: http
  {{- end }}
  {{- with .serviceMonitor.interval }}
  interval: {{ . | quote }}
  {{- end }}
  {{- with .serviceMonitor.scrapeTimeout }}
  scrapeTimeout: {{ . | quote }}
  {{- end }}
  {{- with .serviceMonitor.relabelings }}
  relabelings:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .serviceMonitor.metricRelabelings }}
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
"true" when operator.profile.address binds a loopback host (localhost, 127.0.0.0/8, [::1]).
Usage: {{ if include "slurm-operator.profile.loopback" . }}
*/}}
{{- define "slurm-operator.profile.loopback" -}}
{{- $host := regexReplaceAll ":[0-9]+$" (toString .Values.operator.profile.address) "" }}
{{- if or (eq $host "localhost") (eq $host "[::1]") (regexMatch "^127\\.[0-9]+\\.[0-9]+\\.[0-9]+$" $host) }}true{{- end }}
{{- end }}
