{{/* The chart's name, overridable. */}}
{{- define "spread-scheduler.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: the release name alone when it already contains the chart name. */}}
{{- define "spread-scheduler.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "spread-scheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "spread-scheduler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "spread-scheduler.labels" -}}
{{ include "spread-scheduler.selectorLabels" . }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "spread-scheduler.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "spread-scheduler.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* repository:tag, or repository:tag@digest when a digest is given. */}}
{{- define "spread-scheduler.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s:%s@%s" .Values.image.repository $tag .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* The Lease's name: config.leaderElection.resourceName, else the first profile's schedulerName (as the scheduler defaults it). */}}
{{- define "spread-scheduler.leaseName" -}}
{{- $le := .Values.config.leaderElection | default dict }}
{{- $profiles := .Values.config.profiles | default list }}
{{- $first := dict }}
{{- if $profiles }}{{ $first = first $profiles }}{{ end }}
{{- $le.resourceName | default $first.schedulerName | default "spread-scheduler" }}
{{- end }}

{{/* The KubeSchedulerConfiguration: config as given, leaderElect from the top-level value, empty fields dropped. */}}
{{- define "spread-scheduler.config" -}}
{{- $config := deepCopy .Values.config }}
{{- $le := dict "leaderElect" .Values.leaderElect }}
{{- range $key, $value := ($config.leaderElection | default dict) }}
{{- if not (kindIs "invalid" $value) }}{{- if ne (toString $value) "" }}{{ $_ := set $le $key $value }}{{ end }}{{ end }}
{{- end }}
{{- $_ := set $config "leaderElection" $le }}
{{- $_ := set $config "apiVersion" "kubescheduler.config.k8s.io/v1" }}
{{- $_ := set $config "kind" "KubeSchedulerConfiguration" }}
{{- toYaml $config }}
{{- end }}

{{/* The Lease's namespace: config.leaderElection.resourceNamespace, else the release's (the pod's own). */}}
{{- define "spread-scheduler.leaseNamespace" -}}
{{- $le := .Values.config.leaderElection | default dict }}
{{- $le.resourceNamespace | default .Release.Namespace }}
{{- end }}
