"""Rewrite the IR snapshots of the registry kernels (tests/kernels.py).

    python tests/frontend/update_snapshots.py            # rewrite every snapshot
    python tests/frontend/update_snapshots.py q4k_gemv   # only the named ones

Review the diff before committing: a snapshot is the frontend's expected output.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from tests.kernels import KERNELS  # noqa: E402

SNAPSHOTS = HERE / "snapshots"


def main(names) -> None:
    SNAPSHOTS.mkdir(exist_ok=True)
    for name in names or sorted(KERNELS):
        path = SNAPSHOTS / f"{name}.nir"
        text = str(KERNELS[name].kernel.ir)
        old = path.read_text(encoding="utf-8") if path.exists() else None
        if old != text:
            path.write_text(text, encoding="utf-8")
            print(("updated " if old is not None else "created ") + str(path))


if __name__ == "__main__":
    main(sys.argv[1:])
