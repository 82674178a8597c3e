{{- /*
SPDX-License-Identifier: Apache-2.0
NetworkPolicy rule helpers.
*/}}

{{- /*
Egress rules shared by the operator and the webhook: API server and DNS.
Usage: {{- include "slurm-operator.networkPolicy.baseEgress" . | nindent 4 }}
*/}}
{{- define "slurm-operator.networkPolicy.baseEgress" -}}
{{- $np := .Values.networkPolicy }}
- ports:
    {{- range $np.apiServer.ports }}
    - port: {{ . }}
      protocol: TCP
    {{- end }}
  {{- with $np.apiServer.cidrs }}
  to:
    {{- range . }}
    - ipBlock:
        cidr: {{ . | quote }}
    {{- end }}
  {{- end }}
{{- if $np.dns.enabled }}
- ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
  to:
    - namespaceSelector:
        {{- toYaml ($np.dns.namespaceSelector | default dict) | nindent 8 }}
      podSelector:
        {{- toYaml ($np.dns.podSelector | default dict) | nindent 8 }}
{{- end }}
{{- with $np.extraEgress }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- /*
Ingress rule admitting the configured scrapers to the metrics port, when metrics are on.
Usage: {{- include "slurm-operator.networkPolicy.metricsIngress" (dict "context" . "port" .Values.operator.metricsPort) | nindent 4 }}
*/}}
{{- define "slurm-operator.networkPolicy.metricsIngress" -}}
{{- $port := include "slurm-operator.metricsPort" .port | int }}
{{- if and $port .context.Values.networkPolicy.metrics.from }}
- ports:
    - port: {{ $port }}
      protocol: TCP
  from:
    {{- toYaml .context.Values.networkPolicy.metrics.from | nindent 4 }}
{{- end }}
{{- end }}
