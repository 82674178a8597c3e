{{- /*
SPDX-License-Identifier: Apache-2.0
Helpers of the admission webhook configurations (templates/admission/admission.yaml).
*/}}

{{- /*
Name of the Validating/MutatingWebhookConfiguration: the admission component's name, as upstream.
Usage: {{ include "slurm-bridge.admission.configName" . }}
*/}}
{{- define "slurm-bridge.admission.configName" -}}
{{- include "slurm-bridge.component.fullname" (dict "context" . "component" "admission") }}
{{- end }}

{{- /*
One webhook entry on pods (CREATE, UPDATE), as upstream v1.2.1 registers them.
Usage: {{ include "slurm-bridge.admission.webhook" (dict "context" . "path" "/mutate--v1-pod" "caBundle" $ca "mutating" true) }}
*/}}
{{- define "slurm-bridge.admission.webhook" -}}
{{- $a := .context.Values.admission -}}
- name: pods.slinky.slurm.net
  admissionReviewVersions:
    - v1
  clientConfig:
    {{- if .caBundle }}
    caBundle: {{ .caBundle | quote }}
    {{- end }}
    service:
      name: {{ include "slurm-bridge.component.fullname" (dict "context" .context "component" "admission") }}
      namespace: {{ include "slurm-bridge.namespace" .context }}
      path: {{ .path }}
      port: {{ int $a.service.port }}
  rules:
    - apiGroups:
        - ""
      apiVersions:
        - v1
      operations:
        - CREATE
        - UPDATE
      resources:
        - pods
      scope: Namespaced
  failurePolicy: {{ $a.failurePolicy }}
  matchPolicy: Equivalent
  sideEffects: None
  {{- if .mutating }}
  reinvocationPolicy: Never
  {{- end }}
  timeoutSeconds: {{ int $a.timeoutSeconds }}
  {{- /* the protected namespaces are excluded from any selector: they are never bridged */}}
  namespaceSelector:
    {{- include "slurm-bridge.excludeProtected" (dict "context" .context "selector" $a.namespaceSelector) | nindent 4 }}
  {{- with $a.objectSelector }}
  objectSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{- /*
Annotations of the webhook configurations (cert-manager CA injection).
Usage: {{- include "slurm-bridge.admission.configAnnotations" . | nindent 2 }}
*/}}
{{- define "slurm-bridge.admission.configAnnotations" -}}
{{- if .Values.admission.certManager.enabled }}
annotations:
  cert-manager.io/inject-ca-from: {{ printf "%s/%s" (include "slurm-bridge.namespace" .) (include "slurm-bridge.component.fullname" (dict "context" . "component" "admission")) | quote }}
{{- end }}
{{- end }}
