{{- /*
SPDX-License-Identifier: Apache-2.0
How this chart finds the Slurm cluster it talks to: from `sharedConfig.slurmRestApi` (upstream's key,
default `http://slurm-restapi.slurm:6820`). The names a slurm-cluster release gives its objects are
reproduced HERE ONLY, so aligning with a change there is a one-file edit:

  slurmrestd Service    = "<fullname>-restapi", port 6820     (upstream's slurm chart names)
  JWT key Secret        = "<fullname>-auth-jwt", key "jwt.key"

A URL host names a Service in every form cluster DNS answers, whatever its case and with or
without the trailing dot of a fully qualified name: "<service>" (this release's namespace),
"<service>.<namespace>", "<service>.<namespace>.svc" followed by any cluster domain
("cluster.local" or a custom one), and a headless Service's pod, "<pod>.<service>.<namespace>.svc..."
All give slurm-cluster's namespace. Any other host (an IP address, an external name such as
"slurm.example.com") is outside the cluster, as far as the chart can tell.
*/}}

{{- /*
The slurmrestd Service named by sharedConfig.slurmRestApi, as YAML {name, namespace, port}; empty
when the host is not a Service name (see above).
Usage: {{ $svc := include "slurm-bridge.restapi.service" . | fromYaml }}
*/}}
{{- define "slurm-bridge.restapi.service" -}}
{{- $url := urlParse .Values.sharedConfig.slurmRestApi }}
{{- /* DNS names are case-insensitive; a trailing dot only makes the name absolute */}}
{{- $host := regexReplaceAll ":[0-9]+$" $url.host "" | lower | trimSuffix "." }}
{{- $port := regexFind "[0-9]+$" (regexFind ":[0-9]+$" $url.host) }}
{{- if not $port }}{{- $port = ternary "443" "80" (eq $url.scheme "https") }}{{- end }}
{{- $label := "[a-z0-9]([-a-z0-9]*[a-z0-9])?" }}
{{- $parts := splitList "." $host }}
{{- $svc := list }}
{{- if regexMatch (printf "^%s$" $label) $host }}
{{- if not (regexMatch "^[0-9]+$" $host) }}{{- $svc = list $host (include "slurm-bridge.namespace" .) }}{{- end }}
{{- else if regexMatch (printf "^%s\\.%s$" $label $label) $host }}
{{- $svc = $parts }}
{{- else if regexMatch (printf "^%s\\.%s\\.svc(\\.%s)*$" $label $label $label) $host }}
{{- $svc = slice $parts 0 2 }}
{{- else if regexMatch (printf "^%s\\.%s\\.%s\\.svc(\\.%s)*$" $label $label $label $label) $host }}
{{- $svc = slice $parts 1 3 }}
{{- end }}
{{- with $svc }}
name: {{ index . 0 | quote }}
namespace: {{ index . 1 | quote }}
port: {{ $port }}
{{- end }}
{{- end }}

{{- /*
Namespace of the slurm-cluster release: the slurmrestd Service's ("" when the URL is not a Service).
Usage: {{ include "slurm-bridge.slurmCluster.namespace" . }}
*/}}
{{- define "slurm-bridge.slurmCluster.namespace" -}}
{{- (include "slurm-bridge.restapi.service" . | fromYaml).namespace | default "" }}
{{- end }}

{{- /*
Secret holding slurm-cluster's JWT key that the Token signs with: token.jwtKeySecretRef.name, else
"<fullname>-auth-jwt" for the slurmrestd Service "<fullname>-restapi" in this release's namespace,
else "" (the Token cannot be rendered).
Usage: {{ include "slurm-bridge.slurmCluster.jwtKeySecret" . }}
*/}}
{{- define "slurm-bridge.slurmCluster.jwtKeySecret" -}}
{{- if .Values.token.jwtKeySecretRef.name }}
{{- .Values.token.jwtKeySecretRef.name }}
{{- else }}
{{- $svc := include "slurm-bridge.restapi.service" . | fromYaml }}
{{- if and $svc.name (hasSuffix "-restapi" $svc.name) (eq $svc.namespace (include "slurm-bridge.namespace" .)) }}
{{- printf "%s-auth-jwt" (trimSuffix "-restapi" $svc.name) }}
{{- end }}
{{- end }}
{{- end }}

{{- /*
Whether this chart renders the Token: token.create, and a JWT key Secret it can read (above).
Usage: {{ if include "slurm-bridge.token.enabled" . }}
*/}}
{{- define "slurm-bridge.token.enabled" -}}
{{- if and .Values.token.create (include "slurm-bridge.slurmCluster.jwtKeySecret" .) }}true{{ end }}
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
Secret the scheduler and controllers read the JWT from (key "auth-token"), upstream's
sharedConfig.slurmJwtSecret; the Token writes it.
Usage: {{ include "slurm-bridge.jwtSecretName" . }}
*/}}
{{- define "slurm-bridge.jwtSecretName" -}}
{{- .Values.sharedConfig.slurmJwtSecret }}
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
      key: auth-token
{{- end }}

{{- /*
config.yaml shared by the scheduler plugin, the admission webhook and the controllers
(fields of internal/config.Config at v1.2.1). admission.manageAllNamespaces, then
admission.managedNamespaceSelector, win over admission.managedNamespaces; either selector excludes
the protected namespaces.
Usage: {{ include "slurm-bridge.configYaml" . }}
*/}}
{{- define "slurm-bridge.configYaml" -}}
{{- $a := .Values.admission }}
{{- $sc := .Values.schedulerConfig }}
{{- $cfg := dict "schedulerName" (include "slurm-bridge.schedulerName" .) "slurmRestApi" .Values.sharedConfig.slurmRestApi "mcsLabel" $sc.mcsLabel "partition" $sc.partition }}
{{- if or $a.manageAllNamespaces $a.managedNamespaceSelector }}
{{- $selector := $a.managedNamespaceSelector | default (dict) }}
{{- $_ := set $cfg "managedNamespaceSelector" (include "slurm-bridge.excludeProtected" (dict "context" . "selector" $selector) | fromYaml) }}
{{- else }}
{{- $_ := set $cfg "managedNamespaces" ($a.managedNamespaces | default list | uniq) }}
{{- end }}
{{- toYaml $cfg }}
{{- end }}
