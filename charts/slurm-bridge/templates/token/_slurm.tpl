{{- /*
SPDX-License-Identifier: Apache-2.0
How this chart finds the Slurm cluster it talks to. The names the suite's slurm-cluster chart gives
its objects are reproduced HERE ONLY, so aligning with a change there is a one-file edit:

  slurm-cluster fullname  = fullnameOverride, else <release> if it contains "slurm-cluster",
                            else "<release>-slurm-cluster" (63 characters at most)
  Slinky object base      = fullname truncated to 30 characters      (slurm-cluster.base)
  slurmrestd Service      = "<base>-restapi", port 6820               (slurm-cluster.restapi.serviceName)
  jwt.key Secret          = "<fullname truncated to 52>-jwt-key",
                            key "jwt.key"                              (slurm-cluster.jwtKeySecretName)

Defaults assume a slurm-cluster release with the same release name in the same namespace
(`slurm.cluster.release` / `slurm.cluster.namespace` / `slurm.cluster.fullnameOverride` change that).
*/}}

{{- /*
Release name of the slurm-cluster release.
Usage: {{ include "slurm-bridge.slurmCluster.release" . }}
*/}}
{{- define "slurm-bridge.slurmCluster.release" -}}
{{- .Values.slurm.cluster.release | default .Release.Name }}
{{- end }}

{{- /*
Namespace of the slurm-cluster release.
Usage: {{ include "slurm-bridge.slurmCluster.namespace" . }}
*/}}
{{- define "slurm-bridge.slurmCluster.namespace" -}}
{{- .Values.slurm.cluster.namespace | default (include "slurm-bridge.namespace" .) }}
{{- end }}

{{- /*
Full name of the slurm-cluster release (mirrors slurm-cluster.fullname).
Usage: {{ include "slurm-bridge.slurmCluster.fullname" . }}
*/}}
{{- define "slurm-bridge.slurmCluster.fullname" -}}
{{- if .Values.slurm.cluster.fullnameOverride }}
{{- .Values.slurm.cluster.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $release := include "slurm-bridge.slurmCluster.release" . }}
{{- if contains "slurm-cluster" $release }}
{{- $release | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-slurm-cluster" $release | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- /*
slurmrestd URL: slurm.restapi.url, else http://<base>-restapi.<namespace>:<port>.
Usage: {{ include "slurm-bridge.slurmRestApi" . }}
*/}}
{{- define "slurm-bridge.slurmRestApi" -}}
{{- if .Values.slurm.restapi.url }}
{{- .Values.slurm.restapi.url }}
{{- else }}
{{- $base := include "slurm-bridge.slurmCluster.fullname" . | trunc 30 | trimSuffix "-" }}
{{- printf "http://%s-restapi.%s:%d" $base (include "slurm-bridge.slurmCluster.namespace" .) (int .Values.slurm.restapi.port) }}
{{- end }}
{{- end }}

{{- /*
Secret holding slurm-cluster's jwt.key that the Token signs with: slurm.jwt.token.jwtKeySecret,
else slurm-cluster's "<fullname>-jwt-key".
Usage: {{ include "slurm-bridge.slurmCluster.jwtKeySecret" . }}
*/}}
{{- define "slurm-bridge.slurmCluster.jwtKeySecret" -}}
{{- .Values.slurm.jwt.token.jwtKeySecret | default (printf "%s-jwt-key" (include "slurm-bridge.slurmCluster.fullname" . | trunc 52 | trimSuffix "-")) }}
{{- end }}

{{- /*
Whether this chart renders the Token (no existing JWT Secret was given).
Usage: {{ if include "slurm-bridge.token.enabled" . }}
*/}}
{{- define "slurm-bridge.token.enabled" -}}
{{- if not .Values.slurm.jwt.existingSecret }}true{{ end }}
{{- end }}

{{- /*
Name of the Token object: "<fullname>-jwt". Not "slurm-bridge-token": upstream's quickstart has
users apply a Token of that name by hand, and Helm cannot adopt it on upgrade.
Usage: {{ include "slurm-bridge.token.name" . }}
*/}}
{{- define "slurm-bridge.token.name" -}}
{{- include "slurm-bridge.componentName" (dict "context" . "suffix" "jwt") }}
{{- end }}

{{- /*
Secret the scheduler and controllers read the JWT from: slurm.jwt.existingSecret, else the
Secret the Token writes (slurm.jwt.token.secretName, default "slurm-bridge-token": upstream's
sharedConfig.slurmJwtSecret default, so an upgraded upstream release reads the Secret it had).
Usage: {{ include "slurm-bridge.jwtSecretName" . }}
*/}}
{{- define "slurm-bridge.jwtSecretName" -}}
{{- if .Values.slurm.jwt.existingSecret }}
{{- .Values.slurm.jwt.existingSecret }}
{{- else }}
{{- .Values.slurm.jwt.token.secretName | default "slurm-bridge-token" }}
{{- end }}
{{- end }}

{{- /*
SLURM_JWT environment variable (v1.2.1 reads the token from it once, at start).
Usage: {{- include "slurm-bridge.jwtEnv" . | nindent 12 }}
*/}}
{{- define "slurm-bridge.jwtEnv" -}}
- name: SLURM_JWT
  valueFrom:
    secretKeyRef:
      name: {{ include "slurm-bridge.jwtSecretName" . | quote }}
      key: {{ .Values.slurm.jwt.key | quote }}
{{- end }}

{{- /*
config.yaml shared by the scheduler plugin, the admission webhook and the controllers
(fields of internal/config.Config at v1.2.1). manageAllNamespaces, then a managedNamespaceSelector,
win over the list; either selector excludes the protected namespaces.
Usage: {{ include "slurm-bridge.configYaml" . }}
*/}}
{{- define "slurm-bridge.configYaml" -}}
{{- $cfg := dict "schedulerName" (include "slurm-bridge.schedulerName" .) "slurmRestApi" (include "slurm-bridge.slurmRestApi" .) "mcsLabel" .Values.slurm.mcsLabel "partition" .Values.slurm.partition }}
{{- if or .Values.manageAllNamespaces .Values.managedNamespaceSelector }}
{{- $selector := .Values.managedNamespaceSelector | default (dict) }}
{{- $_ := set $cfg "managedNamespaceSelector" (include "slurm-bridge.excludeProtected" (dict "context" . "selector" $selector) | fromYaml) }}
{{- else }}
{{- $_ := set $cfg "managedNamespaces" (.Values.managedNamespaces | default list | uniq) }}
{{- end }}
{{- toYaml $cfg }}
{{- end }}
