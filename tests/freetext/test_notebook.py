"""notebooks/train_freetext.ipynb runs top to bottom (on a small sample) and draws its plots."""

from __future__ import annotations

import nbformat
from nbclient import NotebookClient

from .conftest import ROOT

NOTEBOOK = ROOT / "notebooks" / "train_freetext.ipynb"


def test_notebook_executes_on_a_sample(monkeypatch):
    monkeypatch.setenv("GUARD_NOTEBOOK_SAMPLE", "300")
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel draws inline PNGs
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    ).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 3, "metrics, confusion matrices and feature plots"
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    for word in ("causal", "comparative", "quantity", "kw F1", "bow F1"):
        assert word in text
