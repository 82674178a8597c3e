{{- /*
SPDX-License-Identifier: Apache-2.0
The one source of the helpers the suite's charts share. `python -m slinky_schemagen.helpers`
(run by `nox -s docs`) writes each chart's templates/_common.tpl from it: "<chart>" becomes the
chart's name, and a chart gets the helpers its templates use, less the ones it keeps its own
(slinky_schemagen/helpers.py, OWN, says why). Each block is a doc comment, then the define; no
blank line inside a block.
*/}}

{{- /*
Chart name, truncated to 63 characters.
Usage: {{ include "<chart>.name" . }}
*/}}
{{- define "<chart>.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- /*
Fully qualified base name of every object, truncated to 63 characters.
Usage: {{ include "<chart>.fullname" . }}
*/}}
{{- define "<chart>.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- /*
Name of a component object: the base name truncated to 52 characters (less for suffixes over
10 characters, so the result stays within 63), then "-<suffix>".
Usage: {{ include "<chart>.componentName" (dict "context" . "suffix" "webhook") }}
*/}}
{{- define "<chart>.componentName" -}}
{{- $max := min 52 (sub 62 (len .suffix)) | int }}
{{- printf "%s-%s" (include "<chart>.fullname" .context | trunc $max | trimSuffix "-") .suffix }}
{{- end }}

{{- /*
Chart name and version for the helm.sh/chart label.
Usage: {{ include "<chart>.chart" . }}
*/}}
{{- define "<chart>.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- /*
Namespace of every namespaced object.
Usage: {{ include "<chart>.namespace" . }}
*/}}
{{- define "<chart>.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- /*
Image reference of an image value: an object {registry, repository, tag, digest} or, where the
chart takes upstream's form, a whole reference as a string (kept as given but for its host).
The registry host is the first path element of repository when that names a host (it holds a
"." or a ":", or is "localhost", as Docker reads a reference), else registry. global.imageRegistry
replaces the host of every image, so one value moves every pod to a mirror. tag defaults to
.Chart.AppVersion; digest wins over tag. path is the image's values path, for the error message.
Usage: {{ include "<chart>.image" (dict "context" . "image" .Values.image "path" "image") }}
*/}}
{{- define "<chart>.image" -}}
{{- $image := .image }}
{{- $whole := kindIs "string" $image }}
{{- if $whole }}
{{- $image = dict "repository" $image }}
{{- end }}
{{- $repository := required (printf "%s.repository is required: the image's repository, with or without its registry host (e.g. ghcr.io/slinkyproject/slurmctld)" (.path | default "image")) $image.repository }}
{{- $host := $image.registry | default "" }}
{{- $parts := splitn "/" 2 $repository }}
{{- if and $parts._1 (or (contains "." $parts._0) (contains ":" $parts._0) (eq $parts._0 "localhost")) }}
{{- $host = $parts._0 }}
{{- $repository = $parts._1 }}
{{- end }}
{{- $global := .context.Values.global | default dict }}
{{- $host = $global.imageRegistry | default $host }}
{{- $ref := $repository }}
{{- if $host }}
{{- $ref = printf "%s/%s" (trimSuffix "/" $host) $repository }}
{{- end }}
{{- if $whole }}
{{- $ref }}
{{- else if $image.digest }}
{{- printf "%s@%s" $ref $image.digest }}
{{- else }}
{{- printf "%s:%s" $ref (toString ($image.tag | default .context.Chart.AppVersion)) }}
{{- end }}
{{- end }}

{{- /*
imagePullSecrets block: global.imagePullSecrets then imagePullSecrets, strings or {name}, deduplicated.
Renders nothing when the list is empty.
Usage: {{- include "<chart>.imagePullSecrets" . | nindent 6 }}
*/}}
{{- define "<chart>.imagePullSecrets" -}}
{{- $global := .Values.global | default dict }}
{{- $names := list }}
{{- range (concat ($global.imagePullSecrets | default list) (.Values.imagePullSecrets | default list)) }}
{{- if kindIs "map" . }}
{{- if .name }}{{- $names = append $names .name }}{{- end }}
{{- else if . }}
{{- $names = append $names (toString .) }}
{{- end }}
{{- end }}
{{- with ($names | uniq) }}
imagePullSecrets:
{{- range . }}
  - name: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}

{{- /*
PriorityClass of a component: its own value, else the top-level priorityClassName.
Usage: {{ include "<chart>.priorityClassName" (dict "context" . "component" "controller") }}
*/}}
{{- define "<chart>.priorityClassName" -}}
{{- (index .context.Values .component).priorityClassName | default .context.Values.priorityClassName }}
{{- end }}

{{- /*
RBAC rules file of a component (files/rbac/<component>-rules.yaml), as YAML.
Usage: {{ $rules := include "<chart>.rbacRules" (dict "context" . "component" "operator") | fromYaml }}
*/}}
{{- define "<chart>.rbacRules" -}}
{{- .context.Files.Get (printf "files/rbac/%s-rules.yaml" .component) }}
{{- end }}
