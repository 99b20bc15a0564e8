{{/* The name of the chart's objects: the release's, with the chart's name unless it holds it. */}}
{{- define "trueup.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "trueup.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "trueup.selectorLabels" -}}
app.kubernetes.io/name: {{ include "trueup.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "trueup.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "trueup.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The controller config: .Values.config, with server.externalURL from the ingress when unset. */}}
{{- define "trueup.config" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- if and .Values.ingress.enabled .Values.ingress.hosts -}}
{{- $server := default dict (get $cfg "server") -}}
{{- if not (get $server "externalURL") -}}
{{- $scheme := ternary "https" "http" (gt (len .Values.ingress.tls) 0) -}}
{{- $_ := set $server "externalURL" (printf "%s://%s/" $scheme (first .Values.ingress.hosts).host) -}}
{{- $_ := set $cfg "server" $server -}}
{{- end -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/* The container's port: config.server.listen's (host:port; an empty host is every address). */}}
{{- define "trueup.containerPort" -}}
{{- $server := default dict (get .Values.config "server") -}}
{{- $listen := toString (default "" (get $server "listen")) -}}
{{- $port := regexFind ":[0-9]+$" $listen | trimPrefix ":" -}}
{{- if or (not $port) (gt (atoi $port) 65535) (lt (atoi $port) 1) -}}
{{- fail (printf "config.server.listen %q: want host:port with a port number (0.0.0.0:8080); the container's port is its port" $listen) -}}
{{- end -}}
{{- $port -}}
{{- end -}}

{{/* The Secret holding the database URL, and its key. */}}
{{- define "trueup.databaseSecret" -}}
{{- default (printf "%s-database" (include "trueup.fullname" .)) .Values.database.existingSecret -}}
{{- end -}}
{{- define "trueup.databaseSecretKey" -}}
{{- ternary .Values.database.existingSecretKey "url" (ne .Values.database.existingSecret "") -}}
{{- end -}}

{{/* The environment of trueup's containers: the database URL, the admin token, env and envFrom. */}}
{{- define "trueup.containerEnv" }}
          {{- if or .Values.database.existingSecret .Values.database.url .Values.adminTokenSHA256 .Values.env }}
          env:
            {{- if or .Values.database.existingSecret .Values.database.url }}
            - name: TRUEUP_DATABASE_URL
              valueFrom:
                secretKeyRef:
                  name: {{ include "trueup.databaseSecret" . }}
                  key: {{ include "trueup.databaseSecretKey" . }}
            {{- end }}
            {{- if .Values.adminTokenSHA256 }}
            - name: TRUEUP_ADMIN_TOKEN_SHA256
              value: {{ .Values.adminTokenSHA256 | quote }}
            {{- end }}
            {{- with .Values.env }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- end }}
          {{- with .Values.envFrom }}
          envFrom:
            {{- toYaml . | nindent 12 }}
          {{- end }}
{{- end }}
