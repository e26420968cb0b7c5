"""Shared pieces of the ``ninfer`` command line: exit codes, kernel loading, progress."""
from __future__ import annotations

import importlib.util
import os
import sys
import time

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_UNAVAILABLE = 0, 1, 2, 3


class CliError(Exception):
    """An error reported as one line on stderr with the exit code ``code``."""

    def __init__(self, message: str, code: int = EXIT_FAILED):
        super().__init__(message)
        self.code = code


def usage(message: str) -> CliError:
    return CliError(message, EXIT_USAGE)


def split_spec(spec: str) -> tuple[str, str | None]:
    """``FILE.py[:kernel]`` -> (path, kernel name or None)."""
    path, sep, name = spec.rpartition(":")
    if sep and name.isidentifier() and path:
        return path, name
    return spec, None


def check_input_file(path: str) -> None:
    """A usage error unless ``path`` is an existing regular file (not a folder, device
    or pipe), worded by what it is."""
    import stat
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise usage(f"no such file: {path}") from None
    except OSError as e:
        raise usage(f"cannot read {path}: {e.strerror or e}") from None
    if stat.S_ISDIR(mode):
        raise usage(f"{path} is a directory, not a file")
    if not stat.S_ISREG(mode):
        raise usage(f"{path} is not a regular file")


def check_output_file(path: str, option: str) -> None:
    """A usage error when ``path`` cannot be created: its folder is missing or it is a
    folder itself."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise usage(f"{option} {path}: is a directory")
    if not os.path.isdir(folder):
        raise usage(f"{option} {path}: the folder {folder} does not exist")


def check_output_dir(path: str, option: str) -> None:
    """A usage error when ``path`` exists and is not a folder."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise usage(f"{option} {path}: exists and is not a directory")


def load_module(path: str):
    """Execute a Python file as a fresh module (its folder first on ``sys.path``)."""
    check_input_file(path)
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    stem = os.path.splitext(os.path.basename(path))[0]
    name = f"ninfer_user_{stem}_{abs(hash(os.path.abspath(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise usage(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_kernel(spec: str):
    """The ``@I.kernel`` named by ``FILE.py[:kernel]`` (the only one when no name)."""
    from ninfer_ir.frontend.dsl import Kernel

    path, name = split_spec(spec)
    module = load_module(path)
    kernels = {k: v for k, v in vars(module).items() if isinstance(v, Kernel)}
    if name is not None:
        if name not in kernels:
            found = ", ".join(kernels) or "none"
            raise usage(f"{path} has no kernel named {name!r} (kernels: {found})")
        return kernels[name]
    if not kernels:
        raise usage(f"{path} defines no @I.kernel function")
    if len(kernels) > 1:
        raise usage(f"{path} defines {len(kernels)} kernels ({', '.join(kernels)}); "
                    f"choose one with {path}:NAME")
    return next(iter(kernels.values()))


def parse_assignments(items) -> dict:
    """``["N=4096", "G=16"]`` -> ``{"N": 4096, "G": 16}`` (ints or floats)."""
    out = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise usage(f"--dim expects NAME=VALUE, got {item!r}")
        try:
            out[key.strip()] = int(value)
        except ValueError:
            try:
                out[key.strip()] = float(value)
            except ValueError:
                raise usage(f"--dim {key}: {value!r} is not a number") from None
    return out


class _Bar:
    """A minimal progress bar on stderr (drawn only on a terminal)."""

    def __init__(self, iterable, total, desc):
        self.iterable, self.total, self.desc = iterable, total, desc
        self.live = sys.stderr.isatty()

    def __iter__(self):
        start = time.perf_counter()
        for k, item in enumerate(self.iterable):
            if self.live:
                sys.stderr.write(f"\r{self.desc}: {k}/{self.total} "
                                 f"[{time.perf_counter() - start:.1f} s]")
                sys.stderr.flush()
            yield item
        if self.live:
            sys.stderr.write(f"\r{self.desc}: {self.total}/{self.total} "
                             f"[{time.perf_counter() - start:.1f} s]\n")


def progress(iterable, total: int, desc: str):
    """Iterate with a progress bar (tqdm when importable; nothing when not a terminal)."""
    try:
        from tqdm import tqdm
    except ImportError:
        return _Bar(iterable, total, desc)
    return tqdm(iterable, total=total, desc=desc, disable=None, leave=False)


def best_and_median(fn, repeat: int) -> tuple[float, float]:
    """Seconds of the fastest and the median of ``repeat`` calls of ``fn``."""
    times = []
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[0], times[len(times) // 2]


def fmt_seconds(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1.0:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"
