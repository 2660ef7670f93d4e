"""Generated gRPC/protobuf code for the flowforge.api.v1 API (do not edit)."""
