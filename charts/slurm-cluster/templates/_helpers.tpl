{{- /*
SPDX-License-Identifier: Apache-2.0
Helpers of the slurm-cluster chart. Every define is prefixed with "slurm-cluster.".
The helpers the suite's charts share (name, namespace, image reference, ...) are generated into
_common.tpl.
*/}}

{{- /*
Fully qualified base name, as upstream's `slurm` chart makes it so that an upstream release keeps
its objects: "<release>-slurm" ("slurm" being upstream's chart name, or nameOverride), or the
release name alone when it contains that name, or fullnameOverride; truncated to 63 characters.
Usage: {{ include "slurm-cluster.fullname" . }}
*/}}
{{- define "slurm-cluster.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default "slurm" .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- /*
Namespace of every namespaced object.
Usage: {{ include "slurm-cluster.namespace" . }}
*/}}
{{- define "slurm-cluster.namespace" -}}
{{- include "slurm-cluster.carriable" . }}
{{- default .Release.Namespace .Values.namespaceOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- /*
Fails when a value holds a character Helm's YAML cannot carry: Helm's YAML writer refuses U+007F
(DEL) and its kind, and toYaml then returns "" without an error, so such a string would empty the
manifests and helpers that pass values through YAML (a nil pointer, or a field silently dropped).
Each top-level key is tried whole (cheap); only a failing one is searched for the value's path.
Included by the helpers every template reads first (`namespace`, `nodesets`, `loginsets`), so it
fails before any of them.
Usage: {{ include "slurm-cluster.carriable" . }}
*/}}
{{- define "slurm-cluster.carriable" -}}
{{- range $key, $value := .Values }}
{{- if not (toYaml (dict "value" $value)) }}
{{- $where := include "slurm-cluster.uncarriablePath" (dict "path" $key "value" $value) | default $key }}
{{- fail (printf "%s holds a control character (such as U+007F, DEL) that Helm's YAML cannot carry: remove it" $where) }}
{{- end }}
{{- end }}
{{- end }}

{{- /*
The values path of the first value under .value (at .path) that Helm's YAML cannot carry.
Usage: {{ include "slurm-cluster.uncarriablePath" (dict "path" "nodesets" "value" $value) }}
*/}}
{{- define "slurm-cluster.uncarriablePath" -}}
{{- $found := "" }}
{{- if kindIs "map" .value }}
{{- range $k, $v := .value }}
{{- if and (not $found) (not (toYaml (dict "value" $v))) }}
{{- $found = include "slurm-cluster.uncarriablePath" (dict "path" (printf "%s.%s" $.path $k) "value" $v) }}
{{- end }}
{{- end }}
{{- else if kindIs "slice" .value }}
{{- range $i, $v := .value }}
{{- if and (not $found) (not (toYaml (dict "value" $v))) }}
{{- $found = include "slurm-cluster.uncarriablePath" (dict "path" (printf "%s[%d]" $.path $i) "value" $v) }}
{{- end }}
{{- end }}
{{- else }}
{{- $found = .path }}
{{- end }}
{{- $found }}
{{- end }}

{{- /*
Selector labels: name, instance and component only.
Usage: {{ include "slurm-cluster.selectorLabels" (dict "context" . "component" "controller") }}
*/}}
{{- define "slurm-cluster.selectorLabels" -}}
app.kubernetes.io/name: {{ include "slurm-cluster.name" .context | quote }}
app.kubernetes.io/instance: {{ .context.Release.Name | quote }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- /*
Full metadata labels: selector labels plus chart, version, part-of and managed-by.
Usage: {{ include "slurm-cluster.labels" (dict "context" . "component" "controller") }}
*/}}
{{- define "slurm-cluster.labels" -}}
helm.sh/chart: {{ include "slurm-cluster.chart" .context | quote }}
{{ include "slurm-cluster.selectorLabels" . }}
{{- with .context.Chart.AppVersion }}
app.kubernetes.io/version: {{ . | replace "+" "_" | trunc 63 | quote }}
{{- end }}
app.kubernetes.io/part-of: slurm
app.kubernetes.io/managed-by: {{ .context.Release.Service }}
{{- end }}

{{- /*
ServiceAccount of the Slurm pods. The chart creates none: the operator-built pods need no
Kubernetes API access, so they run with the namespace default account.
Usage: {{ include "slurm-cluster.serviceAccountName" . }}
*/}}
{{- define "slurm-cluster.serviceAccountName" -}}
default
{{- end }}

{{- /*
Pull policy of a container: its own imagePullPolicy, else its image's pullPolicy, else the
top-level imagePullPolicy.
Usage: {{ include "slurm-cluster.imagePullPolicy" (dict "context" . "c" .Values.controller.slurmctld) }}
*/}}
{{- define "slurm-cluster.imagePullPolicy" -}}
{{- $own := .c.imagePullPolicy | default "" }}
{{- if and (not $own) (kindIs "map" .c.image) }}{{- $own = .c.image.pullPolicy }}{{- end }}
{{- $own | default .context.Values.imagePullPolicy | default "IfNotPresent" }}
{{- end }}

{{- /*
A Slinky container (slurmctld, slurmd, logfile, ...) from its values: every corev1.Container field
passed through, the image formatted by slurm-cluster.image, the pull policy resolved, and empty
fields left out. path is the container's values path, for the image's error message.
Usage: {{- include "slurm-cluster.container" (dict "context" $ "c" .Values.controller.slurmctld "path" "controller.slurmctld") | nindent 4 }}
*/}}
{{- define "slurm-cluster.container" -}}
{{- $out := omit .c "image" "imagePullPolicy" }}
{{- range $key, $value := $out }}
{{- if not (or $value (kindIs "bool" $value) (kindIs "float64" $value) (kindIs "int64" $value)) }}
{{- $_ := unset $out $key }}
{{- end }}
{{- end -}}
image: {{ include "slurm-cluster.image" (dict "context" .context "image" .c.image "path" (printf "%s.image" (.path | default "container"))) | quote }}
imagePullPolicy: {{ include "slurm-cluster.imagePullPolicy" (dict "context" .context "c" .c) | quote }}
{{- with $out }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- /*
Pod spec of a Slinky pod template from a component's `podSpec` (corev1.PodSpec, passed through,
empty fields left out), with the chart-wide PriorityClass unless the pod names its own, and the
pod's imagePullSecrets followed by the chart's (global.imagePullSecrets, imagePullSecrets).
Usage: {{ $spec := include "slurm-cluster.podSpec" (dict "context" $ "c" .Values.controller) | fromYaml }}
*/}}
{{- define "slurm-cluster.podSpec" -}}
{{- $spec := deepCopy (.c.podSpec | default dict) }}
{{- range $key, $value := $spec }}
{{- if not (or $value (kindIs "bool" $value) (kindIs "float64" $value) (kindIs "int64" $value)) }}
{{- $_ := unset $spec $key }}
{{- end }}
{{- end }}
{{- with ($spec.priorityClassName | default (include "slurm-cluster.priorityClassName" .context)) }}
{{- $_ := set $spec "priorityClassName" . }}
{{- end }}
{{- $secrets := concat ($spec.imagePullSecrets | default list) ((include "slurm-cluster.imagePullSecrets" .context | fromYaml).imagePullSecrets | default list) }}
{{- with $secrets }}
{{- $_ := set $spec "imagePullSecrets" . }}
{{- end }}
{{- toYaml $spec }}
{{- end }}

{{- /*
The service template of an operator-made Service from a component's `service` (metadata, spec,
port, nodePort; passed through, empty fields left out).
Usage: {{- with (include "slurm-cluster.service" .Values.controller.service | fromYaml) }}
*/}}
{{- define "slurm-cluster.service" -}}
{{- $svc := deepCopy (. | default dict) }}
{{- range $key, $value := $svc }}
{{- if not (or $value (kindIs "float64" $value) (kindIs "int64" $value)) }}
{{- $_ := unset $svc $key }}
{{- end }}
{{- end }}
{{- with $svc.nodePort }}{{- $_ := set $svc "nodePort" (int .) }}{{- end }}
{{- with $svc.port }}{{- $_ := set $svc "port" (int .) }}{{- end }}
{{- toYaml $svc }}
{{- end }}

{{- /*
The chart-wide PriorityClass: priorityClass.name (slurm-priority-critical when empty) when
priorityClass.enabled, else empty.
Usage: {{ include "slurm-cluster.priorityClassName" . }}
*/}}
{{- define "slurm-cluster.priorityClassName" -}}
{{- if .Values.priorityClass.enabled }}
{{- .Values.priorityClass.name | default "slurm-priority-critical" }}
{{- end }}
{{- end }}

{{- /*
Pod template metadata of a Slinky object: the chart's pod labels (upstream's set: chart, part-of,
version, managed-by), then the component's `metadata.labels` and `metadata.annotations`.
Usage: {{- include "slurm-cluster.podMetadata" (dict "context" $ "c" .Values.controller) | nindent 6 }}
*/}}
{{- define "slurm-cluster.podMetadata" -}}
{{- $meta := .c.metadata | default dict }}
{{- $labels := dict "helm.sh/chart" (include "slurm-cluster.chart" .context) "app.kubernetes.io/part-of" "slurm" "app.kubernetes.io/managed-by" .context.Release.Service -}}
{{- with .context.Chart.AppVersion }}
{{- $_ := set $labels "app.kubernetes.io/version" (. | replace "+" "_" | trunc 63) }}
{{- end -}}
labels:
  {{- toYaml (merge (dict) ($meta.labels | default dict) $labels) | nindent 2 }}
{{- with $meta.annotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- /*
Metadata labels and annotations of a Slinky object: the chart's labels, then the component's
`metadata.labels` (they win, as in upstream's chart) and `metadata.annotations`; `extra` adds
labels of the object's own.
Usage: {{- include "slurm-cluster.objectMetadata" (dict "context" $ "c" .Values.controller "component" "controller") | nindent 2 }}
*/}}
{{- define "slurm-cluster.objectMetadata" -}}
{{- $meta := .c.metadata | default dict }}
{{- $labels := merge (include "slurm-cluster.labels" (dict "context" .context "component" .component) | fromYaml) (.extra | default dict) -}}
labels:
  {{- toYaml (merge (dict) ($meta.labels | default dict) $labels) | nindent 2 }}
{{- with $meta.annotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- /*
Names of the Slinky objects, as upstream's chart names them: the Controller, RestApi and
Accounting are "<fullname>"; the Services the operator derives from them are
"<fullname>-controller", "<fullname>-restapi" and "<fullname>-accounting".
Usage: {{ include "slurm-cluster.controller.name" . }}
*/}}
{{- define "slurm-cluster.controller.name" -}}
{{- include "slurm-cluster.fullname" . }}
{{- end }}

{{- /*
Service the operator creates for slurmctld (port 6817).
Usage: {{ include "slurm-cluster.controller.serviceName" . }}
*/}}
{{- define "slurm-cluster.controller.serviceName" -}}
{{- printf "%s-controller" (include "slurm-cluster.controller.name" .) }}
{{- end }}

{{- define "slurm-cluster.restapi.name" -}}
{{- include "slurm-cluster.fullname" . }}
{{- end }}

{{- /*
Service the operator creates for slurmrestd (port 6820): "<fullname>-restapi". slurm-bridge points
`sharedConfig.slurmRestApi` at http://<this>.<namespace>:6820.
Usage: {{ include "slurm-cluster.restapi.serviceName" . }}
*/}}
{{- define "slurm-cluster.restapi.serviceName" -}}
{{- printf "%s-restapi" (include "slurm-cluster.restapi.name" .) }}
{{- end }}

{{- define "slurm-cluster.accounting.name" -}}
{{- include "slurm-cluster.fullname" . }}
{{- end }}

{{- /*
NodeSet object name of a nodesets key: "<fullname>-worker-<key>".
Usage: {{ include "slurm-cluster.nodeset.name" (dict "context" $ "name" $key) }}
*/}}
{{- define "slurm-cluster.nodeset.name" -}}
{{- printf "%s-worker-%s" (include "slurm-cluster.fullname" .context) .name }}
{{- end }}

{{- /*
LoginSet object name (and login Service name) of a loginsets key: "<fullname>-login-<key>".
Usage: {{ include "slurm-cluster.loginset.name" (dict "context" $ "name" $key) }}
*/}}
{{- define "slurm-cluster.loginset.name" -}}
{{- printf "%s-login-%s" (include "slurm-cluster.fullname" .context) .name }}
{{- end }}

{{- /*
Secret holding slurm.key: slurmKey.secretRef.name, else "<fullname>-auth-slurm" (upstream's name).
Usage: {{ include "slurm-cluster.slurmKeySecretName" . }}
*/}}
{{- define "slurm-cluster.slurmKeySecretName" -}}
{{- (.Values.slurmKey.secretRef | default dict).name | default (include "slurm-cluster.componentName" (dict "context" . "suffix" "auth-slurm")) }}
{{- end }}

{{- /*
Secret holding jwt.key (HS256): jwtKey.secretRef.name, else "<fullname>-auth-jwt" (upstream's name). Other charts
(slurm-bridge Token, clients) reference it with key `jwtKey.secretRef.key` (default "jwt.key").
Usage: {{ include "slurm-cluster.jwtKeySecretName" . }}
*/}}
{{- define "slurm-cluster.jwtKeySecretName" -}}
{{- (.Values.jwtKey.secretRef | default dict).name | default (include "slurm-cluster.componentName" (dict "context" . "suffix" "auth-jwt")) }}
{{- end }}

{{- /*
Secret holding sssd.conf: sssd.secretRef.name, else "<fullname>-sssd-conf" (upstream's name).
Usage: {{ include "slurm-cluster.sssdSecretName" . }}
*/}}
{{- define "slurm-cluster.sssdSecretName" -}}
{{- (.Values.sssd.secretRef | default dict).name | default (include "slurm-cluster.componentName" (dict "context" . "suffix" "sssd-conf")) }}
{{- end }}

{{- /*
Key of sssd.conf in its Secret: sssd.secretRef.key, else "sssd.conf".
Usage: {{ include "slurm-cluster.sssdKey" . }}
*/}}
{{- define "slurm-cluster.sssdKey" -}}
{{- (.Values.sssd.secretRef | default dict).key | default "sssd.conf" }}
{{- end }}

{{- /*
Secret the Token writes: token.secretName, else "<fullname>-token-<username>".
Usage: {{ include "slurm-cluster.token.secretName" . }}
*/}}
{{- define "slurm-cluster.token.secretName" -}}
{{- .Values.token.secretName | default (include "slurm-cluster.token.name" .) }}
{{- end }}

{{- /*
Name of the Token object: "<fullname>-token-<username>", the user name folded to a DNS label
(lower case, other characters replaced by "-", at most 20 characters).
Usage: {{ include "slurm-cluster.token.name" . }}
*/}}
{{- define "slurm-cluster.token.name" -}}
{{- $user := regexReplaceAll "[^a-z0-9-]+" (lower .Values.token.username) "-" | trunc 20 | trimAll "-" | default "user" }}
{{- include "slurm-cluster.componentName" (dict "context" . "suffix" (printf "token-%s" $user)) }}
{{- end }}

{{- /*
Whether the chart creates the key Secrets: not with an external controller (keys come from the
external cluster) and not when an existing Secret is referenced.
Usage: {{ if include "slurm-cluster.createSlurmKey" . }}
*/}}
{{- define "slurm-cluster.createSlurmKey" -}}
{{- if and .Values.slurmKey.create (not .Values.controller.external) (not .Values.accounting.external) }}true{{ end }}
{{- end }}

{{- define "slurm-cluster.createJwtKey" -}}
{{- if and .Values.jwtKey.create (not .Values.controller.external) (not .Values.accounting.external) }}true{{ end }}
{{- end }}

{{- /*
Key of slurm.key / jwt.key in its Secret: secretRef.key, else "slurm.key" / "jwt.key".
Usage: {{ include "slurm-cluster.slurmKeyKey" . }}, {{ include "slurm-cluster.jwtKeyKey" . }}
*/}}
{{- define "slurm-cluster.slurmKeyKey" -}}
{{- (.Values.slurmKey.secretRef | default dict).key | default "slurm.key" }}
{{- end }}

{{- define "slurm-cluster.jwksKeyRef" -}}
{{- if .Values.jwksKeys.enabled }}
{{- $ref := .Values.jwksKeys.configMapRef | default dict }}
jwksKeyRef:
  name: {{ $ref.name | default (include "slurm-cluster.componentName" (dict "context" . "suffix" "auth-jwks")) | quote }}
  key: {{ $ref.key | default "jwks.json" | quote }}
{{- end }}
{{- end }}

{{- define "slurm-cluster.jwtKeyKey" -}}
{{- (.Values.jwtKey.secretRef | default dict).key | default "jwt.key" }}
{{- end }}

{{- /*
A key Secret created once with random data, then re-emitted unchanged from `lookup`; immutable.
Usage: {{ include "slurm-cluster.keySecret" (dict "context" . "name" $name "key" "slurm.key" "annotations" $a "component" "controller") }}
*/}}
{{- define "slurm-cluster.keySecret" -}}
{{- $ns := include "slurm-cluster.namespace" .context }}
{{- $existing := lookup "v1" "Secret" $ns .name }}
{{- $data := dict }}
{{- if and $existing $existing.data (hasKey $existing.data .key) }}
{{- $data = $existing.data }}
{{- else }}
{{- $_ := set $data .key (randAscii 1024 | b64enc) }}
{{- end }}
apiVersion: v1
kind: Secret
metadata:
  name: {{ .name | quote }}
  namespace: {{ $ns | quote }}
  labels:
    {{- include "slurm-cluster.labels" (dict "context" .context "component" "auth") | nindent 4 }}
  {{- with .annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
type: Opaque
immutable: true
data:
  {{- toYaml $data | nindent 2 }}
{{- end }}
