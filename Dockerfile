# distbench's image: the static binary on a distroless base, run as a
# non-root user. Build from the repository root (the .git directory goes
# into the build stage only, so that results name the commit they measured):
#
#	docker build -t REGISTRY/distbench:$(git rev-parse --short HEAD) .
#
# The binary is built without cgo: everything but the nccl strategy, which
# needs a CUDA base image and cgo (see README, "GPUs").

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=auto -o /out/distbench ./cmd/distbench

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/distbench /usr/local/bin/distbench
USER nonroot:nonroot
ENTRYPOINT ["/usr/local/bin/distbench"]
CMD ["--help"]
