{{- /*
SPDX-License-Identifier: Apache-2.0
Helpers of the helm test hooks.
*/}}

{{- /*
Name of the test objects.
Usage: {{ include "gpu-topology-labeler.tests.name" . }}
*/}}
{{- define "gpu-topology-labeler.tests.name" -}}
{{- include "gpu-topology-labeler.componentName" (dict "context" . "suffix" "test") }}
{{- end }}

{{- /*
Hook annotations of the test RBAC objects: created before the test pod, removed after success.
Usage: {{- include "gpu-topology-labeler.tests.rbacHookAnnotations" . | nindent 4 }}
*/}}
{{- define "gpu-topology-labeler.tests.rbacHookAnnotations" -}}
helm.sh/hook: test
helm.sh/hook-weight: "-10"
helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
{{- end }}

{{- /*
One kubectl check container.
Usage: {{ include "gpu-topology-labeler.tests.container" (dict "context" . "name" "x" "args" (list "get" "pods")) }}
*/}}
{{- define "gpu-topology-labeler.tests.container" -}}
- name: {{ .name }}
  image: {{ include "gpu-topology-labeler.image" (dict "context" .context "image" .context.Values.tests.image "path" "tests.image") | quote }}
  imagePullPolicy: {{ .context.Values.tests.image.pullPolicy }}
  command:
    - /bin/kubectl
  args:
    {{- range .args }}
    - {{ . | quote }}
    {{- end }}
  env:
    - name: HOME
      value: /tmp
  {{- with .context.Values.tests.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    runAsNonRoot: true
    allowPrivilegeEscalation: false
    readOnlyRootFilesystem: true
    capabilities:
      drop:
        - ALL
  volumeMounts:
    - name: tmp
      mountPath: /tmp
{{- end }}
