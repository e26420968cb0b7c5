"""Kernel source capture and located errors.

The source of a kernel is read once, at decoration time. Its AST is parsed from
the dedented text, so every node's ``lineno``/``col_offset`` is relative to that
text; ``Source.error`` maps a node back to the real file (1-based line and
column, columns counted in characters) and builds the ``I.DSLError`` that prints
``file:line:col: message``, the source line and a caret.
"""
from __future__ import annotations

import ast
import inspect
import textwrap

from ninfer_ir.errors import DSLError


#: Python constructs a kernel cannot use, and what to write instead
UNSUPPORTED = {
    "While": "'while' loops are not supported; use for i in I.range(...)",
    "Break": "'break' is not supported; guard the rest of the loop body with an if",
    "Continue": "'continue' is not supported; guard the rest of the loop body with an if",
    "Try": "'try' is not supported inside a kernel",
    "TryStar": "'try' is not supported inside a kernel",
    "With": "'with' is not supported inside a kernel",
    "Raise": "'raise' is not supported; use assert cond, \"message\" for run-time checks",
    "Lambda": "lambda is not supported inside a kernel; write the expression inline",
    "ListComp": "comprehensions are not supported; write a for loop over I.range",
    "SetComp": "comprehensions are not supported; write a for loop over I.range",
    "DictComp": "comprehensions are not supported; write a for loop over I.range",
    "GeneratorExp": "generator expressions are not supported; write a for loop over I.range",
    "Global": "'global' is not supported: a kernel cannot change Python state",
    "Nonlocal": "'nonlocal' is not supported: a kernel cannot change Python state",
    "FunctionDef": "nested functions are not supported inside a kernel",
    "AsyncFunctionDef": "nested functions are not supported inside a kernel",
    "ClassDef": "class definitions are not supported inside a kernel",
    "Import": "import is not supported inside a kernel; import at module level",
    "ImportFrom": "import is not supported inside a kernel; import at module level",
    "Delete": "'del' is not supported inside a kernel",
    "Match": "'match' is not supported; use if/elif/else",
    "AsyncFor": "async code is not supported inside a kernel",
    "AsyncWith": "async code is not supported inside a kernel",
    "Await": "async code is not supported inside a kernel",
    "Yield": "'yield' is not supported; a kernel returns its results with return",
    "YieldFrom": "'yield' is not supported; a kernel returns its results with return",
    "NamedExpr": "':=' is not supported; assign with =",
    "JoinedStr": "f-strings are not supported inside a kernel",
    "List": "lists are not supported inside a kernel; use a tuple of constants or a buffer",
    "Set": "sets are not supported inside a kernel",
    "Dict": "dicts are not supported inside a kernel",
    "Starred": "'*' unpacking is not supported inside a kernel",
    "Slice": "a slice is only allowed inside [...] indexing",
}


class Source:
    """The text of one kernel and the mapping from its AST back to the file."""

    def __init__(self, filename: str, lines: list[str], first_line: int, tree: ast.Module,
                 line_shift: int, col_shift: int):
        self.filename = filename
        self.lines = lines              # the original lines, indentation kept
        self.first_line = first_line    # file line number of lines[0]
        self.tree = tree
        self.line_shift = line_shift    # file line = node.lineno + line_shift
        self.col_shift = col_shift      # bytes removed from the front of every line

    @property
    def func_def(self) -> ast.AST:
        return self.tree.body[0]

    def position(self, node) -> tuple[int, int]:
        """(line, col) of ``node`` in the real file, both 1-based."""
        lineno = getattr(node, "lineno", None)
        if lineno is None:
            return self.first_line, 1
        line = lineno + self.line_shift
        text = self.source_line(line) or ""
        byte_col = getattr(node, "col_offset", 0) + self.col_shift
        prefix = text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore")
        return line, len(prefix) + 1

    def source_line(self, line: int) -> str | None:
        k = line - self.first_line
        if 0 <= k < len(self.lines):
            return self.lines[k].rstrip("\r\n")
        return None

    def error(self, node, message: str) -> DSLError:
        line, col = self.position(node)
        return DSLError(message, self.filename, line, col, self.source_line(line))


def capture(fn) -> Source:
    """Read and parse the source of ``fn`` (module level, nested, decorated, any indent)."""
    code = getattr(fn, "__code__", None)
    filename = code.co_filename if code is not None else "<unknown>"
    first = code.co_firstlineno if code is not None else 0
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        raise DSLError(f"cannot read the source of kernel '{getattr(fn, '__name__', fn)}': "
                       f"I.kernel needs a function defined in a source file",
                       filename, first, 1) from None
    if first == 0:
        first = 1
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    try:
        tree = ast.parse(dedented)
        shift = len(lines[0].encode("utf-8")) - len(dedented.splitlines(True)[0].encode("utf-8"))
        line_shift = first - 1
    except SyntaxError:
        # Lines indented less than the def (continuations, strings) defeat dedent:
        # parse the original text inside an always-true block instead.
        try:
            tree = ast.parse("if True:\n" + text)
        except SyntaxError as e:
            raise DSLError(f"cannot parse the source of kernel '{fn.__name__}': {e.msg}",
                           filename, first, 1, lines[0]) from None
        tree = ast.Module(body=tree.body[0].body, type_ignores=[])
        shift, line_shift = 0, first - 2
    src = Source(filename, lines, first, tree, line_shift, shift)
    node = tree.body[0] if tree.body else None
    if isinstance(node, ast.AsyncFunctionDef):
        raise src.error(node, "async functions cannot be kernels; use a plain def")
    if not isinstance(node, ast.FunctionDef):
        raise src.error(node or tree, f"I.kernel decorates a function defined with def; "
                                      f"'{fn.__name__}' is not one (a lambda?)")
    return src
