{{- /*
SPDX-License-Identifier: Apache-2.0
Slurm configuration helpers of the slurm-cluster chart: merged collections, slurm.conf lines,
scheduling presets, GPUs and partitions.
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

{{- /*
Effective scheduling settings: the preset merged with the non-empty overrides, as YAML.
Usage: {{ $s := include "slurm-cluster.scheduling" . | fromYaml }}
*/}}
{{- define "slurm-cluster.scheduling.preset" -}}
{{- if eq . "fairshare" }}
schedulerType: sched/backfill
schedulerParameters:
  bf_continue: true
  bf_interval: 30
  bf_max_job_test: 1000
  bf_resolution: 300
  bf_window: 4320
  default_queue_depth: 1000
priority:
  type: priority/multifactor
  decayHalfLife: "7-0"
  maxAge: "7-0"
  calcPeriod: ""
  favorSmall: "NO"
  flags: []
  weights:
    age: 1000
    fairshare: 10000
    jobSize: 1000
    partition: 1000
    qos: 5000
  weightTRES: ""
preemption:
  type: preempt/qos
  mode: REQUEUE
  exemptTime: ""
dependencyParameters:
  kill_invalid_depend: true
{{- /* No preset enforces associations: a user without one could not run a first job. Opt in with
scheduling.accountingEnforce once the accounts exist (README "Scheduling presets"). */}}
accountingEnforce: []
{{- else if eq . "fifo" }}
schedulerType: sched/builtin
schedulerParameters: {}
priority:
  type: priority/basic
  weights: {}
preemption:
  type: preempt/none
dependencyParameters:
  kill_invalid_depend: true
accountingEnforce: []
{{- else }}
schedulerParameters: {}
priority:
  weights: {}
preemption: {}
dependencyParameters: {}
accountingEnforce: []
{{- end }}
{{- end }}

{{- define "slurm-cluster.scheduling" -}}
{{- $u := .Values.scheduling }}
{{- $s := include "slurm-cluster.scheduling.preset" $u.preset | fromYaml }}
{{- $prio := $s.priority | default dict }}
{{- $pre := $s.preemption | default dict }}
{{- if not .Values.accounting.enabled }}
{{- /* Slurm ignores (with an error) the age and fair-share weights without slurmdbd. */}}
{{- $_ := unset ($prio.weights | default dict) "age" }}
{{- $_ := unset ($prio.weights | default dict) "fairshare" }}
{{- end }}
{{- with $u.schedulerType }}{{- $_ := set $s "schedulerType" . }}{{- end }}
{{- $_ := set $s "schedulerParameters" (mergeOverwrite (dict) ($s.schedulerParameters | default dict) ($u.schedulerParameters | default dict)) }}
{{- $_ := set $s "dependencyParameters" (mergeOverwrite (dict) ($s.dependencyParameters | default dict) ($u.dependencyParameters | default dict)) }}
{{- range $k := list "type" "decayHalfLife" "maxAge" "calcPeriod" "favorSmall" "weightTRES" }}
{{- with (get $u.priority $k) }}{{- $_ := set $prio $k . }}{{- end }}
{{- end }}
{{- with $u.priority.flags }}{{- $_ := set $prio "flags" . }}{{- end }}
{{- $_ := set $prio "weights" (mergeOverwrite (dict) ($prio.weights | default dict) ($u.priority.weights | default dict)) }}
{{- range $k := list "type" "mode" "exemptTime" }}
{{- with (get $u.preemption $k) }}{{- $_ := set $pre $k . }}{{- end }}
{{- end }}
{{- $_ := set $s "priority" $prio }}
{{- $_ := set $s "preemption" $pre }}
{{- with $u.accountingEnforce }}{{- $_ := set $s "accountingEnforce" . }}{{- end }}
{{- toYaml $s }}
{{- end }}

{{- /*
slurm.conf lines of the scheduling policy.
Usage: {{ include "slurm-cluster.scheduling.lines" . }}
*/}}
{{- define "slurm-cluster.scheduling.lines" -}}
{{- $s := include "slurm-cluster.scheduling" . | fromYaml }}
{{- $conf := dict }}
{{- $_ := set $conf "SchedulerType" ($s.schedulerType | default "") }}
{{- $_ := set $conf "SchedulerParameters" (include "slurm-cluster.paramList" ($s.schedulerParameters | default dict)) }}
{{- $_ := set $conf "DependencyParameters" (include "slurm-cluster.paramList" ($s.dependencyParameters | default dict)) }}
{{- $p := $s.priority | default dict }}
{{- $_ := set $conf "PriorityType" ($p.type | default "") }}
{{- $_ := set $conf "PriorityDecayHalfLife" ($p.decayHalfLife | default "") }}
{{- $_ := set $conf "PriorityMaxAge" ($p.maxAge | default "") }}
{{- $_ := set $conf "PriorityCalcPeriod" ($p.calcPeriod | default "") }}
{{- $_ := set $conf "PriorityFavorSmall" ($p.favorSmall | default "") }}
{{- $_ := set $conf "PriorityFlags" ($p.flags | default list) }}
{{- $_ := set $conf "PriorityWeightTRES" ($p.weightTRES | default "") }}
{{- $weightKeys := dict "age" "Age" "assoc" "Assoc" "fairshare" "Fairshare" "jobSize" "JobSize" "partition" "Partition" "qos" "QOS" }}
{{- range $k, $v := ($p.weights | default dict) }}
{{- $_ := set $conf (printf "PriorityWeight%s" (get $weightKeys $k)) (int64 $v) }}
{{- end }}
{{- $pre := $s.preemption | default dict }}
{{- $_ := set $conf "PreemptType" ($pre.type | default "") }}
{{- $_ := set $conf "PreemptMode" ($pre.mode | default "") }}
{{- $_ := set $conf "PreemptExemptTime" ($pre.exemptTime | default "") }}
{{- if .Values.accounting.enabled }}
{{- $_ := set $conf "AccountingStorageEnforce" ($s.accountingEnforce | default list) }}
{{- end }}
{{- include "slurm-cluster.confMap" (dict "map" $conf) }}
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

{{- /*
Generated config files (file name -> content): configFiles, plus gres.conf for GPU NodeSets
(unless configFiles has one) and the inline topology.yaml.
Usage: {{ $files := include "slurm-cluster.configFiles" . | fromYaml }}
*/}}
{{- define "slurm-cluster.configFiles" -}}
{{- $files := deepCopy (.Values.configFiles | default dict) }}
{{- $vendors := include "slurm-cluster.gpuVendors" . }}
{{- if and $vendors (not (hasKey $files "gres.conf")) (not (contains "," $vendors)) }}
{{- $_ := set $files "gres.conf" (printf "# generated by slurm-cluster: GPUs of the %s NodeSets\nAutoDetect=%s\n" $vendors (get .Values.gpu.autoDetect $vendors)) }}
{{- end }}
{{- with .Values.topology.yaml }}
{{- $_ := set $files "topology.yaml" . }}
{{- end }}
{{- toYaml $files }}
{{- end }}

{{- /*
Topology names declared in the inline topology.yaml (empty list when none or not parseable).
Usage: {{ $names := include "slurm-cluster.topologyNames" . | fromYamlArray }}
*/}}
{{- define "slurm-cluster.topologyNames" -}}
{{- $names := list }}
{{- with .Values.topology.yaml }}
{{- $doc := fromYamlArray . }}
{{- range $doc }}
{{- if and (kindIs "map" .) .topology }}{{- $names = append $names (toString .topology) }}{{- end }}
{{- end }}
{{- end }}
{{- toYaml $names }}
{{- end }}
