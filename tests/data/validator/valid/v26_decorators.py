# Decorated helpers.
import functools

@functools.lru_cache(maxsize=None)
def memory_lookup(name):
    return memory_search_nodes(query=name)

def retry(times):
    def wrap(fn):
        @functools.wraps(fn)
        def run(*a, **k):
            for _ in range(times):
                try:
                    return fn(*a, **k)
                except ToolError:
                    pass
            return None
        return run
    return wrap

@retry(times=2)
def read(path):
    return filesystem_read_text_file(path=path)

result = (memory_lookup("Ada"), read("/tmp/a"))
