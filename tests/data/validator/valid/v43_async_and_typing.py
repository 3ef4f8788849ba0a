# Type hints, an async helper that is never awaited, a dataclass.
from __future__ import annotations
from dataclasses import dataclass, field
from typing import Any

@dataclass
class Row:
    name: str
    tags: list[str] = field(default_factory=list)

async def memory_fetch_async(q: str) -> Any:
    return memory_search_nodes(query=q)

g = memory_read_graph()
rows: list[Row] = [Row(e["name"], list(e["observations"])) for e in g["entities"]]
result = [r.name for r in rows]
