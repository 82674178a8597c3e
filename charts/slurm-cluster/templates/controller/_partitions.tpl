{{- /*
SPDX-License-Identifier: Apache-2.0
Partitions of the slurm-cluster chart: the partitions map and each partition's options.
*/}}

{{- /*
Partitions merged over partitionDefaults, as YAML (enabled ones only).
Usage: {{ $partitions := include "slurm-cluster.partitions" . | fromYaml }}
*/}}
{{- define "slurm-cluster.partitions" -}}
{{- $out := dict }}
{{- range $name, $entry := (.Values.partitions | default dict) }}
{{- $p := mergeOverwrite (dict) (deepCopy $.Values.partitionDefaults) (deepCopy ($entry | default dict)) }}
{{- if $p.enabled }}
{{- $_ := set $out $name $p }}
{{- end }}
{{- end }}
{{- toYaml $out }}
{{- end }}

{{- /*
Partition options (a one-line string or a map) plus an optional Topology=, as one line.
Usage: {{ include "slurm-cluster.partitionOptions" (dict "config" $p.config "configMap" $p.configMap "topology" $p.topology) }}
*/}}
{{- define "slurm-cluster.partitionOptions" -}}
{{- $parts := list }}
{{- if .config }}
{{- $parts = append $parts (trim (toString .config)) }}
{{- else if .configMap }}
{{- with (include "slurm-cluster.confMap" (dict "map" .configMap "sep" " ")) }}{{- $parts = append $parts . }}{{- end }}
{{- end }}
{{- with .topology }}{{- $parts = append $parts (printf "Topology=%s" .) }}{{- end }}
{{- join " " $parts }}
{{- end }}
