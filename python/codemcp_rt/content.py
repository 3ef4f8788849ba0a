"""Content: MCP content blocks that are not text (image, audio, resource_link, resource).

Both ways through a program:
  * in: a tool result with such blocks unwraps (client.unwrap) to them as Content objects, in
    order with its text, so a program can look at them (``.type``, ``.mime_type``, ``.uri``,
    ``.bytes()``), keep them in variables and return them;
  * out: Content objects in the run's value (the value itself, or inside lists, tuples and
    dicts) leave the result as short placeholders ("<image image/png, 1,234 bytes: content
    block 1>") and travel in the envelope's ``content``; the gateway appends them to the
    CallToolResult's content after the text block. ``Content.image(data, mime_type)``,
    ``Content.audio(...)``, ``Content.link(uri, name)`` and ``Content.resource(uri,
    text=..|blob=..)`` make new ones. Their size as sent (the whole block's JSON: payload, URI, name
    and any other member) counts in the result cap (max_result_bytes): a block that does not fit is
    replaced by a note saying so.

A Content is a dict (the block itself), so ``json``, ``jsonsafe`` and ``==`` see the MCP
block; its repr is short, so ``print(img)`` never floods the output with base64.
"""

from __future__ import annotations

import base64
import weakref
from typing import Any

from codemcp_rt import jsonsafe

KINDS = ("image", "audio", "resource_link", "resource")
_MAX_WALK = 10_000  # containers visited when looking for Content in a run's value
_DESCRIBE_CHARS = 200  # of a URI or MIME type in a block's description

_live: "weakref.WeakValueDictionary[int, Content]" = weakref.WeakValueDictionary()
"""The Content objects alive in this process: none (the usual case) means no run's value can
hold one, so runs skip the walk (the hot path)."""


class Content(dict):
    """One MCP content block (not text). Attributes read the block; it is a dict as well."""

    __slots__ = ("__weakref__",)

    def __init__(self, block: Any = (), **kw: Any) -> None:
        super().__init__(block, **kw)
        if self.get("type") not in KINDS:
            raise ValueError("content type must be one of %s, not %r" % (", ".join(KINDS), self.get("type")))
        _live[id(self)] = self  # a dict is not hashable: kept by id, weakly

    @property
    def type(self) -> str:
        return self["type"]

    @property
    def mime_type(self) -> str | None:
        inner = self.get("resource")
        return self.get("mimeType") or (inner.get("mimeType") if isinstance(inner, dict) else None)

    @property
    def uri(self) -> str | None:
        inner = self.get("resource")
        return self.get("uri") or (inner.get("uri") if isinstance(inner, dict) else None)

    @property
    def name(self) -> str | None:
        return self.get("name")

    @property
    def text(self) -> str | None:
        """An embedded text resource's text."""
        inner = self.get("resource")
        return inner.get("text") if isinstance(inner, dict) else None

    def bytes(self) -> bytes:
        """The decoded data (image, audio, a blob resource; a text resource as UTF-8)."""
        inner = self.get("resource")
        data = self.get("data")
        if data is None and isinstance(inner, dict):
            data = inner.get("blob")
            if data is None and isinstance(inner.get("text"), str):
                return inner["text"].encode()
        return base64.b64decode(data) if isinstance(data, str) else b""

    def size(self) -> int:
        """Bytes of the block's payload as sent (base64 or text)."""
        inner = self.get("resource")
        payload = self.get("data")
        if payload is None and isinstance(inner, dict):
            payload = inner.get("blob", inner.get("text"))
        return len(payload) if isinstance(payload, str) else 0

    def describe(self) -> str:
        parts = [self.type]
        for v in (self.mime_type, self.uri):
            if v:  # short, as the placeholder and repr are: a URI may be megabytes
                v = str(v)
                parts.append(v if len(v) <= _DESCRIBE_CHARS else v[:_DESCRIBE_CHARS] + "...")
        if self.size():
            parts.append("{:,} bytes".format(self.size()))
        return " ".join(parts[:1]) + (" " + ", ".join(parts[1:]) if len(parts) > 1 else "")

    def __repr__(self) -> str:
        return "<%s>" % self.describe()

    __str__ = __repr__


def _b64(data: Any) -> str:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(data)).decode("ascii")
    if isinstance(data, str):
        return data  # already base64
    raise TypeError("data must be bytes or a base64 string, not %s" % type(data).__name__)


def image(data: Any, mime_type: str = "image/png") -> Content:
    """An image block from bytes (or base64 text) to return to the client."""
    return Content(type="image", data=_b64(data), mimeType=str(mime_type))


def audio(data: Any, mime_type: str = "audio/wav") -> Content:
    """An audio block from bytes (or base64 text) to return to the client."""
    return Content(type="audio", data=_b64(data), mimeType=str(mime_type))


def resource_link(uri: str, name: str | None = None, mime_type: str | None = None) -> Content:
    """A link to a resource the client can read itself."""
    block: dict[str, Any] = {"type": "resource_link", "uri": str(uri), "name": str(name or uri)}
    if mime_type:
        block["mimeType"] = str(mime_type)
    return Content(block)


def resource(uri: str, text: str | None = None, blob: Any = None, mime_type: str | None = None) -> Content:
    """An embedded resource: its text, or its bytes (blob)."""
    inner: dict[str, Any] = {"uri": str(uri)}
    if blob is not None:
        inner["blob"] = _b64(blob)
    else:
        inner["text"] = "" if text is None else str(text)
    if mime_type:
        inner["mimeType"] = str(mime_type)
    return Content(type="resource", resource=inner)


# The one name programs get: Content, with the makers as its static methods
# (Content.image(png_bytes), ...), so no short name like `image` is taken from programs.
Content.image = staticmethod(image)  # type: ignore[attr-defined]
Content.audio = staticmethod(audio)  # type: ignore[attr-defined]
Content.link = staticmethod(resource_link)  # type: ignore[attr-defined]
Content.resource = staticmethod(resource)  # type: ignore[attr-defined]


def from_block(block: Any) -> Any:
    """An upstream content block: a Content when it is one of KINDS, else as it is."""
    if isinstance(block, dict) and block.get("type") in KINDS and type(block) is not Content:
        try:
            return Content(block)
        except (TypeError, ValueError):
            return block
    return block


def _sent_size(c: Content) -> int:
    """Bytes of the block as it leaves (its JSON), whatever member holds them."""
    try:
        return len(jsonsafe.dumps(dict(c)).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError, RecursionError):  # not plain data: it fails later, as before
        return c.size()


def _holds(value: Any) -> bool:
    """A Content anywhere in value's lists, tuples and dicts (a bounded look, no copies)."""
    if type(value) is Content:
        return True
    stack, seen = [value], 0
    while stack and seen <= _MAX_WALK:
        v = stack.pop()
        seen += 1
        for x in v.values() if type(v) is dict else v if type(v) in _SEQS else ():
            t = type(x)
            if t is Content:
                return True
            if t is dict or t in _SEQS:
                stack.append(x)
    return False


_SEQS = (list, tuple)


def extract(value: Any, budget: int) -> tuple[Any, list[dict[str, Any]]]:
    """``value`` with each Content replaced by a placeholder, and the blocks in order. Blocks
    whose payloads together pass ``budget`` bytes (<= 0: no limit) are dropped, their
    placeholder says so. Only lists, tuples and dicts are searched (a bounded number)."""
    if not _live or not _holds(value):
        return value, []
    blocks: list[dict[str, Any]] = []
    seen = [0, 0]  # containers visited, payload bytes taken

    def place(c: Content) -> str:
        size = _sent_size(c)
        if budget > 0 and seen[1] + size > budget:
            return "<%s: not returned, over the result cap of %d bytes>" % (c.describe(), budget)
        seen[1] += size
        blocks.append(dict(c))
        return "<%s: content block %d>" % (c.describe(), len(blocks))

    def walk(v: Any, depth: int) -> Any:
        # Copies only the containers on the way to a Content; scalars are not looked at twice.
        t = type(v)
        if t is Content:
            return place(v)
        if depth > 50 or seen[0] > _MAX_WALK or not (t is dict or t in _SEQS):
            return v
        seen[0] += 1
        out = None
        for k, x in v.items() if t is dict else enumerate(v):
            tx = type(x)
            if tx is Content or tx is dict or tx in _SEQS:
                w = walk(x, depth + 1)
                if w is not x:
                    if out is None:
                        out = dict(v) if t is dict else list(v)
                    out[k] = w
        return v if out is None else out

    return walk(value, 0), blocks


__all__ = ["Content", "image", "audio", "resource_link", "resource", "from_block", "extract", "KINDS"]
