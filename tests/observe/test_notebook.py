"""notebooks/monitoring.ipynb runs from top to bottom (its own asserts check the story it tells), and is stored
with its outputs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "monitoring.ipynb"


@pytest.mark.slow
def test_monitoring_notebook_executes(tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs)
    assert "flagged [('order.shipped_at', 'contradicted')] from 18:00; prose drift from 20:00" in text
    assert "Claims per field" in text and "c 2" in text  # the report is plain text, not a rich Jupyter display
    assert any("image/png" in o.get("data", {}) for o in outputs)
    assert not MACHINE_PATH.search(json.dumps(outputs))


MACHINE_PATH = re.compile(r"(?:/(?:tmp|home|root|work|usr|var|Users)/|[A-Za-z]:\\\\)")


def test_the_stored_notebook_shows_its_outputs_and_no_machine_path() -> None:
    """Stored with its outputs so the plot shows where the repository is browsed; none names this machine."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert any("image/png" in o.get("data", {}) for o in outputs)
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert all(cell.get("execution_count") for cell in nb.cells if cell.cell_type == "code")
    shown = json.dumps(outputs)
    assert not MACHINE_PATH.search(shown), MACHINE_PATH.search(shown)
