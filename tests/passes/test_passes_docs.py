"""docs/passes.md is generated from the real print_after="all" output and up to date."""
from ninfer_ir.passes import _docgen


def test_docs_passes_md_is_up_to_date():
    with open(_docgen.doc_path(), encoding="utf-8") as f:
        on_disk = f.read()
    assert on_disk == _docgen.render(), "run: python -m passes._docgen"


def test_docs_show_the_gemv_through_every_stage():
    text = _docgen.render()
    for stage in ("00-input", "01-canonicalize", "03-licm", "05-fuse", "06-materialize",
                  "07-lower", "08-expand", "12-dce"):
        assert f"### {stage}" in text
    assert "quantize_into(%x, %xq)" in text
