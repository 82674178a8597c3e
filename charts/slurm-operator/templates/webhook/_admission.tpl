{{- /*
SPDX-License-Identifier: Apache-2.0
Helpers of the admission objects (templates/webhook/admission.yaml).
*/}}

{{- /*
Kinds validated by the webhook: kind -> plural resource. Paths follow controller-runtime's
"/validate-<group with dashes>-<version>-<lowercase kind>" as registered by the v1.2.1 webhook.
Usage: {{ range $kind, $plural := (include "slurm-operator.webhook.kinds" . | fromYaml) }}
*/}}
{{- define "slurm-operator.webhook.kinds" -}}
Accounting: accountings
Controller: controllers
LoginSet: loginsets
NodeSet: nodesets
RestApi: restapis
Token: tokens
{{- end }}

{{- /*
Default namespace selector of the webhooks: webhook.namespaces (if any) minus excluded namespaces.
Usage: {{ include "slurm-operator.webhook.namespaceSelector" (dict "context" . "exclude" (list "kube-system")) }}
*/}}
{{- define "slurm-operator.webhook.namespaceSelector" -}}
matchExpressions:
  {{- with (include "slurm-operator.namespaces" (dict "context" .context "component" "webhook") | fromYamlArray) }}
  - key: kubernetes.io/metadata.name
    operator: In
    values:
      {{- toYaml . | nindent 6 }}
  {{- end }}
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values:
      {{- toYaml (.exclude | uniq) | nindent 6 }}
{{- end }}

{{- /*
clientConfig of a webhook entry.
Usage: {{ include "slurm-operator.webhook.clientConfig" (dict "context" . "path" "/x" "caBundle" $caBundle) }}
*/}}
{{- define "slurm-operator.webhook.clientConfig" -}}
{{- if .caBundle }}
caBundle: {{ .caBundle | quote }}
{{- end }}
service:
  name: {{ include "slurm-operator.webhook.name" .context | quote }}
  namespace: {{ include "slurm-operator.namespace" .context | quote }}
  path: {{ .path }}
  port: {{ .context.Values.webhook.service.port }}
{{- end }}

{{- /*
Annotations of the webhook configurations (cert-manager CA injection).
Usage: {{- include "slurm-operator.webhook.configAnnotations" . | nindent 2 }}
*/}}
{{- define "slurm-operator.webhook.configAnnotations" -}}
{{- if and .Values.certManager.enabled (not .Values.webhook.tls.existingSecret) }}
{{- $certificate := printf "%s/%s" (include "slurm-operator.namespace" .) .Values.certManager.secretName }}
annotations:
  cert-manager.io/inject-ca-from: {{ $certificate | quote }}
  certmanager.k8s.io/inject-ca-from: {{ $certificate | quote }}
{{- end }}
{{- end }}
