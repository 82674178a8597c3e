{{- /*
SPDX-License-Identifier: Apache-2.0
vendor.nvidia.dcgm (upstream's key): GPU-to-job mapping files for NVIDIA dcgm-exporter. A Prolog
script writes the job id into <jobMappingDir>/<GPU index> for every GPU of the job, an Epilog
script removes those files, and every NodeSet with NVIDIA GPUs mounts <jobMappingDir> from its node.
*/}}

{{- /*
Whether the DCGM job mapping is on ("true" or empty).
Usage: {{ if include "slurm-cluster.dcgm.enabled" . }}
*/}}
{{- define "slurm-cluster.dcgm.enabled" -}}
{{- if dig "nvidia" "dcgm" "enabled" false (.Values.vendor | default dict) }}true{{ end }}
{{- end }}

{{- /*
The node folder of the job mapping files.
Usage: {{ include "slurm-cluster.dcgm.dir" . }}
*/}}
{{- define "slurm-cluster.dcgm.dir" -}}
{{- dig "nvidia" "dcgm" "jobMappingDir" "" (.Values.vendor | default dict) | default "/var/lib/dcgm-exporter/job-mapping" }}
{{- end }}

{{- /*
ConfigMap name of the DCGM Prolog ("prolog") or Epilog ("epilog") script.
Usage: {{ include "slurm-cluster.dcgm.configMapName" (dict "context" . "kind" "prolog") }}
*/}}
{{- define "slurm-cluster.dcgm.configMapName" -}}
{{- include "slurm-cluster.componentName" (dict "context" .context "suffix" (printf "%s-dcgm" .kind)) }}
{{- end }}

{{- /*
The DCGM script of one kind as a ConfigMap data entry "<kind>-<scriptPriority>-dcgm.sh".
Usage: {{ include "slurm-cluster.dcgm.script" (dict "context" . "kind" "prolog") }}
*/}}
{{- define "slurm-cluster.dcgm.script" -}}
{{- $priority := dig "nvidia" "dcgm" "scriptPriority" "90" (.context.Values.vendor | default dict) | toString }}
{{- $dir := include "slurm-cluster.dcgm.dir" .context }}
{{- $body := "" }}
{{- if eq .kind "prolog" }}
{{- $body = printf "#!/bin/sh\n# dcgm-exporter job mapping: one file per GPU of the job, holding the job id.\nset -eu\n[ -n \"${SLURM_JOB_GPUS:-}\" ] || exit 0\nmkdir -p %s\nIFS=,\nfor gpu in $SLURM_JOB_GPUS; do\n  printf '%%s' \"$SLURM_JOB_ID\" > %s/\"$gpu\"\ndone\n" (squote $dir) (squote $dir) }}
{{- else }}
{{- $body = printf "#!/bin/sh\n# dcgm-exporter job mapping: remove the files of the job's GPUs.\nset -eu\n[ -n \"${SLURM_JOB_GPUS:-}\" ] || exit 0\nIFS=,\nfor gpu in $SLURM_JOB_GPUS; do\n  rm -f %s/\"$gpu\"\ndone\n" (squote $dir) }}
{{- end }}
{{- toYaml (dict (printf "%s-%s-dcgm.sh" .kind $priority) $body) }}
{{- end }}
