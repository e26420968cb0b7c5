"""LLVM IR generation from loop-level IR (llvmlite.ir builders)."""
