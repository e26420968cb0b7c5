"""``ninfer cache info|clear``: where the CPU object cache is, what it holds, emptying it."""
from __future__ import annotations

from .common import EXIT_FAILED, EXIT_OK


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB ({n} bytes)"


def cmd_cache(args) -> int:
    from ninfer_ir.backends.llvm.runtime.objcache import cache_info, clear_cache

    if args.action == "clear":
        removed = clear_cache(args.dir)
        print(f"removed {removed} entr{'y' if removed == 1 else 'ies'} from "
              f"{cache_info(args.dir).directory}")
        return EXIT_OK
    info = cache_info(args.dir)
    if info.usable:
        state = "used"
    elif info.reason:
        state = f"NOT USED: {info.reason}"
    else:
        state = "not created yet"
    print(f"directory: {info.directory}")
    print(f"state:     {state}")
    print(f"entries:   {info.entries}")
    print(f"size:      {_mib(info.total_bytes)}")
    limit = _mib(info.max_bytes) if info.max_bytes else "0 (the cache is disabled)"
    print(f"limit:     {limit}")
    return EXIT_OK if info.usable or not info.reason else EXIT_FAILED
