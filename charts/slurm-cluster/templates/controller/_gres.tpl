{{- /*
SPDX-License-Identifier: Apache-2.0
GPUs of the slurm-cluster chart: a NodeSet's GPUs, the vendors in use, its GRES line.
*/}}

{{- /*
The GPUs of a merged NodeSet as YAML {vendor, type, count, gres, resource, dra};
empty when it has none. `gres` ("gpu:<type>:<count>" or "gpu:<count>") wins over type/count.
Usage: {{ $gpu := include "slurm-cluster.nodeset.gpu" $nodeset | fromYaml }}
*/}}
{{- define "slurm-cluster.nodeset.gpu" -}}
{{- $g := .gpu | default dict }}
{{- $type := $g.type | default "" }}
{{- $count := int ($g.count | default 0) }}
{{- if $g.gres }}
{{- $parts := splitList ":" $g.gres }}
{{- if eq (len $parts) 3 }}
{{- $type = index $parts 1 }}
{{- $count = int (index $parts 2) }}
{{- else if eq (len $parts) 2 }}
{{- $type = "" }}
{{- $count = int (index $parts 1) }}
{{- end }}
{{- end }}
{{- if gt $count 0 }}
{{- $vendor := $g.vendor | default "nvidia" }}
vendor: {{ $vendor }}
type: {{ $type | quote }}
count: {{ $count }}
gres: {{ ternary (printf "gpu:%s:%d" $type $count) (printf "gpu:%d" $count) (ne $type "") | quote }}
resource: {{ ternary "amd.com/gpu" "nvidia.com/gpu" (eq $vendor "amd") | quote }}
dra: {{ $g.dra | default "" | quote }}
{{- end }}
{{- end }}

{{- /*
GPU vendors of the enabled NodeSets, as a sorted, de-duplicated comma list ("" without GPUs).
Usage: {{ include "slurm-cluster.gpuVendors" . }}
*/}}
{{- define "slurm-cluster.gpuVendors" -}}
{{- $vendors := list }}
{{- range $name, $ns := (include "slurm-cluster.nodesets" . | fromYaml) }}
{{- $gpu := include "slurm-cluster.nodeset.gpu" $ns | fromYaml }}
{{- if $gpu.vendor }}{{- $vendors = append $vendors $gpu.vendor }}{{- end }}
{{- end }}
{{- join "," ($vendors | uniq | sortAlpha) }}
{{- end }}

{{- /*
Where a merged NodeSet's node `Gres=` comes from (one rule, values.yaml `gpu`), as YAML:
`chart` the GPUs the chart declares ("" for none): `gpu` (gres or type/count), else the
vendor.google.a3mega entry that targets the NodeSet (`vendorGres`); `chartFrom` its values path
(relative to the NodeSet, or `vendor.google.a3mega[<i>]`); `user` the items of every `Gres` key
(any case) of extraConf (when set) or extraConfMap; `userFrom` where they are (relative).
Usage: {{ $g := include "slurm-cluster.nodeset.gres" $nodeset | fromYaml }}
*/}}
{{- define "slurm-cluster.nodeset.gres" -}}
{{- $gpu := include "slurm-cluster.nodeset.gpu" . | fromYaml }}
{{- $chart := $gpu.gres | default (.vendorGres | default "") }}
{{- $chartFrom := "" }}
{{- if $gpu.gres }}
{{- $chartFrom = ternary "gpu.gres" "gpu.count" (not (empty (.gpu | default dict).gres)) }}
{{- else if $chart }}
{{- $chartFrom = .vendorGresFrom }}
{{- end }}
{{- $user := list }}
{{- $userFrom := "" }}
{{- if .extraConf }}
{{- range (splitList " " (.extraConf | toString | trim)) }}
{{- if regexMatch "^(?i:gres)=" . }}
{{- $user = concat $user (splitList "," (regexReplaceAll "^[^=]*=" . "")) }}
{{- $userFrom = "extraConf" }}
{{- end }}
{{- end }}
{{- else }}
{{- range $k, $v := (.extraConfMap | default dict) }}
{{- if eq (lower $k) "gres" }}
{{- $userFrom = printf "extraConfMap.%s" $k }}
{{- if kindIs "slice" $v }}
{{- range $v }}{{- $user = append $user (include "slurm-cluster.scalar" .) }}{{- end }}
{{- else if not (kindIs "invalid" $v) }}
{{- $user = concat $user (splitList "," (include "slurm-cluster.scalar" $v)) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
chart: {{ $chart | quote }}
chartFrom: {{ $chartFrom | quote }}
user: {{ without $user "" | toJson }}
userFrom: {{ $userFrom | quote }}
{{- end }}
