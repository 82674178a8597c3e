{{- /*
SPDX-License-Identifier: Apache-2.0
Helpers of the slurm-bridge chart. Every define is prefixed with "slurm-bridge.".
The helpers the suite's charts share (name, namespace, image reference, ...) are generated into
_common.tpl.
*/}}

{{- /*
Base name of every object: fullnameOverride, else the chart name (nameOverride), truncated to 63
characters. Unlike `helm create`'s fullname, the release name is NOT part of it: upstream's v1.2.1
chart names its objects "<name>-<component>" whatever the release is called, and keeping those
names (and the selectors made from them) is what lets `helm upgrade` move an upstream release to
this chart in place. The price, as upstream: one release per namespace unless nameOverride or
fullnameOverride differ.
Usage: {{ include "slurm-bridge.fullname" . }}
*/}}
{{- define "slurm-bridge.fullname" -}}
{{- .Values.fullnameOverride | default (include "slurm-bridge.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- /*
Selector labels, as upstream v1.2.1 selects (Deployment selectors are immutable, so an upgrade from
upstream's chart needs exactly these): app.kubernetes.io/name = the component's object name
("<fullname>-admission", the scheduler name for the scheduler) and app.kubernetes.io/instance =
the release. The component label is in the metadata labels only.
Usage: {{ include "slurm-bridge.selectorLabels" (dict "context" . "component" "scheduler") }}
*/}}
{{- define "slurm-bridge.selectorLabels" -}}
app.kubernetes.io/name: {{ include "slurm-bridge.component.fullname" . | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/instance: {{ .context.Release.Name | trunc 63 | trimSuffix "-" | quote }}
{{- end }}

{{- /*
Full metadata labels: selector labels plus component, chart, version, part-of and managed-by.
Usage: {{ include "slurm-bridge.labels" (dict "context" . "component" "scheduler") }}
*/}}
{{- define "slurm-bridge.labels" -}}
helm.sh/chart: {{ include "slurm-bridge.chart" .context }}
{{ include "slurm-bridge.selectorLabels" . }}
app.kubernetes.io/component: {{ .component }}
{{- with .context.Chart.AppVersion }}
app.kubernetes.io/version: {{ . | replace "+" "_" | trunc 63 | quote }}
{{- end }}
app.kubernetes.io/part-of: slurm-bridge
app.kubernetes.io/managed-by: {{ .context.Release.Service }}
{{- end }}

{{- /*
ServiceAccount name of a component ("scheduler", "admission" or "controllers").
Usage: {{ include "slurm-bridge.serviceAccountName" (dict "context" . "component" "scheduler") }}
*/}}
{{- define "slurm-bridge.serviceAccountName" -}}
{{- $sa := (index .context.Values .component).serviceAccount }}
{{- if $sa.create }}
{{- default (include "slurm-bridge.component.fullname" .) $sa.name }}
{{- else }}
{{- default "default" $sa.name }}
{{- end }}
{{- end }}

{{- /*
THE scheduler name: the `schedulerName` of the scheduler profile, of pods the admission webhook
rewrites, of the managed-node taint value and of config.yaml, and the name of the scheduler's
Deployment, ServiceAccount and ClusterRole (as upstream). Every template uses this helper and
nothing else. Default "slurm-bridge-scheduler", upstream's: pods already created for an upstream
release carry it, and a different name would leave them unscheduled after an upgrade.
Usage: {{ include "slurm-bridge.schedulerName" . }}
*/}}
{{- define "slurm-bridge.schedulerName" -}}
{{- .Values.schedulerConfig.schedulerName | default "slurm-bridge-scheduler" }}
{{- end }}

{{- /*
Number of pods of a component: scheduler.replicaCount (upstream's key for the scheduler),
admission.replicas, controllers.replicas.
Usage: {{ include "slurm-bridge.replicas" (dict "context" . "component" "scheduler") | int }}
*/}}
{{- define "slurm-bridge.replicas" -}}
{{- $c := index .context.Values .component }}
{{- if eq .component "scheduler" }}
{{- int $c.replicaCount }}
{{- else }}
{{- int $c.replicas }}
{{- end }}
{{- end }}

{{- /*
Whether a component elects a leader ("true" or ""): scheduler.leaderElect (upstream's key),
admission.leaderElection.enabled, controllers.leaderElection.enabled.
Usage: {{ if include "slurm-bridge.leaderElect" (dict "context" . "component" "scheduler") }}
*/}}
{{- define "slurm-bridge.leaderElect" -}}
{{- $c := index .context.Values .component }}
{{- if eq .component "scheduler" }}
{{- if $c.leaderElect }}true{{ end }}
{{- else if $c.leaderElection.enabled }}true{{ end }}
{{- end }}

{{- /*
Name of a component's Deployment (and ServiceAccount, Service, PDB, ...): "<fullname>-<component>",
the scheduler name for the scheduler.
Usage: {{ include "slurm-bridge.component.fullname" (dict "context" . "component" "admission") }}
*/}}
{{- define "slurm-bridge.component.fullname" -}}
{{- if eq .component "scheduler" }}
{{- include "slurm-bridge.schedulerName" .context }}
{{- else }}
{{- include "slurm-bridge.componentName" (dict "context" .context "suffix" .component) }}
{{- end }}
{{- end }}

{{- /*
ConfigMap holding config.yaml (shared by the three components): "slurm-bridge-config", upstream's
fixed name.
Usage: {{ include "slurm-bridge.configName" . }}
*/}}
{{- define "slurm-bridge.configName" -}}
slurm-bridge-config
{{- end }}

{{- /*
ConfigMap holding the KubeSchedulerConfiguration: "scheduler-config", upstream's fixed name.
Usage: {{ include "slurm-bridge.scheduler.configName" . }}
*/}}
{{- define "slurm-bridge.scheduler.configName" -}}
scheduler-config
{{- end }}

{{- /*
Secret name of the admission webhook serving certificate: admission.tls.existingSecret, else
admission.tls.secretName, else "<fullname>-admission" with cert-manager (upstream's name, so
cert-manager keeps renewing the Secret it has) and "<fullname>-admission-tls" without: upstream's
default release has cert-manager's "<fullname>-admission", which Helm cannot adopt, so a Secret of
that name rendered by this chart would fail `helm upgrade` of such a release.
Usage: {{ include "slurm-bridge.admission.tlsSecretName" . }}
*/}}
{{- define "slurm-bridge.admission.tlsSecretName" -}}
{{- $admission := include "slurm-bridge.component.fullname" (dict "context" . "component" "admission") }}
{{- if .Values.admission.tls.existingSecret }}
{{- .Values.admission.tls.existingSecret }}
{{- else if .Values.admission.tls.secretName }}
{{- .Values.admission.tls.secretName }}
{{- else if .Values.admission.certManager.enabled }}
{{- $admission }}
{{- else }}
{{- printf "%s-tls" ($admission | trunc 59 | trimSuffix "-") }}
{{- end }}
{{- end }}

{{- /*
A probe: the fixed handler merged with the timings from values.
Usage: {{- include "slurm-bridge.probe" (dict "handler" (dict "httpGet" (dict "path" "/healthz" "port" "health")) "timings" $c.probes.liveness) | nindent 12 }}
*/}}
{{- define "slurm-bridge.probe" -}}
{{- toYaml (mergeOverwrite (dict) (deepCopy (.timings | default dict)) (deepCopy .handler)) }}
{{- end }}

{{- /*
Pod-level fields shared by the three Deployments: ServiceAccount, priority, pull secrets, grace
period, security context (the scheduling fields come from podPlacement).
Usage: {{- include "slurm-bridge.podCommon" (dict "context" . "component" "scheduler") | nindent 6 }}
*/}}
{{- define "slurm-bridge.podCommon" -}}
{{- $c := index .context.Values .component -}}
serviceAccountName: {{ include "slurm-bridge.serviceAccountName" . | quote }}
automountServiceAccountToken: true
{{- with (include "slurm-bridge.priorityClassName" .) }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- with (include "slurm-bridge.imagePullSecrets" .context) }}
{{ . }}
{{- end }}
terminationGracePeriodSeconds: {{ int $c.terminationGracePeriodSeconds }}
{{- with $c.podSecurityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- /*
Pod placement pass-through: nodeSelector, affinity, tolerations, topologySpreadConstraints.
Usage: {{- include "slurm-bridge.podPlacement" .Values.scheduler | nindent 6 }}
*/}}
{{- define "slurm-bridge.podPlacement" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- /*
Pod template metadata: labels (+ podLabels) and annotations (config checksums + podAnnotations).
Usage: {{- include "slurm-bridge.podMetadata" (dict "context" . "component" "scheduler" "checksums" $sums) | nindent 4 }}
*/}}
{{- define "slurm-bridge.podMetadata" -}}
{{- $c := index .context.Values .component -}}
labels:
  {{- include "slurm-bridge.labels" . | nindent 2 }}
  {{- with $c.podLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
annotations:
  kubectl.kubernetes.io/default-container: {{ .component }}
  {{- range $k, $v := .checksums }}
  checksum/{{ $k }}: {{ $v | quote }}
  {{- end }}
  {{- with $c.podAnnotations }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}

{{- /*
ServiceMonitor endpoint for a metrics port.
Usage: {{- include "slurm-bridge.serviceMonitorEndpoint" (dict "port" "metrics" "secure" true "sm" $m.serviceMonitor) | nindent 4 }}
*/}}
{{- define "slurm-bridge.serviceMonitorEndpoint" -}}
- port: {{ .port }}
  path: /metrics
  {{- if .secure }}
  scheme: https
  bearerTokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
  tlsConfig:
    {{- toYaml (.sm.tlsConfig | default (dict "insecureSkipVerify" true)) | nindent 4 }}
  {{- else }}
  scheme: http
  {{- end }}
  {{- with .sm.interval }}
  interval: {{ . | quote }}
  {{- end }}
  {{- with .sm.scrapeTimeout }}
  scrapeTimeout: {{ . | quote }}
  {{- end }}
{{- end }}

{{- /*
PodDisruptionBudget of a component (only when enabled and replicas > 1).
Usage: {{ include "slurm-bridge.pdb" (dict "context" . "component" "scheduler") }}
*/}}
{{- define "slurm-bridge.pdb" -}}
{{- $c := index .context.Values .component }}
{{- if and $c.pdb.enabled (gt (include "slurm-bridge.replicas" . | int) 1) }}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "slurm-bridge.component.fullname" . }}
  namespace: {{ include "slurm-bridge.namespace" .context }}
  labels:
    {{- include "slurm-bridge.labels" . | nindent 4 }}
spec:
  {{- if not (kindIs "invalid" $c.pdb.maxUnavailable) }}
  maxUnavailable: {{ $c.pdb.maxUnavailable }}
  {{- else }}
  minAvailable: {{ $c.pdb.minAvailable }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "slurm-bridge.selectorLabels" . | nindent 6 }}
{{- end }}
{{- end }}

{{- /*
ServiceAccount of a component (when serviceAccount.create).
Usage: {{ include "slurm-bridge.serviceAccount" (dict "context" . "component" "scheduler") }}
*/}}
{{- define "slurm-bridge.serviceAccount" -}}
{{- $sa := (index .context.Values .component).serviceAccount }}
{{- if $sa.create }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "slurm-bridge.serviceAccountName" . | quote }}
  namespace: {{ include "slurm-bridge.namespace" .context }}
  labels:
    {{- include "slurm-bridge.labels" . | nindent 4 }}
  {{- with $sa.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
automountServiceAccountToken: false
{{- end }}
{{- end }}

{{- /*
Namespaces that are never bridged, sorted: kube-system, kube-public, kube-node-lease, the release
namespace, the slurm-cluster namespace (the slurmrestd Service's in sharedConfig.slurmRestApi, when
the URL names one) and the slurm-operator's namespace (`operatorNamespace`).
Usage: {{ $protected := include "slurm-bridge.protectedNamespaces" . | fromYamlArray }}
*/}}
{{- define "slurm-bridge.protectedNamespaces" -}}
{{- $ns := list "kube-system" "kube-public" "kube-node-lease" (include "slurm-bridge.namespace" .) }}
{{- with (include "slurm-bridge.slurmCluster.namespace" .) }}{{- $ns = append $ns . }}{{- end }}
{{- with .Values.operatorNamespace }}{{- $ns = append $ns . }}{{- end }}
{{- toYaml ($ns | uniq | sortAlpha) }}
{{- end }}

{{- /*
A label selector with the protected namespaces excluded: the given selector (matchLabels kept)
plus a `kubernetes.io/metadata.name NotIn [...]` expression, as YAML.
Usage: {{ $sel := include "slurm-bridge.excludeProtected" (dict "context" . "selector" $selector) | fromYaml }}
*/}}
{{- define "slurm-bridge.excludeProtected" -}}
{{- $sel := deepCopy (.selector | default dict) }}
{{- $notIn := dict "key" "kubernetes.io/metadata.name" "operator" "NotIn" "values" (include "slurm-bridge.protectedNamespaces" .context | fromYamlArray) }}
{{- $_ := set $sel "matchExpressions" (append ($sel.matchExpressions | default list) $notIn) }}
{{- toYaml $sel }}
{{- end }}

{{- /*
A duration of the form <n>(ms|s|m|h) in milliseconds ("" when it does not parse).
Usage: {{ include "slurm-bridge.durationMs" "15s" | int64 }}
*/}}
{{- define "slurm-bridge.durationMs" -}}
{{- $m := regexFindAll "^([0-9]+)(ms|s|m|h)$" (toString .) 1 }}
{{- if $m }}
{{- $n := regexReplaceAll "(ms|s|m|h)$" (first $m) "" | int64 }}
{{- $unit := regexFind "(ms|s|m|h)$" (first $m) }}
{{- mul $n (get (dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000) $unit) }}
{{- end }}
{{- end }}
