# distbench's CPU image, built with the Go compiler from a registry:
#
#	docker build -t REGISTRY/distbench:$(git rev-parse --short HEAD) .
#
# Its final stage is deploy/image/Containerfile's (an empty base with the
# static binary, run as a non-root user), which `make image` builds without
# a registry from a binary built on the host, and tests by running a
# checked allreduce in it. The .git directory goes into the build stage
# only, so that --version and results name the commit. No cgo, so no nccl
# strategy or GPU telemetry: deploy/image/Dockerfile.gpu is the GPU image.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=auto -o /out/distbench ./cmd/distbench

FROM scratch
COPY deploy/image/rootfs/ /
COPY --from=build /out/distbench /usr/local/bin/distbench
COPY LICENSE NOTICE /usr/local/bin/
USER 65532:65532
ENV TMPDIR=/tmp
ENTRYPOINT ["/usr/local/bin/distbench"]
CMD ["--help"]
