"""Regenerates flowforge.api.v1 (sdk/api/v1) from proto/ with grpcio-tools.

Usage: python scripts/generate_proto.py [OUTPUT_DIR]

Without OUTPUT_DIR the committed package sdk/api/v1 is rewritten. The
regeneration test calls generate() with a temporary directory and compares.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
PROTO_PACKAGE = PROTO_ROOT / "flowforge" / "api" / "v1"
COMMITTED_PACKAGE = ROOT / "sdk" / "api" / "v1"


def generate(output_dir: Path) -> None:
    """Writes the *_pb2.py, *_pb2.pyi and *_pb2_grpc.py files into output_dir."""
    import grpc_tools
    from grpc_tools import protoc

    well_known = Path(grpc_tools.__file__).parent / "_proto"
    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in PROTO_PACKAGE.glob("*.proto"))
    with tempfile.TemporaryDirectory() as tmp:
        args = [
            "grpc_tools.protoc",
            f"-I{PROTO_ROOT}",
            f"-I{well_known}",
            f"--python_out={tmp}",
            f"--pyi_out={tmp}",
            f"--grpc_python_out={tmp}",
            *protos,
        ]
        if protoc.main(args) != 0:
            raise RuntimeError("protoc failed")
        output_dir.mkdir(parents=True, exist_ok=True)
        for generated in sorted((Path(tmp) / "flowforge" / "api" / "v1").iterdir()):
            shutil.copy(generated, output_dir / generated.name)
    init = output_dir / "__init__.py"
    init.write_text('"""Generated gRPC/protobuf code for the flowforge.api.v1 API (do not edit)."""\n')


if __name__ == "__main__":
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else COMMITTED_PACKAGE)
