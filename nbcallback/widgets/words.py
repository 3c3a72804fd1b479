"""Every word the widgets write, one catalog per language: ``messages/<lang>.json`` (English, Simplified Chinese).

Pick the language with ``lang=`` on a callback or the ``NBCALLBACK_LANG`` environment variable; English is the
default; a new language is one more catalog with the same keys and placeholders (``tests/widgets/test_words.py``
checks them).  A :class:`Msg` is the English text that remembers its key and parameters, so a renderer can say it
again in the chosen language (``Words.say``).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

__all__ = ["LANGS", "LANG_ENV_VAR", "MESSAGES", "Msg", "Words", "resolve_lang", "ENGLISH"]

LANG_ENV_VAR = "NBCALLBACK_LANG"

MESSAGES: dict[str, dict[str, str]] = {
    path.stem: json.loads(path.read_text(encoding="utf-8"))
    for path in sorted(Path(__file__).with_name("messages").glob("*.json"), key=lambda path: path.stem != "en")
}
LANGS = tuple(MESSAGES)
#: The names a language is found by (lowercase, ``_`` for ``-``): each catalog's own, and a few others.
_ALIASES = {**{lang.lower(): lang for lang in LANGS}, "en_us": "en", "zh": "zh_CN", "zh_hans": "zh_CN"}


def resolve_lang(lang: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """``lang``, else ``$NBCALLBACK_LANG``, else ``'en'``; ``zh``, ``zh-CN`` ... mean ``'zh_CN'``.

    Raises:
        ValueError: a language with no message table (the message names the ones there are).
    """
    environ = os.environ if environ is None else environ
    given = lang if lang is not None else environ.get(LANG_ENV_VAR, "").strip() or "en"
    found = _ALIASES.get(str(given).lower().replace("-", "_"))
    if found is None:
        origin = "lang" if lang is not None else LANG_ENV_VAR
        raise ValueError(f"{origin}={given!r} has no message table; use one of {LANGS} (or 'zh', 'zh-CN')")
    return found


class Msg(str):
    """A message: its English text, plus the key and parameters to say it in another language."""

    def __new__(cls, key: str, **params: Any) -> "Msg":
        msg = super().__new__(cls, MESSAGES["en"][key].format(**params))
        msg.key = key
        msg.params = params
        return msg


class Words:
    """The message table of one language: ``words("lr_set", lr="0.01", step=5)``, ``words.say(msg)``."""

    def __init__(self, lang: str | None = None) -> None:
        self.lang = resolve_lang(lang)
        self._table = MESSAGES[self.lang]

    def __call__(self, key: str, **params: Any) -> str:
        return self._table[key].format(**{name: self.say(value) for name, value in params.items()})

    def say(self, text: Any) -> Any:
        """``text`` in this language when it is a :class:`Msg` (nested ones too), else unchanged."""
        return self(text.key, **text.params) if isinstance(text, Msg) else text


#: The English words: the default of every function that takes ``words``.
ENGLISH = Words("en")
