"""Locate files shipped with the package (report templates, the default rule pack).

The top-level ``templates/`` folder is installed as ``l4lite.templates``; when running from a source checkout
(where the folder is not inside ``l4lite/``) we fall back to the checkout's folder.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path


def templates_dir() -> Path:
    try:
        return Path(str(importlib.resources.files("l4lite.templates")))
    except ModuleNotFoundError:
        return Path(__file__).resolve().parent.parent / "templates"


def rules_dir() -> Path:
    return Path(__file__).resolve().parent / "rules"
