{{- /*
SPDX-License-Identifier: Apache-2.0
Scheduling of the slurm-cluster chart: the presets, the effective settings and their
slurm.conf lines.
*/}}

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
