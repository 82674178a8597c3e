{{- /*
SPDX-License-Identifier: Apache-2.0
LoginSets of the slurm-cluster chart, merged over loginsetDefaults.
*/}}

{{- /*
LoginSets merged over loginsetDefaults, as YAML (enabled ones only).
Usage: {{ $loginsets := include "slurm-cluster.loginsets" . | fromYaml }}
*/}}
{{- define "slurm-cluster.loginsets" -}}
{{- include "slurm-cluster.carriable" . }}
{{- $out := dict }}
{{- range $name, $entry := (.Values.loginsets | default dict) }}
{{- $ls := mergeOverwrite (dict) (deepCopy $.Values.loginsetDefaults) (deepCopy ($entry | default dict)) }}
{{- if $ls.enabled }}
{{- $_ := set $out $name $ls }}
{{- end }}
{{- end }}
{{- toYaml $out }}
{{- end }}
