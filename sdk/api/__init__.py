"""FlowForge gRPC API."""
