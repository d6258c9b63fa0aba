{{/* Names --------------------------------------------------------------------------------- */}}

{{- define "hostplane.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* "<release>-<chart>", or the release name alone when it already contains the chart name. */}}
{{- define "hostplane.fullname" -}}
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

{{- define "hostplane.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Name of a component's objects: include "hostplane.componentName" (list . "api") */}}
{{- define "hostplane.componentName" -}}
{{- $root := index . 0 }}
{{- printf "%s-%s" (include "hostplane.fullname" $root | trunc 40 | trimSuffix "-") (index . 1) }}
{{- end }}

{{/* The edge Service: site Ingresses point at it (HOSTPLANE_EDGE_SERVICE). */}}
{{- define "hostplane.edgeServiceName" -}}
{{- include "hostplane.componentName" (list . "edge") }}
{{- end }}

{{- define "hostplane.apiServiceName" -}}
{{- include "hostplane.componentName" (list . "api") }}
{{- end }}

{{/* The sqlite shards' headless Service: shard <pod> is reached at <pod>.<this>.<namespace>.svc.<clusterDomain>. */}}
{{- define "hostplane.sqliteServiceName" -}}
{{- include "hostplane.componentName" (list . "sqlite") }}
{{- end }}

{{/* The controller's leader-election Lease (HOSTPLANE_LEASE_NAME and the Role's resourceNames). */}}
{{- define "hostplane.leaseName" -}}
{{- default (include "hostplane.componentName" (list . "controller")) .Values.controller.leaseName }}
{{- end }}

{{/* "true" for the roles that call the Kubernetes API (api, controller): they get a token and a Role. */}}
{{- define "hostplane.callsKubernetes" -}}
{{- has . (list "api" "controller") }}
{{- end }}

{{/* Required settings: no placeholder default could be right, so rendering stops without them. */}}
{{- define "hostplane.baseUrl" -}}
{{- required "config.baseUrl is required: the public URL of the API, e.g. --set config.baseUrl=https://api.hostplane.example.com" .Values.config.baseUrl }}
{{- end }}

{{- define "hostplane.sitesDomain" -}}
{{- required "config.sitesDomain is required: sites are served at <slug>.<sitesDomain>, e.g. --set config.sitesDomain=sites.hostplane.example.com" .Values.config.sitesDomain }}
{{- end }}

{{/* Host of the API Ingress: ingress.host, or the host name of config.baseUrl. */}}
{{- define "hostplane.apiHost" -}}
{{- default (urlParse (include "hostplane.baseUrl" .)).hostname .Values.ingress.host }}
{{- end }}

{{/* Labels -------------------------------------------------------------------------------- */}}

{{- define "hostplane.labels" -}}
helm.sh/chart: {{ include "hostplane.chart" . }}
app.kubernetes.io/name: {{ include "hostplane.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: hostplane
{{- end }}

{{/* Labels of a component's objects: include "hostplane.componentLabels" (list . "api") */}}
{{- define "hostplane.componentLabels" -}}
{{ include "hostplane.labels" (index . 0) }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* Selector labels (immutable on Deployments: never add to these). */}}
{{- define "hostplane.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "hostplane.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* Image ---------------------------------------------------------------------------------- */}}

{{- define "hostplane.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* Environment ---------------------------------------------------------------------------- */}}

{{/* Settings every role reads: listen address, public URLs, PostgreSQL, S3, logging, tracing. */}}
{{- define "hostplane.env.common" -}}
{{- include "hostplane.env.commonIn" (list . "/tmp/hostplane") }}
{{- end }}

{{/*
The same with another data directory (the sqlite shards keep theirs on a PVC):
include "hostplane.env.commonIn" (list . "/var/lib/hostplane")
*/}}
{{- define "hostplane.env.commonIn" -}}
{{- $root := index . 0 }}
{{- $dataDir := index . 1 -}}
- name: PORT
  value: "8080"
- name: HOST
  value: "0.0.0.0"
{{- /* /metrics listens on loopback by default (no credential); Prometheus scrapes the pod's IP, and the NetworkPolicy says who may. */}}
- name: HOSTPLANE_METRICS_HOST
  value: "0.0.0.0"
- name: HOSTPLANE_BASE_URL
  value: {{ include "hostplane.baseUrl" $root | quote }}
- name: HOSTPLANE_SITES_DOMAIN
  value: {{ include "hostplane.sitesDomain" $root | quote }}
- name: HOSTPLANE_DATA_DIR
  value: {{ $dataDir }}
- name: LOG_LEVEL
  value: {{ $root.Values.config.logLevel | quote }}
{{- /* Always JSON in the cluster (the log collector reads it), even in a container given a TTY. */}}
- name: HOSTPLANE_LOG_FORMAT
  value: "json"
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ $root.Values.database.existingSecret | quote }}
      key: {{ $root.Values.database.secretKey | quote }}
- name: S3_BUCKET
  value: {{ $root.Values.s3.bucket | quote }}
{{- /* Where SQLite replicas live and how long: the shards write them, the controller deletes and reports them. */}}
- name: HOSTPLANE_SQLITE_REPLICA_PREFIX
  value: {{ $root.Values.sqlite.replication.prefix | quote }}
- name: HOSTPLANE_SQLITE_RETENTION_HOURS
  value: {{ $root.Values.sqlite.replication.retentionHours | toString | quote }}
{{- with $root.Values.s3.endpoint }}
- name: S3_ENDPOINT
  value: {{ . | quote }}
{{- end }}
- name: S3_REGION
  value: {{ $root.Values.s3.region | quote }}
- name: S3_FORCE_PATH_STYLE
  value: {{ $root.Values.s3.forcePathStyle | toString | quote }}
{{- with $root.Values.s3.existingSecret }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ . | quote }}
      key: {{ $root.Values.s3.accessKeyIdKey | quote }}
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . | quote }}
      key: {{ $root.Values.s3.secretAccessKeyKey | quote }}
{{- end }}
{{- with $root.Values.config.otlpEndpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
{{- end }}
{{- end }}

{{/* Cluster mode (api and controller): Site resources, Ingress wiring, leader election. */}}
{{- define "hostplane.env.kubernetes" -}}
- name: HOSTPLANE_KUBERNETES
  value: "true"
- name: HOSTPLANE_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: HOSTPLANE_POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: HOSTPLANE_INGRESS_CLASS
  value: {{ default .Values.ingress.className .Values.sites.ingressClassName | quote }}
- name: HOSTPLANE_EDGE_SERVICE
  value: {{ include "hostplane.edgeServiceName" . | quote }}
- name: HOSTPLANE_EDGE_SERVICE_PORT
  value: {{ .Values.edge.service.port | toString | quote }}
{{- with .Values.config.clusterOwnerEmail }}
- name: HOSTPLANE_CLUSTER_OWNER_EMAIL
  value: {{ . | quote }}
{{- end }}
- name: HOSTPLANE_LEASE_NAME
  value: {{ include "hostplane.leaseName" . | quote }}
- name: HOSTPLANE_RESYNC_SECONDS
  value: {{ .Values.config.resyncSeconds | toString | quote }}
{{- with .Values.sites.tls.issuer.name }}
- name: HOSTPLANE_TLS_ISSUER_NAME
  value: {{ . | quote }}
- name: HOSTPLANE_TLS_ISSUER_KIND
  value: {{ $.Values.sites.tls.issuer.kind | quote }}
{{- end }}
{{- with .Values.sites.tls.wildcardSecret }}
- name: HOSTPLANE_TLS_WILDCARD_SECRET
  value: {{ . | quote }}
{{- end }}
- name: HOSTPLANE_ROUTING_MODE
  value: {{ .Values.routing.mode | quote }}
{{- if eq .Values.routing.mode "gateway" }}
{{- $ref := include "hostplane.gatewayParentRef" . | fromYaml }}
- name: HOSTPLANE_GATEWAY_NAME
  value: {{ $ref.name | quote }}
- name: HOSTPLANE_GATEWAY_NAMESPACE
  value: {{ $ref.namespace | quote }}
{{- with $ref.sectionName }}
- name: HOSTPLANE_GATEWAY_SECTION
  value: {{ . | quote }}
{{- end }}
{{- if .Values.gateway.create }}
- name: HOSTPLANE_GATEWAY_LISTENERS
  value: "true"
- name: HOSTPLANE_GATEWAY_HTTPS_PORT
  value: {{ .Values.gateway.listeners.https.port | toString | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* The chart's Gateway for site hosts (gateway.create). */}}
{{- define "hostplane.gatewayName" -}}
{{- include "hostplane.componentName" (list . "sites") }}
{{- end }}

{{/*
Where the Site HTTPRoutes attach, as YAML {name, namespace, sectionName}: gateway.parentRef, its
empty fields filled from the chart's Gateway (its https listener when there is a wildcard Secret to
serve it with, else its http listener).
*/}}
{{- define "hostplane.gatewayParentRef" -}}
{{- $ref := .Values.gateway.parentRef }}
{{- if and (not $ref.name) (not .Values.gateway.create) }}
{{- fail "gateway.parentRef.name is required when gateway.create is false (routing.mode=gateway)" }}
{{- end }}
{{- if and .Values.gateway.create $ref.name (or (ne $ref.name (include "hostplane.gatewayName" .)) (and $ref.namespace (ne $ref.namespace .Release.Namespace))) }}
{{- fail (printf "gateway.parentRef names the Gateway %s/%s while gateway.create is true: the controller adds its listeners (and has RBAC) on the chart's Gateway %s only. Set gateway.create=false to attach the routes to %s, or leave gateway.parentRef.name empty" (default .Release.Namespace $ref.namespace) $ref.name (include "hostplane.gatewayName" .) $ref.name) }}
{{- end }}
name: {{ default (include "hostplane.gatewayName" .) $ref.name | quote }}
namespace: {{ default .Release.Namespace $ref.namespace | quote }}
{{- if $ref.sectionName }}
sectionName: {{ $ref.sectionName | quote }}
{{- else if and .Values.gateway.create (not $ref.name) }}
sectionName: {{ ternary "https" "http" (not (empty .Values.sites.tls.wildcardSecret)) | quote }}
{{- end }}
{{- end }}

{{/* Pod pieces shared by every Hostplane pod ---------------------------------------------- */}}

{{- define "hostplane.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.tmpVolume.sizeLimit }}
{{- end }}

{{- define "hostplane.tmpVolumeMount" -}}
- name: tmp
  mountPath: /tmp
{{- end }}

{{/*
Scheduling and pull secrets of a pod, one rule for every pod the chart makes: the component's own
value when set, else the global one (replaced, not merged).
include "hostplane.podScheduling" (list $root $componentValues), at the pod spec's indentation.
*/}}
{{- define "hostplane.podScheduling" -}}
{{- $root := index . 0 }}
{{- $values := index . 1 }}
{{- with default $root.Values.imagePullSecrets $values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with default $root.Values.nodeSelector $values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with default $root.Values.affinity $values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with default $root.Values.tolerations $values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
