module github.com/sctp-rdma/sctp-rdma

go 1.26.0

require (
	github.com/ishidawataru/sctp v0.0.0-20251114114122-19ddcbc6aae2
	github.com/pion/logging v0.2.4
	github.com/pion/sctp v1.11.3
	github.com/pion/transport/v5 v5.0.1
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.49.0
)

require (
	github.com/pion/randutil v0.1.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
