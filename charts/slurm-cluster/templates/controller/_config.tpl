{{- /*
SPDX-License-Identifier: Apache-2.0
Slurm configuration helpers of the slurm-cluster chart: the formatting every collection uses
(settings maps, scalars, parameter lists, the value path of a merged entry's setting) and what the
chart adds to slurm.conf (controller.extraConf). Each collection has its own file beside this one:
_partitions.tpl, _nodesets.tpl, _loginsets.tpl, _gres.tpl (GPUs), _scheduling.tpl and _files.tpl
(configFiles, gres.conf, topology.yaml).
*/}}

{{- /*
A settings map as "Key=value" entries (sorted by key; lists joined with commas; empty values
skipped), joined with .sep (default a newline).
Usage: {{ include "slurm-cluster.confMap" (dict "map" .Values.controller.extraConfMap) }}
*/}}
{{- define "slurm-cluster.confMap" -}}
{{- $out := list }}
{{- range $k, $v := .map }}
{{- if kindIs "slice" $v }}
{{- if $v }}{{- $out = append $out (printf "%s=%s" $k (join "," $v)) }}{{- end }}
{{- else if kindIs "invalid" $v }}
{{- else if and (kindIs "string" $v) (eq $v "") }}
{{- else }}
{{- $out = append $out (printf "%s=%s" $k (include "slurm-cluster.scalar" $v)) }}
{{- end }}
{{- end }}
{{- join (.sep | default "\n") $out }}
{{- end }}

{{- /*
A scalar as text; whole numbers (YAML numbers arrive as float64) print without an exponent.
Usage: {{ include "slurm-cluster.scalar" $v }}
*/}}
{{- define "slurm-cluster.scalar" -}}
{{- if and (kindIs "float64" .) (eq (float64 (int64 .)) .) }}
{{- int64 . }}
{{- else }}
{{- toString . }}
{{- end }}
{{- end }}

{{- /*
A parameter map as a comma list (SchedulerParameters, DependencyParameters): true renders the
bare flag, false drops it, other values render key=value.
Usage: {{ include "slurm-cluster.paramList" $map }}
*/}}
{{- define "slurm-cluster.paramList" -}}
{{- $out := list }}
{{- range $k, $v := . }}
{{- if kindIs "bool" $v }}
{{- if $v }}{{- $out = append $out $k }}{{- end }}
{{- else if not (kindIs "invalid" $v) }}
{{- $out = append $out (printf "%s=%s" $k (include "slurm-cluster.scalar" $v)) }}
{{- end }}
{{- end }}
{{- join "," $out }}
{{- end }}

{{- /*
The value path a setting of a merged collection entry comes from, for error messages:
"<collection>.<name>.<path>" when the entry sets it, else "<singular>Defaults.<path>" (inherited).
Usage: {{ include "slurm-cluster.origin" (dict "context" $ "collection" "nodesets" "name" $name "path" "gpu.gres") }}
*/}}
{{- define "slurm-cluster.origin" -}}
{{- $node := get (get .context.Values .collection | default dict) .name | default dict }}
{{- $set := true }}
{{- range (splitList "." .path) }}
{{- if and $set (kindIs "map" $node) (hasKey $node .) (not (kindIs "invalid" (get $node .))) }}
{{- $node = get $node . }}
{{- else }}
{{- $set = false }}
{{- end }}
{{- end }}
{{- if $set }}
{{- printf "%s.%s.%s" .collection .name .path }}
{{- else }}
{{- printf "%sDefaults.%s" (trimSuffix "s" .collection) .path }}
{{- end }}
{{- end }}

{{- /*
Everything the chart adds to slurm.conf (Controller.spec.extraConf). First the lines of our
extensions, each group under a "# <source>" comment: scheduling, GRES, topology parameters. Then
upstream's lines exactly as upstream's chart writes them: controller.extraConf (or extraConfMap),
then the partitions, so that the user's lines win over ours and a `PartitionName=DEFAULT` line of
theirs comes before the partitions. Without extensions (the default: scheduling.preset none, no
GPU NodeSet, no topology.params) the text is upstream's, line for line.
Usage: {{ include "slurm-cluster.controller.extraConf" . }}
*/}}
{{- define "slurm-cluster.controller.extraConf" -}}
{{- $ours := list }}
{{- with (include "slurm-cluster.scheduling.lines" .) }}
{{- $ours = append $ours "# scheduling (slurm-cluster preset and overrides)" }}
{{- $ours = concat $ours (splitList "\n" .) }}
{{- end }}
{{- if or (include "slurm-cluster.gpuVendors" .) (include "slurm-cluster.a3mega.entries" . | fromYamlArray) }}
{{- $ours = append $ours "# GPUs (NodeSets with gpu or A3 Mega)" }}
{{- $ours = append $ours "GresTypes=gpu" }}
{{- if .Values.accounting.enabled }}
{{- $ours = append $ours "AccountingStorageTRES=gres/gpu" }}
{{- end }}
{{- end }}
{{- with .Values.topology.params }}
{{- $ours = append $ours "# topology.params" }}
{{- $ours = append $ours (printf "TopologyParam=%s" (join "," .)) }}
{{- end }}
{{- $theirs := list }}
{{- $c := .Values.controller }}
{{- if $c.extraConf }}
{{- $theirs = concat $theirs (splitList "\n" (trimSuffix "\n" (toString $c.extraConf))) }}
{{- else if $c.extraConfMap }}
{{- with (include "slurm-cluster.confMap" (dict "map" $c.extraConfMap)) }}
{{- $theirs = concat $theirs (splitList "\n" .) }}
{{- end }}
{{- end }}
{{- range $name, $p := (include "slurm-cluster.partitions" . | fromYaml) }}
{{- $nodes := list }}
{{- range $p.nodesets }}
{{- $nodes = append $nodes (ternary "ALL" . (eq (upper .) "ALL")) }}
{{- end }}
{{- $line := printf "PartitionName=%s Nodes=%s" $name (join "," $nodes) }}
{{- with (include "slurm-cluster.partitionOptions" (dict "config" $p.config "configMap" $p.configMap "topology" $p.topology)) }}
{{- $line = printf "%s %s" $line . }}
{{- end }}
{{- $theirs = append $theirs $line }}
{{- end }}
{{- if and $ours $theirs }}
{{- $ours = append $ours "# controller.extraConf or extraConfMap, then partitions (values)" }}
{{- end }}
{{- join "\n" (concat $ours $theirs) }}
{{- end }}
