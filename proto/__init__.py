"""The contract between memnestd and its clients: gRPC messages, versions, where the
socket lives."""
