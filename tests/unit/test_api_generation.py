"""The committed flowforge.api.v1 code is exactly what proto/ generates, and buf lint is clean."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from scripts.generate_proto import COMMITTED_PACKAGE, ROOT, generate


def test_regenerating_the_api_gives_the_committed_files(tmp_path: Path) -> None:
    generate(tmp_path)
    generated = {p.name: p.read_text() for p in tmp_path.iterdir() if p.is_file()}
    committed = {p.name: p.read_text() for p in COMMITTED_PACKAGE.iterdir() if p.is_file()}
    assert sorted(generated) == sorted(committed)
    stale = [name for name in generated if generated[name] != committed[name]]
    assert not stale, f"regenerate with `python scripts/generate_proto.py`: {stale} differ from proto/"


def test_buf_lint_is_clean() -> None:
    buf = shutil.which("buf") or str(Path(sys.executable).parent / "buf")
    result = subprocess.run([buf, "lint"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
