"""Where shipped data lives: inside the wheel under ``guard/_data``, or the source tree."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def data_path(name: str) -> Path:
    """Directory of shipped data ``name`` (``grammars``, ``models``, ``demo``).

    An installed wheel carries the top-level folders as ``guard/_data/<name>``;
    a source checkout (editable install) reads the folders beside the package.
    """
    packaged = resources.files("guard") / "_data" / name
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(str(resources.files("guard"))).parent / name
