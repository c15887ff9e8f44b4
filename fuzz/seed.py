#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets into seeds/: every JSON example of the
extension spec (manifests to seeds/manifest, frames to seeds/protocol) and the bundled
examples' manifests. Run from anywhere: python3 fuzz/seed.py [path/to/extensions.md]"""

import hashlib
import json
import pathlib
import sys

fuzz = pathlib.Path(__file__).resolve().parent
repo = fuzz.parent
spec = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else repo.parent / "shared/spec/extensions.md"


def save(target, text):
    folder = fuzz / "seeds" / target
    folder.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha1(text.encode()).hexdigest()[:16]
    (folder / name).write_text(text)


def json_blocks(markdown):
    for block in markdown.split("```json")[1:]:
        yield block.split("```")[0]


def values(block):
    decoder = json.JSONDecoder()
    at = 0
    while True:
        while at < len(block) and block[at].isspace():
            at += 1
        if at >= len(block):
            return
        start = at
        value, at = decoder.raw_decode(block, at)
        yield block[start:at], value


# Shapes the rewrite must handle that the examples do not show.
EDGE_MANIFESTS = [
    '{"name":"a","exec":"./a"}',
    '{"name":"d","enabled":true,"exec":"./x","enabled":false}',
    '{ "enabled" : null , "name" : "n", "exec" : "x", "extra": {"enabled": 1} }',
    '{"exec":"\\u00e9\\n","name":"u-1.2_x","description":"\u00e9\u2603 \U0001f600","args":[]}\n',
    '\t{\r\n\t"name": "tabs",\r\n\t"exec": "/bin/true",\r\n\t"version": null\r\n}\r\n',
]

for text in EDGE_MANIFESTS:
    save("manifest", text)
for block in json_blocks(spec.read_text()):
    for text, value in values(block):
        if isinstance(value, dict) and "type" in value:
            save("protocol", text.replace("\n", " "))
        elif isinstance(value, dict):
            save("manifest", text + "\n")
for manifest in sorted(repo.glob("examples/extensions/*/extension.json")):
    save("manifest", manifest.read_text())
