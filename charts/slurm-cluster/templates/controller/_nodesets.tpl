{{- /*
SPDX-License-Identifier: Apache-2.0
NodeSets of the slurm-cluster chart: merged over nodesetDefaults, and the slurmd --conf of
each.
*/}}

{{- /*
NodeSets merged over nodesetDefaults, as YAML (name -> values, enabled ones only), with the
vendor.google.a3mega settings of the NodeSets it targets.
Usage: {{ $nodesets := include "slurm-cluster.nodesets" . | fromYaml }}
*/}}
{{- define "slurm-cluster.nodesets" -}}
{{- include "slurm-cluster.carriable" . }}
{{- $out := dict }}
{{- range $name, $entry := (.Values.nodesets | default dict) }}
{{- $ns := mergeOverwrite (dict) (deepCopy $.Values.nodesetDefaults) (deepCopy ($entry | default dict)) }}
{{- if not (kindIs "map" $ns.partition) }}
{{- /* partition: null (upstream's way to say "no partition") keeps the defaults' partition */}}
{{- $_ := set $ns "partition" (deepCopy $.Values.nodesetDefaults.partition) }}
{{- end }}
{{- if $ns.enabled }}
{{- $ns = include "slurm-cluster.a3mega.nodeset" (dict "context" $ "name" $name "ns" $ns) | fromYaml }}
{{- $_ := set $out $name $ns }}
{{- end }}
{{- end }}
{{- toYaml $out }}
{{- end }}

{{- /*
The slurmd --conf line of a merged NodeSet, upstream's `extraConf` (a raw line, wins) or
`extraConfMap` (space-separated `Key=Value`). When the chart declares GPUs (`gpu` or A3 Mega), the
line has one `Gres=`: those GPUs, then the items of the user's `Gres` keys (any case), which take
its place (first on a raw line, the map's `Gres` key otherwise); templates/validate.yaml refuses a
`gpu` item among them.
Usage: {{ include "slurm-cluster.nodeset.extraConf" $nodeset }}
*/}}
{{- define "slurm-cluster.nodeset.extraConf" -}}
{{- $g := include "slurm-cluster.nodeset.gres" . | fromYaml }}
{{- $gres := prepend ($g.user | default list) $g.chart }}
{{- if .extraConf }}
{{- $line := .extraConf | toString | trim }}
{{- if $g.chart }}
{{- $tokens := list (printf "Gres=%s" (join "," $gres)) }}
{{- range (splitList " " $line) }}
{{- if not (regexMatch "^(?i:gres)=" .) }}{{- $tokens = append $tokens . }}{{- end }}
{{- end }}
{{- $line = join " " $tokens }}
{{- end }}
{{- $line }}
{{- else }}
{{- $conf := deepCopy (.extraConfMap | default dict) }}
{{- if $g.chart }}
{{- range $k := keys $conf }}
{{- if eq (lower $k) "gres" }}{{- $_ := unset $conf $k }}{{- end }}
{{- end }}
{{- $_ := set $conf "Gres" $gres }}
{{- end }}
{{- include "slurm-cluster.confMap" (dict "map" $conf "sep" " ") }}
{{- end }}
{{- end }}
