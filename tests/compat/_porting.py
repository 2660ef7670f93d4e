"""The Temporal code under ``temporal/``, ported once per process by ``scripts/port_from_temporal.py``.

``ported_module("test_activities")`` is ``temporal/test_activities.py`` after the import rewrite,
imported as ``temporal_ported.test_activities`` from a temporary folder.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType

from scripts.port_from_temporal import port_tree

SOURCE = Path(__file__).parent / "temporal"
PACKAGE = "temporal_ported"


@functools.cache
def _ported_root() -> Path:
    root = Path(tempfile.mkdtemp(prefix="flowforge-compat-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    port_tree(SOURCE, root / PACKAGE)
    sys.path.insert(0, str(root))
    return root


def ported_module(name: str) -> ModuleType:
    """The ported copy of ``temporal/<name>.py``."""
    _ported_root()
    return importlib.import_module(f"{PACKAGE}.{name}")
