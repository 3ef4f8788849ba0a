"""codemcp_rt.content: Content objects, and how a run's value gives up its blocks."""

import gc
import json
import unittest

from codemcp_rt import content
from codemcp_rt.content import Content


class ContentTest(unittest.TestCase):
    def test_makers_and_reading(self) -> None:
        img = Content.image(b"\x89PNG", "image/png")
        self.assertEqual(json.loads(json.dumps(img)), {"type": "image", "data": "iVBORw==", "mimeType": "image/png"})
        self.assertEqual((img.type, img.mime_type, img.bytes(), img.size()), ("image", "image/png", b"\x89PNG", 8))
        self.assertEqual(repr(img), "<image image/png, 8 bytes>")
        doc = Content.resource("file:///a.txt", text="hi", mime_type="text/plain")
        self.assertEqual((doc.uri, doc.text, doc.bytes(), doc.mime_type), ("file:///a.txt", "hi", b"hi", "text/plain"))
        link = Content.link("file:///b", "b")
        self.assertEqual(link, {"type": "resource_link", "uri": "file:///b", "name": "b"})
        with self.assertRaises(ValueError):
            Content({"type": "text", "text": "x"})
        with self.assertRaises(TypeError):
            Content.image(12)

    def test_extract_copies_only_the_path_to_a_block(self) -> None:
        img = Content.image(b"x")
        rows = [{"id": i} for i in range(3)]
        value = {"rows": rows, "shot": [img], "n": 1}
        out, blocks = content.extract(value, 0)
        self.assertIs(out["rows"], rows, "a branch without a block is not copied")
        self.assertEqual(out["shot"], ["<image image/png, 4 bytes: content block 1>"])
        self.assertEqual(value["shot"], [img], "the program's own value is left as it was")
        self.assertEqual(blocks, [dict(img)])
        self.assertEqual(type(blocks[0]), dict)

    def test_cap_drops_blocks_that_do_not_fit(self) -> None:
        a, b = Content.image(b"a" * 600), Content.image(b"b" * 600)
        out, blocks = content.extract([a, b], 1000)
        self.assertEqual(len(blocks), 1)
        self.assertIn("not returned, over the result cap of 1000 bytes", out[1])

    def test_cap_counts_the_whole_block_not_only_its_payload(self) -> None:
        # a link has no payload: its URI and name are what it sends
        link = Content.link("https://example.com/" + "x" * 5000, "n" * 3000)
        out, blocks = content.extract([link], 2000)
        self.assertEqual(blocks, [])
        self.assertIn("not returned, over the result cap of 2000 bytes", out[0])
        self.assertLess(len(out[0]), 400, "the placeholder names the URI short")
        self.assertLess(len(repr(link)), 300)
        meta = Content.image(b"x", "image/png")
        meta["annotations"] = {"note": "y" * 5000}
        self.assertEqual(content.extract([meta], 2000)[1], [])
        small = Content.link("file:///a", "a")
        self.assertEqual(content.extract([small], 2000)[1], [dict(small)])

    def test_no_walk_while_no_content_lives(self) -> None:
        gc.collect()
        self.assertEqual(len(content._live), 0, "a Content from another test is still alive")
        value = [{"a": 1}]
        out, blocks = content.extract(value, 0)
        self.assertIs(out, value)
        self.assertEqual(blocks, [])
        looks_like = {"type": "image", "data": "eA==", "mimeType": "image/png"}
        self.assertEqual(content.extract(looks_like, 0), (looks_like, []), "a plain dict is data, not a block")


if __name__ == "__main__":
    unittest.main()
