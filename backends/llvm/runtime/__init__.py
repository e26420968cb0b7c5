"""Running compiled code: the JIT and its object cache, the thread pool, the launcher."""
