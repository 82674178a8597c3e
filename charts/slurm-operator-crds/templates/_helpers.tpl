{{- /*
SPDX-License-Identifier: Apache-2.0
Helpers of the slurm-operator-crds chart. Every define is prefixed with "slurm-operator-crds.".
The helpers the suite's charts share (name, namespace, image reference, ...) are generated into
_common.tpl.
The chart name is spelled out instead of read from .Chart.Name: slurm-operator vendors this chart
under the alias "crds" (so its values are crds.*), which renames .Chart.Name, and the CRDs' labels
must stay the same however the chart is installed.
*/}}

{{- /*
Chart name, truncated to 63 characters.
Usage: {{ include "slurm-operator-crds.name" . }}
*/}}
{{- define "slurm-operator-crds.name" -}}
{{- default "slurm-operator-crds" .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- /*
Fully qualified base name of the namespaced (helm test) objects, truncated to 63 characters.
Usage: {{ include "slurm-operator-crds.fullname" . }}
*/}}
{{- define "slurm-operator-crds.fullname" -}}
{{- $name := include "slurm-operator-crds.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- /*
Chart name and version for the helm.sh/chart label.
Usage: {{ include "slurm-operator-crds.chart" . }}
*/}}
{{- define "slurm-operator-crds.chart" -}}
{{- printf "slurm-operator-crds-%s" .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- /*
Namespace of the namespaced (helm test) objects: the release namespace.
Usage: {{ include "slurm-operator-crds.namespace" . }}
*/}}
{{- define "slurm-operator-crds.namespace" -}}
{{- .Release.Namespace | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- /*
Selector labels: name, instance and component only.
Usage: {{ include "slurm-operator-crds.selectorLabels" (dict "context" . "component" "crds") }}
*/}}
{{- define "slurm-operator-crds.selectorLabels" -}}
app.kubernetes.io/name: {{ include "slurm-operator-crds.name" .context | quote }}
app.kubernetes.io/instance: {{ .context.Release.Name | quote }}
app.kubernetes.io/component: {{ .component | quote }}
{{- end }}

{{- /*
Full metadata labels: selector labels plus chart, version, part-of and managed-by.
Usage: {{ include "slurm-operator-crds.labels" (dict "context" . "component" "crds") }}
*/}}
{{- define "slurm-operator-crds.labels" -}}
helm.sh/chart: {{ include "slurm-operator-crds.chart" .context | quote }}
{{ include "slurm-operator-crds.selectorLabels" . }}
{{- with .context.Chart.AppVersion }}
app.kubernetes.io/version: {{ . | replace "+" "_" | trunc 63 | quote }}
{{- end }}
app.kubernetes.io/part-of: slurm-operator
app.kubernetes.io/managed-by: {{ .context.Release.Service | quote }}
{{- end }}

{{- /*
ServiceAccount of the helm test pod.
Usage: {{ include "slurm-operator-crds.serviceAccountName" . }}
*/}}
{{- define "slurm-operator-crds.serviceAccountName" -}}
{{- printf "%s-test" (include "slurm-operator-crds.fullname" . | trunc 52 | trimSuffix "-") }}
{{- end }}

{{- /*
Names of the CRDs this chart holds (files/crds/*.yaml), sorted, one per line.
Usage: {{ include "slurm-operator-crds.crdNames" . | splitList "\n" }}
*/}}
{{- define "slurm-operator-crds.crdNames" -}}
{{- $names := list }}
{{- range $path, $content := .Files.Glob "files/crds/*.yaml" }}
{{- range $doc := regexSplit "(?m)^---[ \t]*$" (toString $content) -1 }}
{{- $crd := fromYaml $doc }}
{{- if and $crd (not (hasKey $crd "Error")) ($crd.metadata | default dict).name }}
{{- $names = append $names $crd.metadata.name }}
{{- end }}
{{- end }}
{{- end }}
{{- join "\n" ($names | sortAlpha) }}
{{- end }}
