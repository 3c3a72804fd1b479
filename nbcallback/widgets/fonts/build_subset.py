"""Rebuild ``nbcallback-sans-sc-subset.otf``: the Chinese glyphs nbcallback itself draws in its final PNG.

The font is a subset of Noto Sans CJK SC Regular (SIL Open Font License 1.1, see ``OFL.txt`` beside it), renamed
"nbcallback Sans SC" so that it never shadows a full Noto Sans CJK SC a user has installed.  It holds every
character of ``messages/zh_CN.json``, the non-ASCII characters of ``messages/en.json`` and printable ASCII, so a
Chinese plot of nbcallback's own words needs no system CJK font.  ``tests/widgets/test_cjk_subset_font.py`` fails
when a catalog holds a character the shipped font lacks: after adding or changing a message, run::

    apt-get download fonts-noto-cjk && dpkg-deb -x fonts-noto-cjk_*.deb /tmp/noto   # or: apt-get install fonts-noto-cjk
    pip install fonttools
    python nbcallback/widgets/fonts/build_subset.py /tmp/noto/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc

(no argument: ``/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc``) and commit the new ``.otf``.  The output
is reproducible: the same source and catalogs give the same bytes.  fonttools is a build tool only; nbcallback does
not depend on it.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MESSAGES = HERE.parent / "messages"
OUTPUT = HERE / "nbcallback-sans-sc-subset.otf"
FAMILY = "nbcallback Sans SC"
POSTSCRIPT = "nbcallbackSansSC-Regular"
DEFAULT_SOURCE = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
SOURCE_FACE = "Noto Sans CJK SC"  # the face of the collection to cut from


def characters(messages: Path = MESSAGES) -> str:
    """What the font must hold, sorted: all of zh_CN.json's text, en.json's non-ASCII, printable ASCII."""
    chars = {chr(code) for code in range(0x20, 0x7F)}
    for path in sorted(messages.glob("*.json")):
        for text in json.loads(path.read_text(encoding="utf-8")).values():
            chars.update(text if path.stem != "en" else (c for c in text if ord(c) > 0x7E))
    return "".join(sorted(chars))


def build(source: Path = DEFAULT_SOURCE, output: Path = OUTPUT) -> int:
    """Write the subset of ``source`` (a .ttc holding the Noto Sans CJK SC face, or that face's .otf) to
    ``output``; returns its size in bytes."""
    from fontTools import subset
    from fontTools.ttLib import TTCollection, TTFont

    if source.suffix.lower() == ".ttc":
        faces = TTCollection(str(source), lazy=False).fonts
        font = next(face for face in faces if face["name"].getDebugName(1) == SOURCE_FACE)
    else:
        font = TTFont(str(source), lazy=False)
    options = subset.Options()
    options.layout_features = ["kern", "locl"]  # horizontal Latin/CJK text: no vertical forms, no ligatures
    options.name_IDs = [0, 1, 2, 3, 4, 5, 6, 7, 11, 12, 13, 14]  # keep copyright, license and its URL
    options.notdef_outline = True
    options.glyph_names = False
    options.hinting = True
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=characters())
    subsetter.subset(font)
    _rename(font)
    font.recalcTimestamp = False  # reproducible: keep the source's dates
    output.parent.mkdir(parents=True, exist_ok=True)
    font.save(str(output))
    return output.stat().st_size


def _rename(font: "TTFont") -> None:  # noqa: F821 - fontTools is imported in build()
    """Rename the family (the OFL reserves 'Source'; a distinct name never shadows an installed Noto font)."""
    name = font["name"]
    version = name.getDebugName(5) or ""
    for record in list(name.names):
        if record.nameID in (16, 17):  # typographic family names: the plain ones suffice
            name.removeNames(nameID=record.nameID)
    for name_id, value in {1: FAMILY, 2: "Regular", 3: f"{version};{POSTSCRIPT}", 4: FAMILY, 6: POSTSCRIPT,
                           5: f"{version}; subset of Noto Sans CJK SC for nbcallback"}.items():
        name.setName(value, name_id, 3, 1, 0x409)
        name.setName(value, name_id, 1, 0, 0)
    if "CFF " in font:
        cff = font["CFF "].cff
        top = cff[cff.fontNames[0]]
        cff.fontNames = [POSTSCRIPT]
        top.FullName, top.FamilyName = FAMILY, FAMILY
        top.rawDict["FullName"], top.rawDict["FamilyName"] = FAMILY, FAMILY


if __name__ == "__main__":
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_SOURCE
    size = build(source)
    print(f"{OUTPUT.name}: {size:,} bytes, {len(characters())} characters from {source}")
