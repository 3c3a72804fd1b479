"""Keep the Chinese notebooks' code cells in step with the English ones.

The English notebooks in ``notebooks/`` are the source of truth for code. A
Chinese notebook may differ from its English twin only in

* comments (``# ...``), and
* the language tag ``"en"`` written as ``"zh_CN"`` (``NBCALLBACK_LANG``: the
  widgets' words in Chinese), and
* string literals that are *translated messages*: the English literal reads as
  prose (two or more words, or a ``label:``), the Chinese one contains CJK
  characters, both have the same prefix (``f``, ``r`` ...) and the same
  replacement fields in the same order (``{epoch}``, ``{:8.7f}``, ``%d``).

Everything else (names, numbers, file names, metric keys, a new line, a new
cell, an ``NBVAL_*`` marker, a magic or a ``!`` command) must match token for
token; :func:`compare` reports each difference with the cell index and a diff.

Run from the repository root::

    python notebooks/zh_CN/sync_code.py --check      # list the cells that differ; exit 1 if any
    python notebooks/zh_CN/sync_code.py              # copy English code into the Chinese notebooks
    python notebooks/zh_CN/sync_code.py 2_builtin_callbacks.ipynb

Syncing copies an English code cell over the Chinese one only where the code
differs (the Chinese comments and messages of unchanged cells are kept; in a
changed cell, the Chinese lines whose code did not change are kept too), clears
that cell's outputs, and prints the cells it replaced: translate their new
comments and messages, then re-execute with ``python notebooks/refresh_outputs.py
zh_CN/<name>.ipynb``. When the English notebook gains or loses code cells, the
cells are matched by their code (``difflib``) so translated cells that did not
change keep their place; new English cells are inserted in English, cells gone
from the English notebook are removed. Markdown cells are never touched (their
translation is by hand); a Chinese markdown cell stays before the code cell it
preceded.
"""
from __future__ import annotations

import argparse
import ast
import difflib
import io
import re
import string
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ENGLISH = HERE.parent

_CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")
_WORD = re.compile(r"[A-Za-z]{2,}")
_LABEL = re.compile(r"^\W*[A-Za-z][A-Za-z_ ]*:\s*$")  # "images:", "| accuracy now:"
_PERCENT = re.compile(r"%[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[diouxXeEfFgGcrsa%]")
_PATH = re.compile(r"^(?:\.{0,2}/\w|~/|[A-Za-z]:\\|\w+://)")
_SHELL_COMMENT = re.compile(r"\s+#[^'\"]*$")
_MARKER = re.compile(r"#\s*(NBVAL_\w+)")

Token = tuple[str, str]  # (kind, text): kind is "code" or "string"


@dataclass
class Difference:
    """One code cell whose code differs between the English and the Chinese notebook."""

    index: int  # the position among the notebook's code cells (0-based)
    cell: int  # the position among all cells of the Chinese notebook (-1: missing there)
    reason: str
    diff: str

    def __str__(self) -> str:
        return f"code cell {self.index} (cell {self.cell}): {self.reason}\n{self.diff}"


def _python(source: str) -> str:
    """The cell as plain Python: IPython magics and ``!`` commands become calls."""
    from IPython.core.inputtransformer2 import TransformerManager

    # A shell comment on a ``!`` or ``%`` line is a comment too (not one inside quotes).
    lines = [_SHELL_COMMENT.sub("", line) if line.lstrip().startswith(("!", "%")) else line
             for line in source.splitlines()]
    return TransformerManager().transform_cell("\n".join(lines) + "\n")


def tokens(source: str) -> list[Token]:
    """The cell's tokens without comments, line layout or indentation width.

    Indentation is kept as INDENT/DEDENT tokens, so moving a line in or out of
    a block is a difference; blank lines and comments are not.
    """
    result: list[Token] = []
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
    code = _python(source)
    lines = code.splitlines(keepends=True)
    fstring_start = getattr(tokenize, "FSTRING_START", None)  # Python >= 3.12 splits f-strings
    fstring_end = getattr(tokenize, "FSTRING_END", None)
    depth, opened = 0, (0, 0)
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        if token.type in skip:
            continue
        if fstring_start is not None and token.type == fstring_start:
            depth, opened = depth + 1, (token.start if depth == 0 else opened)
            continue
        if depth:
            if token.type == fstring_end:
                depth -= 1
                if depth == 0:  # the whole f-string, as one literal (as Python 3.11 gives it)
                    result.append(("string", _span(lines, opened, token.end)))
            continue
        if token.type == tokenize.STRING:
            result.append(("string", token.string))
        elif token.type == tokenize.INDENT:
            result.append(("code", "<INDENT>"))
        elif token.type == tokenize.DEDENT:
            result.append(("code", "<DEDENT>"))
        elif token.type == tokenize.NEWLINE:
            result.append(("code", "<NEWLINE>"))
        else:
            result.append(("code", token.string))
    return result


def _span(lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> str:
    """The source text between two tokenize positions (rows are 1-based)."""
    if start[0] == end[0]:
        return lines[start[0] - 1][start[1]:end[1]]
    middle = "".join(lines[start[0]:end[0] - 1])
    return lines[start[0] - 1][start[1]:] + middle + lines[end[0] - 1][:end[1]]


def markers(source: str) -> list[str]:
    """The nbval markers of a cell (``# NBVAL_CHECK_OUTPUT`` ...), which are comments but matter."""
    return _MARKER.findall(source)


def _prefix(literal: str) -> str:
    return literal[: len(literal) - len(literal.lstrip("rRbBuUfF"))].lower()


def _fields(literal: str) -> list[str] | None:
    """The replacement fields of a string literal, in order; None if it cannot be parsed."""
    try:
        node = ast.parse(literal, mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, ast.JoinedStr):
        return [ast.dump(value) for value in node.values if isinstance(value, ast.FormattedValue)]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            braces = [f"{{{name}!{conv}:{spec}}}" for _, name, spec, conv in string.Formatter().parse(node.value)
                      if name is not None]
        except ValueError:
            braces = ["<unbalanced braces>"]
        return braces + _PERCENT.findall(node.value)
    return None


def _text(literal: str) -> str:
    """The literal's text outside replacement fields (for judging whether it is prose)."""
    try:
        node = ast.parse(literal, mode="eval").body
    except SyntaxError:
        return ""
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return re.sub(r"\{[^{}]*\}", " ", node.value)
    return ""


def _literal_value(literal: str) -> object:
    """A plain string literal's value (None for anything else)."""
    try:
        node = ast.parse(literal, mode="eval").body
    except SyntaxError:
        return None
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def is_prose(literal: str) -> bool:
    """Whether an English string literal reads as a message (translatable), not a name or a path."""
    text = _text(literal)
    if any(_PATH.match(chunk) for chunk in text.split()):  # a path or a URL is never a sentence
        return False
    words = _WORD.findall(text)
    return (len(words) >= 2 and " " in text.strip()) or bool(_LABEL.match(text))


def is_translation(english: str, chinese: str) -> bool:
    """Whether ``chinese`` is an acceptable translation of the literal ``english``."""
    if english == chinese:
        return True
    if _literal_value(english) == "en" and _literal_value(chinese) == "zh_CN":  # the widgets' language
        return True
    if not _CJK.search(chinese) or _CJK.search(english) or not is_prose(english):
        return False
    if _prefix(english) != _prefix(chinese):
        return False
    fields = _fields(english)
    return fields is not None and fields == _fields(chinese)


def _render(items: list[Token]) -> list[str]:
    """One token per line, for a readable unified diff."""
    return [text for _, text in items]


def compare_cells(english: str, chinese: str) -> str | None:
    """None when the two code cells are the same code; else the reason and a diff."""
    if markers(english) != markers(chinese):
        diff = "\n".join(difflib.unified_diff(markers(english), markers(chinese), "English", "Chinese", lineterm=""))
        return f"nbval markers differ\n{diff}"
    try:
        left, right = tokens(english), tokens(chinese)
    except (tokenize.TokenError, SyntaxError, IndentationError) as error:
        if english == chinese:
            return None
        return f"cannot tokenize ({error}); the sources differ"
    same = len(left) == len(right) and all(
        a == b or (a[0] == b[0] == "string" and is_translation(a[1], b[1])) for a, b in zip(left, right)
    )
    if same:
        return None
    # Show the difference in the code, with translated literals aligned to the English ones.
    shown = [a if a[0] == b[0] == "string" and is_translation(a[1], b[1]) else b for a, b in zip(left, right)]
    shown += right[len(left):]
    diff = "\n".join(difflib.unified_diff(_render(left), _render(shown), "English", "Chinese", lineterm="", n=3))
    return f"code differs\n{diff}"


def _code_cells(notebook: Any) -> list[tuple[int, Any]]:
    return [(index, cell) for index, cell in enumerate(notebook.cells) if cell.cell_type == "code"]


def compare(english_path: Path, chinese_path: Path) -> list[Difference]:
    """Every code cell of the Chinese notebook that is not the English cell's code."""
    import nbformat

    english = _code_cells(nbformat.read(english_path, as_version=4))
    chinese = _code_cells(nbformat.read(chinese_path, as_version=4))
    found: list[Difference] = []
    for index in range(max(len(english), len(chinese))):
        if index >= len(chinese):
            found.append(Difference(index, -1, "missing in the Chinese notebook", english[index][1].source))
            continue
        if index >= len(english):
            found.append(Difference(index, chinese[index][0], "not in the English notebook", chinese[index][1].source))
            continue
        reason = compare_cells(english[index][1].source, chinese[index][1].source)
        if reason is not None:
            head, _, diff = reason.partition("\n")
            found.append(Difference(index, chinese[index][0], head, diff))
    return found


def _same(english: str, chinese: str) -> bool:
    return compare_cells(english, chinese) is None


def sync(english_path: Path, chinese_path: Path, write: bool = True) -> list[str]:
    """Bring the Chinese notebook's code cells in step with the English one.

    Returns one line per change (empty: nothing to do). Cells whose code is the
    same keep their Chinese comments, messages and outputs.
    """
    import nbformat

    english_nb = nbformat.read(english_path, as_version=4)
    chinese_nb = nbformat.read(chinese_path, as_version=4)
    english = [cell for cell in english_nb.cells if cell.cell_type == "code"]
    chinese = [cell for cell in chinese_nb.cells if cell.cell_type == "code"]

    # Match cells by their code with prose blanked, so translated cells match their English cells.
    matcher = difflib.SequenceMatcher(a=[_key(c.source) for c in chinese], b=[_key(c.source) for c in english],
                                      autojunk=False)
    planned: list[tuple[int | None, Any]] = []  # (the Chinese code cell it takes the place of, the cell)
    changes: list[str] = []
    for _tag, z0, z1, e0, e1 in matcher.get_opcodes():
        paired = list(zip(range(z0, z1), range(e0, e1)))
        for zi, ei in paired:
            if _same(english[ei].source, chinese[zi].source):
                planned.append((zi, chinese[zi]))
            else:
                cell = _take(english[ei], chinese[zi])
                kept = merge_lines(english[ei].source, chinese[zi].source)
                if kept is not None:
                    cell.source = kept
                planned.append((zi, cell))
                changes.append(f"code cell {ei}: the English code copied in"
                               + (", the Chinese lines of unchanged code kept" if kept is not None else "")
                               + " (translate its new comments and messages)")
        for ei in range(e0 + len(paired), e1):
            planned.append((None, _take(english[ei], None)))
            changes.append(f"code cell {ei}: new in the English notebook, inserted (translate it, add its markdown)")
        for zi in range(z0 + len(paired), z1):
            changes.append(f"Chinese code cell {zi}: no longer in the English notebook, removed (check its markdown)")
    if not changes:
        return changes

    # Rebuild the cell list: markdown cells stay where they were; a code cell goes where the Chinese
    # cell it replaces was; inserted cells go just before the next kept one (or at the end).
    position = {zi: n for n, (zi, _) in enumerate(planned) if zi is not None}
    cells: list[Any] = []
    done = 0
    code_index = 0
    for cell in chinese_nb.cells:
        if cell.cell_type != "code":
            cells.append(cell)
            continue
        zi, code_index = code_index, code_index + 1
        if zi not in position:
            continue  # removed
        cells.extend(c for _, c in planned[done:position[zi] + 1])
        done = position[zi] + 1
    cells.extend(c for _, c in planned[done:])
    if write:
        chinese_nb.cells = cells
        nbformat.validate(chinese_nb)
        nbformat.write(chinese_nb, chinese_path)
    return changes


def _key(source: str) -> tuple[str, ...]:
    """A cell's code for matching: tokens, with every prose literal blanked (translated or not)."""
    try:
        items = tokens(source)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return (source,)
    out = []
    for kind, text in items:
        if kind == "string" and (is_prose(text) or _CJK.search(text)):
            out.append(f"<prose {_prefix(text)} {_fields(text)}>")
        else:
            out.append(text)
    return tuple(out)


def _line_keys(source: str) -> list[str] | None:
    """One key per physical line: its code without comments, prose literals blanked; None if not plain Python."""
    lines = source.splitlines()
    if any(line.lstrip().startswith(("!", "%")) for line in lines):
        return None  # magics change the line layout when transformed; copy such cells whole
    keys: list[list[str]] = [[] for _ in lines]
    spanned: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            row = token.start[0] - 1
            if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                              tokenize.ENDMARKER, tokenize.ENCODING) or row >= len(lines):
                continue
            text = token.string
            if token.type == tokenize.STRING and (is_prose(text) or _CJK.search(text)):
                text = f"<prose {_prefix(text)} {_fields(text)}>"
            keys[row].append(text)
            spanned.update(range(token.start[0], token.end[0]))  # the lines a multi-line token continues on
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    out = []
    for row, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        if keys[row]:
            out.append(f"{indent}|" + " ".join(keys[row]))
        elif row in spanned:
            out.append("<continued>")
        else:
            out.append("<blank>" if not line.strip() else "<comment>")
    return out


def merge_lines(english: str, chinese: str) -> str | None:
    """The English cell's code, with the Chinese cell's lines wherever their code did not change.

    Lines are matched by code (comments and translated messages aside); runs of
    matching lines, with the comment lines among them, come from the Chinese cell,
    everything else from the English one. None when nothing could be kept or the
    result would not be exactly the English code (then the English cell is copied whole).
    """
    keys_en, keys_zh = _line_keys(english), _line_keys(chinese)
    if keys_en is None or keys_zh is None:
        return None
    lines_en, lines_zh = english.splitlines(), chinese.splitlines()
    merged: list[str] = []
    kept = False
    opcodes = difflib.SequenceMatcher(a=keys_zh, b=keys_en, autojunk=False).get_opcodes()
    for number, (tag, z0, z1, e0, e1) in enumerate(opcodes):
        if tag == "equal" and number + 1 < len(opcodes):
            # Comment lines just above changed code describe that code: take them from the English.
            while z1 > z0 and keys_zh[z1 - 1] in ("<comment>", "<blank>"):
                z1, e1 = z1 - 1, e1 - 1
            merged.extend(lines_zh[z0:z1] if any("|" in key for key in keys_en[e0:e1]) else lines_en[e0:e1])
            kept = kept or any("|" in key for key in keys_en[e0:e1])
            merged.extend(lines_en[e1:opcodes[number][4]])
        elif tag == "equal" and any("|" in key for key in keys_en[e0:e1]):
            merged.extend(lines_zh[z0:z1])
            kept = True
        else:
            merged.extend(lines_en[e0:e1])
    result = "\n".join(merged) + ("\n" if english.endswith("\n") else "")
    if not kept or compare_cells(english, result) is not None:
        return None
    return result


def _take(english_cell: Any, chinese_cell: Any | None) -> Any:
    """A copy of the English code cell, cleared, with the Chinese cell's id when there is one."""
    import copy

    cell = copy.deepcopy(english_cell)
    cell.outputs = []
    cell.execution_count = None
    cell.metadata.pop("execution", None)
    if chinese_cell is not None and "id" in chinese_cell:
        cell["id"] = chinese_cell["id"]
    return cell


def pairs(names: list[str] | None = None) -> list[tuple[Path, Path]]:
    """(English, Chinese) notebook paths, for the given names or every Chinese notebook."""
    chosen = names or sorted(path.name for path in HERE.glob("*.ipynb"))
    return [(ENGLISH / name, HERE / name) for name in chosen]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="notebook names (default: every notebook in notebooks/zh_CN/)")
    parser.add_argument("--check", action="store_true", help="only report the differences; exit 1 if there are any")
    args = parser.parse_args(argv)
    status = 0
    for english, chinese in pairs(args.notebooks):
        if not english.exists():
            print(f"{chinese.name}: no English notebook {english}", file=sys.stderr)
            status = 1
            continue
        if args.check:
            for difference in compare(english, chinese):
                print(f"{chinese.name}: {difference}")
                status = 1
            continue
        for line in sync(english, chinese):
            print(f"{chinese.name}: {line}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
