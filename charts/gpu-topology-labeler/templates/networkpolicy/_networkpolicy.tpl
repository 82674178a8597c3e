{{- /*
SPDX-License-Identifier: Apache-2.0
NetworkPolicy helpers of the gpu-topology-labeler chart.
*/}}

{{- /*
Egress rules shared by the controller and discovery NetworkPolicies: the API server (its
endpoint CIDRs when given, else any address, on networkPolicy.apiServer.ports), DNS when
enabled, then networkPolicy.extraEgress.
Usage: {{ include "gpu-topology-labeler.networkPolicy.egress" . | nindent 4 }}
*/}}
{{- define "gpu-topology-labeler.networkPolicy.egress" -}}
{{- $np := .Values.networkPolicy -}}
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
