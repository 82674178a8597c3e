{{- /*
SPDX-License-Identifier: Apache-2.0
Helpers of the helm test hooks.
*/}}

{{- /*
Name of the test objects.
Usage: {{ include "slurm-bridge.tests.name" . }}
*/}}
{{- define "slurm-bridge.tests.name" -}}
{{- include "slurm-bridge.componentName" (dict "context" . "suffix" "test") }}
{{- end }}

{{- /*
Hook annotations of the test RBAC objects: created before the test pod, removed after success.
Usage: {{- include "slurm-bridge.tests.rbacHookAnnotations" . | nindent 4 }}
*/}}
{{- define "slurm-bridge.tests.rbacHookAnnotations" -}}
helm.sh/hook: test
helm.sh/hook-weight: "-10"
helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
{{- end }}

{{- /*
One kubectl check container.
Usage: {{ include "slurm-bridge.tests.container" (dict "context" . "name" "x" "args" (list "get" "pods")) }}
*/}}
{{- define "slurm-bridge.tests.container" -}}
- name: {{ .name }}
  image: {{ include "slurm-bridge.image" (dict "context" .context "image" .context.Values.tests.image "path" "tests.image") | quote }}
  imagePullPolicy: {{ .context.Values.tests.image.pullPolicy }}
  command:
    - /bin/kubectl
  args:
    {{- toYaml .args | nindent 4 }}
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
