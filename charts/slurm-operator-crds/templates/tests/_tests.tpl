{{- /*
SPDX-License-Identifier: Apache-2.0
Helpers of the helm test hook.
*/}}

{{- /*
Hook annotations of the test RBAC objects: created before the test pod, removed after success.
Usage: {{- include "slurm-operator-crds.tests.rbacHookAnnotations" . | nindent 4 }}
*/}}
{{- define "slurm-operator-crds.tests.rbacHookAnnotations" -}}
helm.sh/hook: test
helm.sh/hook-weight: "-10"
helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
{{- end }}
