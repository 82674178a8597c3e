{{- /*
SPDX-License-Identifier: Apache-2.0
vendor.google.a3mega (upstream's key): GKE A3 Mega nodes (8 NVIDIA H100 80GB, GPUDirect-TCPXO over
8 extra NICs). Each entry targets one NodeSet: its pods go to the entry's GKE node pool, get the 9
networks (eth0 on the first), the TCPXO receive-data-path daemon as a sidecar, the NCCL plugin's
device folder and all 8 GPUs; slurmd reports `Gres=gpu:nvidia_h100_80gb_hbm3:8`. One ConfigMap
`<fullname>-config-a3mega` serves gres.conf `AutoDetect=nvidia`, unless the cluster's config
files already have a gres.conf. templates/validate.yaml checks the networks.
Ref: https://cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-tcpx
*/}}

{{- /*
The a3mega entries (a list, empty when off).
Usage: {{ $entries := include "slurm-cluster.a3mega.entries" . | fromYamlArray }}
*/}}
{{- define "slurm-cluster.a3mega.entries" -}}
{{- toYaml (dig "google" "a3mega" list (.Values.vendor | default dict) | default list) }}
{{- end }}

{{- /*
ConfigMap of the A3 Mega gres.conf.
Usage: {{ include "slurm-cluster.a3mega.configName" . }}
*/}}
{{- define "slurm-cluster.a3mega.configName" -}}
{{- include "slurm-cluster.componentName" (dict "context" . "suffix" "config-a3mega") }}
{{- end }}

{{- /*
"true" when the chart serves the A3 Mega gres.conf: some a3mega entry, and no gres.conf among the
cluster's config files (configFiles or the one made for `gpu` NodeSets).
Usage: {{ if include "slurm-cluster.a3mega.gresConf" . }}
*/}}
{{- define "slurm-cluster.a3mega.gresConf" -}}
{{- if and (include "slurm-cluster.a3mega.entries" . | fromYamlArray) (not (hasKey (include "slurm-cluster.configFiles" . | fromYaml) "gres.conf")) }}true{{ end }}
{{- end }}

{{- /*
A list with `add` merged in by `name`: an item of the same name is merged over (add wins), the
others are appended in order.
Usage: {{ $list = include "slurm-cluster.mergeByName" (dict "list" $list "add" $more) | fromYamlArray }}
*/}}
{{- define "slurm-cluster.mergeByName" -}}
{{- $out := list }}
{{- $added := dict }}
{{- range .add }}{{- $_ := set $added (toString .name) . }}{{- end }}
{{- $seen := dict }}
{{- range (.list | default list) }}
{{- $name := toString (dig "name" "" (ternary . dict (kindIs "map" .))) }}
{{- if and $name (hasKey $added $name) }}
{{- $out = append $out (mergeOverwrite (deepCopy .) (deepCopy (get $added $name))) }}
{{- $_ := set $seen $name true }}
{{- else }}
{{- $out = append $out . }}
{{- end }}
{{- end }}
{{- range .add }}
{{- if not (hasKey $seen (toString .name)) }}{{- $out = append $out . }}{{- end }}
{{- end }}
{{- toYaml $out }}
{{- end }}

{{- /*
A merged NodeSet with the A3 Mega settings of the entry that targets it (unchanged when none).
Usage: {{ $ns = include "slurm-cluster.a3mega.nodeset" (dict "context" $ "name" $name "ns" $ns) | fromYaml }}
*/}}
{{- define "slurm-cluster.a3mega.nodeset" -}}
{{- $ns := deepCopy .ns }}
{{- $entry := dict }}
{{- $index := 0 }}
{{- range $i, $e := (include "slurm-cluster.a3mega.entries" .context | fromYamlArray) }}
{{- if eq (toString ($e.targetNodeSet | default "")) $.name }}{{- $entry = $e }}{{- $index = $i }}{{- end }}
{{- end }}
{{- if $entry }}
{{- $networks := $entry.networks | default list }}
{{- $gpus := 8 }}
{{- $lib := "/usr/local/nvidia/lib64" }}
{{- $devices := "/dev/aperture_devices" }}
{{- /* pod metadata: the networks (eth<i> on networks[i]) and the GPU devices of the sidecar */}}
{{- $nics := list }}
{{- range $i, $network := $networks }}
{{- $nics = append $nics (printf "  {\"interfaceName\":\"eth%d\",\"network\":%s}" $i (toJson (toString $network))) }}
{{- end }}
{{- $sidecarDevices := list }}
{{- range $i := until $gpus }}{{- $sidecarDevices = append $sidecarDevices (printf "- path: /dev/nvidia%d" $i) }}{{- end }}
{{- $sidecarDevices = concat $sidecarDevices (list "- path: /dev/nvidiactl" "- path: /dev/nvidia-uvm" "- path: /dev/dmabuf_import_helper") }}
{{- $meta := $ns.metadata | default dict }}
{{- $annotations := $meta.annotations | default dict }}
{{- $_ := set $annotations "devices.gke.io/container.tcpxo-daemon" (printf "%s\n" (join "\n" $sidecarDevices)) }}
{{- $_ := set $annotations "networking.gke.io/default-interface" "eth0" }}
{{- $_ := set $annotations "networking.gke.io/interfaces" (printf "[\n%s\n]\n" (join ",\n" $nics)) }}
{{- $_ := set $meta "annotations" $annotations }}
{{- $_ := set $ns "metadata" $meta }}
{{- /* pod spec: the node pool, the TCPXO daemon and the host folders it and slurmd need */}}
{{- $spec := $ns.podSpec | default dict }}
{{- $_ := set $spec "nodeSelector" (merge (dict "cloud.google.com/gke-nodepool" (toString $entry.nodePool)) ($spec.nodeSelector | default dict)) }}
{{- $_ := set $spec.nodeSelector "cloud.google.com/gke-nodepool" (toString $entry.nodePool) }}
{{- $daemon := dict "name" "tcpxo-daemon" "image" "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21" "imagePullPolicy" "Always" }}
{{- $_ := set $daemon "command" (list "/bin/sh" "-c") }}
{{- $_ := set $daemon "args" (list (printf "set -ex\nchmod 755 /fts/entrypoint_rxdm_container.sh\n/fts/entrypoint_rxdm_container.sh --num_hops=2 --num_nics=%d --uid= --alsologtostderr\n" $gpus)) }}
{{- $_ := set $daemon "securityContext" (dict "capabilities" (dict "add" (list "NET_ADMIN" "NET_BIND_SERVICE"))) }}
{{- $_ := set $daemon "volumeMounts" (list (dict "name" "libraries" "mountPath" $lib) (dict "name" "sys" "mountPath" "/hostsysfs") (dict "name" "proc-sys" "mountPath" "/hostprocsysfs")) }}
{{- $_ := set $daemon "env" (list (dict "name" "LD_LIBRARY_PATH" "value" $lib)) }}
{{- $_ := set $spec "containers" (include "slurm-cluster.mergeByName" (dict "list" $spec.containers "add" (list $daemon)) | fromYamlArray) }}
{{- $volumes := list (dict "name" "libraries" "hostPath" (dict "path" "/home/kubernetes/bin/nvidia/lib64")) (dict "name" "sys" "hostPath" (dict "path" "/sys")) (dict "name" "proc-sys" "hostPath" (dict "path" "/proc/sys")) (dict "name" "aperture-devices" "hostPath" (dict "path" $devices)) }}
{{- $_ := set $spec "volumes" (include "slurm-cluster.mergeByName" (dict "list" $spec.volumes "add" $volumes) | fromYamlArray) }}
{{- $_ := set $ns "podSpec" $spec }}
{{- /* slurmd: the NCCL plugin's library and device folder, and all the GPUs */}}
{{- $slurmd := $ns.slurmd | default dict }}
{{- $_ := set $slurmd "env" (include "slurm-cluster.mergeByName" (dict "list" $slurmd.env "add" (list (dict "name" "LD_LIBRARY_PATH" "value" $lib) (dict "name" "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY" "value" $devices))) | fromYamlArray) }}
{{- $_ := set $slurmd "volumeMounts" (include "slurm-cluster.mergeByName" (dict "list" $slurmd.volumeMounts "add" (list (dict "name" "aperture-devices" "mountPath" $devices))) | fromYamlArray) }}
{{- $resources := $slurmd.resources | default dict }}
{{- range $field := list "requests" "limits" }}
{{- $_ := set $resources $field (merge (dict "nvidia.com/gpu" $gpus) (get $resources $field | default dict)) }}
{{- $_ := set (get $resources $field) "nvidia.com/gpu" $gpus }}
{{- end }}
{{- $_ := set $slurmd "resources" $resources }}
{{- $_ := set $ns "slurmd" $slurmd }}
{{- /* the node's GPUs: slurm-cluster.nodeset.extraConf writes them into its one Gres= (values.yaml `gpu`) */}}
{{- $_ := set $ns "vendorGres" (printf "gpu:nvidia_h100_80gb_hbm3:%d" $gpus) }}
{{- $_ := set $ns "vendorGresFrom" (printf "vendor.google.a3mega[%d]" $index) }}
{{- end }}
{{- toYaml $ns }}
{{- end }}
