{{- /*
SPDX-License-Identifier: Apache-2.0
NetworkPolicy helpers of the slurm-cluster chart.
*/}}

{{- /*
Peers that count as "this cluster": the Slurm pods of the namespace (operator-set
app.kubernetes.io/name), the chart's own pods (helm test) and the operator namespace.
Usage: {{- include "slurm-cluster.networkPolicy.clusterPeers" . | nindent 8 }}
*/}}
{{- define "slurm-cluster.networkPolicy.clusterPeers" -}}
- podSelector:
    matchExpressions:
      - key: app.kubernetes.io/name
        operator: In
        values:
          - slurmctld
          - slurmd
          - slurmrestd
          - slurmdbd
          - login
          - {{ include "slurm-cluster.name" . | quote }}
- namespaceSelector:
    matchLabels:
      kubernetes.io/metadata.name: {{ .Values.networkPolicy.operatorNamespace | quote }}
{{- end }}

{{- /*
A NetworkPolicy admitting cluster peers (and extra peers) to one Slinky daemon.
Usage: {{ include "slurm-cluster.networkPolicy" (dict "context" . "component" "controller" "app" "slurmctld" "instance" $name "port" 6817 "extra" list) }}
*/}}
{{- define "slurm-cluster.networkPolicy" -}}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ include "slurm-cluster.componentName" (dict "context" .context "suffix" .component) | quote }}
  namespace: {{ include "slurm-cluster.namespace" .context | quote }}
  labels:
    {{- include "slurm-cluster.labels" (dict "context" .context "component" .component) | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      app.kubernetes.io/name: {{ .app | quote }}
      app.kubernetes.io/instance: {{ .instance | quote }}
  policyTypes:
    - Ingress
  ingress:
    - from:
        {{- include "slurm-cluster.networkPolicy.clusterPeers" .context | nindent 8 }}
        {{- with .extra }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      ports:
        - protocol: TCP
          port: {{ .port }}
    {{- with .metricsFrom }}
    - from:
        {{- toYaml . | nindent 8 }}
      ports:
        - protocol: TCP
          port: {{ $.port }}
    {{- end }}
{{- end }}
