{{- /*
SPDX-License-Identifier: Apache-2.0
NetworkPolicy helpers: one policy per component, each peer the chart knows.
*/}}

{{- /*
Egress every component needs: the API server (any address on its ports unless
networkPolicy.apiServer.cidrs narrows it) and the cluster DNS, then networkPolicy.extraEgress.
Usage: {{- include "slurm-bridge.networkPolicy.baseEgress" . | nindent 4 }}
*/}}
{{- define "slurm-bridge.networkPolicy.baseEgress" -}}
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
Egress to slurmrestd (scheduler and controllers). When sharedConfig.slurmRestApi names a Service
(templates/token/_slurm.tpl), the peer is known: the slurmrestd pods
(app.kubernetes.io/name=slurmrestd) in that Service's namespace, on 6820 (their port) and the URL's
port. Any other host may be anywhere: the URL's port, any address.
Usage: {{- include "slurm-bridge.networkPolicy.slurmrestdEgress" . | nindent 4 }}
*/}}
{{- define "slurm-bridge.networkPolicy.slurmrestdEgress" -}}
{{- $svc := include "slurm-bridge.restapi.service" . | fromYaml }}
{{- if $svc.name }}
- ports:
    {{- range (list 6820 (int $svc.port) | uniq) }}
    - port: {{ . }}
      protocol: TCP
    {{- end }}
  to:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: {{ $svc.namespace | quote }}
      podSelector:
        matchLabels:
          app.kubernetes.io/name: slurmrestd
{{- else }}
{{- $url := urlParse .Values.sharedConfig.slurmRestApi }}
{{- $port := regexFind ":[0-9]+$" $url.host | trimPrefix ":" }}
{{- if not $port }}{{- $port = ternary "443" "80" (eq $url.scheme "https") }}{{- end }}
- ports:
    - port: {{ $port | int }}
      protocol: TCP
{{- end }}
{{- end }}

{{- /*
Ingress rules (a YAML list) admitting networkPolicy.metrics.from to a metrics port; empty without peers.
Usage: {{ $rules := include "slurm-bridge.networkPolicy.metricsIngress" (dict "context" . "port" 8080) | fromYamlArray }}
*/}}
{{- define "slurm-bridge.networkPolicy.metricsIngress" -}}
{{- with .context.Values.networkPolicy.metrics.from }}
- ports:
    - port: {{ $.port }}
      protocol: TCP
  from:
    {{- toYaml . | nindent 4 }}
{{- end }}
{{- end }}

{{- /*
A component's NetworkPolicy from its ingress rules (a list, networkPolicy.extraIngress appended)
and whether it talks to slurmrestd.
Usage: {{ include "slurm-bridge.networkPolicy" (dict "context" . "component" "scheduler" "ingress" $rules "slurmrestd" true) }}
*/}}
{{- define "slurm-bridge.networkPolicy" -}}
{{- $np := .context.Values.networkPolicy }}
{{- $ctx := dict "context" .context "component" .component }}
{{- $ingress := concat (.ingress | default list) ($np.extraIngress | default list) }}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ include "slurm-bridge.component.fullname" $ctx | quote }}
  namespace: {{ include "slurm-bridge.namespace" .context | quote }}
  labels:
    {{- include "slurm-bridge.labels" $ctx | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- include "slurm-bridge.selectorLabels" $ctx | nindent 6 }}
  policyTypes:
    - Ingress
    - Egress
  {{- if $ingress }}
  ingress:
    {{- toYaml $ingress | nindent 4 }}
  {{- else }}
  ingress: []
  {{- end }}
  egress:
    {{- include "slurm-bridge.networkPolicy.baseEgress" .context | trim | nindent 4 }}
    {{- if .slurmrestd }}
    {{- include "slurm-bridge.networkPolicy.slurmrestdEgress" .context | trim | nindent 4 }}
    {{- end }}
{{- end }}
