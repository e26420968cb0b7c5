"""The pass pipeline: from the frontend's tensor-level IR to the loop-level IR the
backends emit (see ``docs/passes.md``)."""
from .canonicalize import Canonicalize
from .cse import CSE
from .dce import DCE
from .fuse import Fuse
from .levels import loop_level_problems
from .licm import LICM
from .lower import Lower
from .manager import Pass, PassError, PassManager, PassRecord, Report
from .materialize import Materialize
from .parallelize import Parallelize
from .peak import PeakBytes, peak_bytes
from .pipeline import default_passes, lower
from .select import Remark, SelectKernels

__all__ = ["Pass", "PassError", "PassManager", "PassRecord", "Report", "Canonicalize", "CSE",
           "DCE", "LICM", "Fuse", "Materialize", "Lower", "Parallelize", "PeakBytes", "peak_bytes",
           "default_passes", "lower", "loop_level_problems", "SelectKernels", "Remark"]
