{{- /*
SPDX-License-Identifier: Apache-2.0
Helpers of the gpu-topology-labeler chart. Every define is prefixed with "gpu-topology-labeler.".
The helpers the suite's charts share (name, namespace, image reference, ...) are generated into
_common.tpl.
*/}}

{{- /*
Name of the ConfigMap the labeler writes (data key `topology.yaml`, dynamic shape): the value of
`topology.configMapName`, else "<fullname>-topology". Charts that consume the topology (the
suite's slurm-cluster `topology.configMapRef`) use the same rule; in an umbrella chart include
this helper with this chart's context.
Usage: {{ include "gpu-topology-labeler.configMapName" . }}
*/}}
{{- define "gpu-topology-labeler.configMapName" -}}
{{- .Values.topology.configMapName | default (include "gpu-topology-labeler.componentName" (dict "context" . "suffix" "topology")) }}
{{- end }}

{{- /*
Name of the leader election Lease.
Usage: {{ include "gpu-topology-labeler.leaseName" . }}
*/}}
{{- define "gpu-topology-labeler.leaseName" -}}
{{- .Values.controller.leaderElection.leaseName | default (include "gpu-topology-labeler.fullname" .) }}
{{- end }}

{{- /*
Grace period of the controller pods: controller.terminationGracePeriodSeconds, else the least
that lets a stopping controller end its write in flight and release its Lease (two calls), each
call taking up to controller.requestTimeoutSeconds: 3 × requestTimeoutSeconds + 5.
Usage: {{ include "gpu-topology-labeler.terminationGracePeriodSeconds" . }}
*/}}
{{- define "gpu-topology-labeler.minGracePeriodSeconds" -}}
{{- add (mul 3 (int .Values.controller.requestTimeoutSeconds)) 5 }}
{{- end }}

{{- define "gpu-topology-labeler.terminationGracePeriodSeconds" -}}
{{- $set := .Values.controller.terminationGracePeriodSeconds }}
{{- if kindIs "invalid" $set }}
{{- include "gpu-topology-labeler.minGracePeriodSeconds" . }}
{{- else }}
{{- int $set }}
{{- end }}
{{- end }}

{{- /*
Selector labels: name, instance and component only (selectors are immutable).
Usage: {{ include "gpu-topology-labeler.selectorLabels" (dict "context" . "component" "controller") }}
*/}}
{{- define "gpu-topology-labeler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gpu-topology-labeler.name" .context | quote }}
app.kubernetes.io/instance: {{ .context.Release.Name | quote }}
app.kubernetes.io/component: {{ .component | quote }}
{{- end }}

{{- /*
Full metadata labels: selector labels plus chart, version, part-of and managed-by.
Usage: {{ include "gpu-topology-labeler.labels" (dict "context" . "component" "controller") }}
*/}}
{{- define "gpu-topology-labeler.labels" -}}
helm.sh/chart: {{ include "gpu-topology-labeler.chart" .context | quote }}
{{ include "gpu-topology-labeler.selectorLabels" . }}
{{- with .context.Chart.AppVersion }}
app.kubernetes.io/version: {{ . | replace "+" "_" | trunc 63 | quote }}
{{- end }}
app.kubernetes.io/part-of: "slinky-topology"
app.kubernetes.io/managed-by: {{ .context.Release.Service | quote }}
{{- end }}

{{- /*
Label keys the chart sets itself; podLabels may not use them (templates/validate.yaml).
Usage: {{ include "gpu-topology-labeler.reservedLabels" . | fromJsonArray }}
*/}}
{{- define "gpu-topology-labeler.reservedLabels" -}}
{{- list "helm.sh/chart" "app.kubernetes.io/name" "app.kubernetes.io/instance" "app.kubernetes.io/component" "app.kubernetes.io/version" "app.kubernetes.io/part-of" "app.kubernetes.io/managed-by" | toJson }}
{{- end }}

{{- /*
ServiceAccount name of a component ("controller" or "discovery").
Usage: {{ include "gpu-topology-labeler.serviceAccountName" (dict "context" . "component" "discovery") }}
*/}}
{{- define "gpu-topology-labeler.serviceAccountName" -}}
{{- $sa := (index .context.Values .component).serviceAccount }}
{{- if $sa.create }}
{{- if eq .component "controller" }}
{{- default (include "gpu-topology-labeler.fullname" .context) $sa.name }}
{{- else }}
{{- default (include "gpu-topology-labeler.componentName" (dict "context" .context "suffix" .component)) $sa.name }}
{{- end }}
{{- else }}
{{- default "default" $sa.name }}
{{- end }}
{{- end }}

{{- /*
The `--label-map` value built from topology.labelMap ("" when every entry is empty).
Usage: {{ include "gpu-topology-labeler.labelMap" . }}
*/}}
{{- define "gpu-topology-labeler.labelMap" -}}
{{- $parts := list }}
{{- range $role := list "accelerator" "subdomain" "leaf" "spine" "core" }}
{{- with (index $.Values.topology.labelMap $role) }}
{{- $parts = append $parts (printf "%s=%s" $role .) }}
{{- end }}
{{- end }}
{{- join "," $parts }}
{{- end }}
