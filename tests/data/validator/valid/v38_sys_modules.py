# sys.modules can create names at run time.
import sys
mod = sys.modules[__name__]
setattr(mod, "memory_alias", memory_read_graph)
result = memory_alias()
