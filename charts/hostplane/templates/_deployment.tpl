{{/*
The Deployment of one role of the single Hostplane binary (`hostplane serve --role <component>`):
include "hostplane.deployment" (list . "api"). The three roles differ only in
- the cluster-mode environment (api and controller talk to the Kubernetes API; the edge does not
  and runs without a ServiceAccount token),
- SMTP_URL and the trusted proxy setting (api, edge: behind an ingress controller),
- a preStop pause for the roles that receive traffic through a Service (api, edge),
- replicas (omitted for the edge while its HPA owns them),
- the edge's disk cache of large files: an emptyDir of its own (edge.diskCache).
*/}}
{{- define "hostplane.deployment" -}}
{{- $root := index . 0 }}
{{- $component := index . 1 }}
{{- $values := index $root.Values $component }}
{{- $servesTraffic := ne $component "controller" }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "hostplane.componentName" (list $root $component) }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "hostplane.componentLabels" (list $root $component) | nindent 4 }}
spec:
  {{- if not (and (eq $component "edge") $values.autoscaling.enabled) }}
  replicas: {{ $values.replicaCount }}
  {{- end }}
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      {{- include "hostplane.selectorLabels" (list $root $component) | nindent 6 }}
  strategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: 0
      maxSurge: 1
  template:
    metadata:
      labels:
        {{- include "hostplane.componentLabels" (list $root $component) | nindent 8 }}
        {{- with $values.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with $values.podAnnotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      serviceAccountName: {{ include "hostplane.componentName" (list $root $component) }}
      automountServiceAccountToken: {{ include "hostplane.callsKubernetes" $component }}
      {{- include "hostplane.podScheduling" (list $root $values) | nindent 6 }}
      {{- with $values.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      terminationGracePeriodSeconds: {{ $values.terminationGracePeriodSeconds }}
      containers:
        - name: {{ $component }}
          image: {{ include "hostplane.image" $root | quote }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args: ["serve", "--role", {{ $component | quote }}]
          ports:
            - name: http
              containerPort: 8080
              protocol: TCP
            # /metrics answers here only (HOSTPLANE_METRICS_PORT), never on the public port.
            - name: metrics
              containerPort: 9090
              protocol: TCP
          env:
            {{- include "hostplane.env.common" $root | nindent 12 }}
            {{- if $servesTraffic }}
            - name: HOSTPLANE_TRUST_PROXY
              value: {{ $root.Values.config.trustProxy | quote }}
            {{- end }}
            {{- if ne $component "edge" }}
            {{- include "hostplane.env.kubernetes" $root | nindent 12 }}
            {{- end }}
            {{- if eq $component "edge" }}
            # Large files (videos) kept on the pod's disk once read from S3 (0: off).
            - name: HOSTPLANE_EDGE_DISK_CACHE_MB
              value: {{ ternary $values.diskCache.sizeMB 0 $values.diskCache.enabled | quote }}
            {{- if $values.diskCache.enabled }}
            - name: HOSTPLANE_EDGE_DISK_CACHE_DIR
              value: {{ $values.diskCache.mountPath | quote }}
            {{- end }}
            {{- end }}
            {{- if and (eq $component "api") $root.Values.smtp.existingSecret }}
            - name: SMTP_URL
              valueFrom:
                secretKeyRef:
                  name: {{ $root.Values.smtp.existingSecret | quote }}
                  key: {{ $root.Values.smtp.secretKey | quote }}
            {{- end }}
            {{- if eq $component "api" }}
            {{- with $root.Values.smtp.from }}
            - name: MAIL_FROM
              value: {{ . | quote }}
            {{- end }}
            - name: HOSTPLANE_MAIL_MAX_ATTEMPTS
              value: {{ $root.Values.smtp.maxAttempts | quote }}
            - name: HOSTPLANE_MAIL_RETRY_SECONDS
              value: {{ $root.Values.smtp.retrySeconds | quote }}
            - name: HOSTPLANE_SIGNUP
              value: {{ $root.Values.accounts.signup | quote }}
            - name: HOSTPLANE_DOMAIN_VERIFICATION
              value: {{ $root.Values.accounts.domainVerification | quote }}
            - name: HOSTPLANE_MAX_SITES_PER_ACCOUNT
              value: {{ $root.Values.accounts.maxSitesPerAccount | quote }}
            {{- with $root.Values.files.extraTypes }}
            - name: HOSTPLANE_EXTRA_FILE_TYPES
              value: {{ join "," . | quote }}
            {{- end }}
            {{- with $root.Values.accounts.plansContact }}
            - name: HOSTPLANE_PLANS_CONTACT
              value: {{ . | quote }}
            {{- end }}
            {{- end }}
            {{- with $root.Values.config.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
            {{- with $values.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          startupProbe:
            httpGet:
              path: /healthz
              port: http
            periodSeconds: 2
            failureThreshold: 60
          livenessProbe:
            httpGet:
              path: /healthz
              port: http
            periodSeconds: 10
            timeoutSeconds: 3
            failureThreshold: 3
          readinessProbe:
            httpGet:
              path: /readyz
              port: http
            periodSeconds: 5
            timeoutSeconds: 3
            failureThreshold: 3
          {{- if $servesTraffic }}
          lifecycle:
            preStop:
              exec:
                command: ["sleep", {{ $values.preStopSleepSeconds | toString | quote }}]
          {{- end }}
          resources:
            {{- toYaml $values.resources | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.containerSecurityContext | nindent 12 }}
          volumeMounts:
            {{- include "hostplane.tmpVolumeMount" $root | nindent 12 }}
            {{- if and (eq $component "edge") $values.diskCache.enabled }}
            - name: disk-cache
              mountPath: {{ $values.diskCache.mountPath }}
            {{- end }}
      volumes:
        {{- include "hostplane.tmpVolume" $root | nindent 8 }}
        {{- if and (eq $component "edge") $values.diskCache.enabled }}
        - name: disk-cache
          emptyDir:
            sizeLimit: {{ $values.diskCache.sizeLimit }}
        {{- end }}
      {{- with $values.topologySpreadConstraints }}
      topologySpreadConstraints:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end }}

{{/* PodDisruptionBudget of a component: include "hostplane.pdb" (list . "api") */}}
{{- define "hostplane.pdb" -}}
{{- $root := index . 0 }}
{{- $component := index . 1 }}
{{- $values := index $root.Values $component }}
{{- if $values.pdb.enabled }}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "hostplane.componentName" (list $root $component) }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "hostplane.componentLabels" (list $root $component) | nindent 4 }}
spec:
  maxUnavailable: {{ $values.pdb.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "hostplane.selectorLabels" (list $root $component) | nindent 6 }}
{{- end }}
{{- end }}

{{/* ServiceAccount of a component: include "hostplane.serviceAccount" (list . "api") */}}
{{- define "hostplane.serviceAccount" -}}
{{- $root := index . 0 }}
{{- $component := index . 1 }}
{{- $values := index $root.Values $component }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "hostplane.componentName" (list $root $component) }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "hostplane.componentLabels" (list $root $component) | nindent 4 }}
  {{- with $values.serviceAccount.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- /* Only the api and the controller call the Kubernetes API (not the edge, not the sqlite shards). */}}
automountServiceAccountToken: {{ include "hostplane.callsKubernetes" $component }}
{{- end }}
