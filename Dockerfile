# syntax=docker/dockerfile:1
# trueup's image for those who build their own: `docker build -t trueup .`. The release image
# comes from `make image` (tools/mkimage, no Docker daemon) and holds the same files.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
ARG BUILD_DATE=unknown
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.date=${BUILD_DATE}" \
      -o /out/trueup ./cmd/trueup \
 && mkdir -p /out/data

# Static base: CA certificates, /etc/passwd with nonroot (65532), no shell.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/trueup /trueup
COPY packaging/image/trueup.yaml /etc/trueup/trueup.yaml
COPY --from=build --chown=65532:65532 /out/data /var/lib/trueup
USER 65532:65532
WORKDIR /var/lib/trueup
ENV HOME=/var/lib/trueup
EXPOSE 8080
VOLUME /var/lib/trueup
HEALTHCHECK --interval=10s --timeout=6s --start-period=30s CMD ["/trueup", "healthcheck"]
ENTRYPOINT ["/trueup"]
CMD ["serve", "--config", "/etc/trueup/trueup.yaml"]
