{{- /*
SPDX-License-Identifier: Apache-2.0
The KubeSchedulerConfiguration of the bridge scheduler.

The SlurmBridge plugin's part is kept separate from the base profile so the same configuration can
be rendered for a stock kube-scheduler (which does not know the plugin):

  {{ include "slurm-bridge.scheduler.config" (dict "context" . "plugin" true) }}   what the bridge runs
  {{ include "slurm-bridge.scheduler.config" (dict "context" . "plugin" false) }}  same profile, no SlurmBridge

The ConfigMap carries both (`scheduler-config.yaml` and `scheduler-config-base.yaml`); only the
first is mounted.
*/}}

{{- /*
Base profile plugins per extension point (what upstream v1.2.1 enables next to SlurmBridge).
Usage: {{ include "slurm-bridge.scheduler.basePlugins" . | fromYaml }}
*/}}
{{- define "slurm-bridge.scheduler.basePlugins" -}}
queueSort: [PrioritySort]
preEnqueue: []
preFilter: [VolumeBinding, NodeResourcesFit]
filter: [VolumeBinding, TaintToleration, NodeResourcesFit]
postFilter: []
reserve: [VolumeBinding]
preBind: [VolumeBinding]
bind: [DefaultBinder]
{{- end }}

{{- /*
Extension points where the SlurmBridge plugin is enabled (appended after the base plugins), per
the upstream v1.2.1 scheduler profile: preEnqueue, preFilter, filter, postFilter, preBind.
Usage: {{ include "slurm-bridge.scheduler.bridgePlugins" . | fromYaml }}
*/}}
{{- define "slurm-bridge.scheduler.bridgePlugins" -}}
preEnqueue: [SlurmBridge]
preFilter: [SlurmBridge]
filter: [SlurmBridge]
postFilter: [SlurmBridge]
preBind: [SlurmBridge]
{{- end }}

{{- /*
The whole KubeSchedulerConfiguration.
Usage: {{ include "slurm-bridge.scheduler.config" (dict "context" . "plugin" true) }}
*/}}
{{- define "slurm-bridge.scheduler.config" -}}
{{- $ctx := .context }}
{{- $s := $ctx.Values.scheduler }}
{{- $base := include "slurm-bridge.scheduler.basePlugins" $ctx | fromYaml }}
{{- $bridge := dict }}
{{- if .plugin }}
{{- $bridge = include "slurm-bridge.scheduler.bridgePlugins" $ctx | fromYaml }}
{{- end }}
{{- $plugins := dict }}
{{- range $point := list "queueSort" "preEnqueue" "preFilter" "filter" "postFilter" "reserve" "preBind" "bind" }}
{{- $names := concat (index $base $point | default list) (index $bridge $point | default list) }}
{{- if $names }}
{{- $enabled := list }}
{{- range $names }}
{{- $enabled = append $enabled (dict "name" .) }}
{{- end }}
{{- $_ := set $plugins $point (dict "enabled" $enabled) }}
{{- end }}
{{- end }}
{{- $_ := set $plugins "multiPoint" (dict "disabled" (list (dict "name" "*"))) }}
{{- $pluginConfig := list }}
{{- if .plugin }}
{{- $pluginConfig = append $pluginConfig (dict "name" "SlurmBridge") }}
{{- end }}
{{- $pluginConfig = concat $pluginConfig ($s.extraPluginConfig | default list) }}
{{- $profile := dict "schedulerName" (include "slurm-bridge.schedulerName" $ctx) "plugins" $plugins }}
{{- if $pluginConfig }}
{{- $_ := set $profile "pluginConfig" $pluginConfig }}
{{- end }}
{{- $le := dict "leaderElect" $s.leaderElect "resourceLock" "leases" "resourceNamespace" (include "slurm-bridge.namespace" $ctx) "resourceName" (include "slurm-bridge.component.fullname" (dict "context" $ctx "component" "scheduler")) "leaseDuration" $s.leaderElection.leaseDuration "renewDeadline" $s.leaderElection.renewDeadline "retryPeriod" $s.leaderElection.retryPeriod }}
{{- $config := dict "apiVersion" "kubescheduler.config.k8s.io/v1" "kind" "KubeSchedulerConfiguration" "leaderElection" $le "profiles" (list $profile) }}
{{- toYaml $config }}
{{- end }}

{{- /*
`--feature-gates` value, sorted by name.
Usage: {{ include "slurm-bridge.scheduler.featureGates" . }}
*/}}
{{- define "slurm-bridge.scheduler.featureGates" -}}
{{- $gates := list }}
{{- range $name := (keys (.Values.scheduler.featureGates | default dict) | sortAlpha) }}
{{- $gates = append $gates (printf "%s=%t" $name (index $.Values.scheduler.featureGates $name)) }}
{{- end }}
{{- join "," $gates }}
{{- end }}
