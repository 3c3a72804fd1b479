"""Point a fork's badges, Colab install cells and links at the fork: ``python -m nbcallback.fork``.

A teacher who forks nbcallback on GitHub runs, in a clone of the fork (any folder inside it)::

    python -m nbcallback.fork alice/nbcallback                  # the fork's owner/name (its address works too)
    python -m nbcallback.fork alice/nbcallback --branch fall    # and the branch the class opens
    python -m nbcallback.fork --check                           # exit 1 and list the places that differ
    python -m nbcallback.fork                                   # carry a hand edit of nbcallback/repository.py into them

then commits and pushes the changed files. The repository and branch are kept in one place,
``nbcallback/repository.py``; this command writes them there and rewrites every place that points at a
repository on GitHub for a learner to click or run:

* Binder badges and links (``https://mybinder.org/v2/gh/<owner>/<name>/<branch>...``), Colab badges
  (``https://colab.research.google.com/github/<owner>/<name>/blob/<branch>/...``) and Codespaces badges
  (``https://codespaces.new/<owner>/<name>/tree/<branch>``), whatever repository they name;
* the README's clone line, ``git clone https://github.com/<owner>/<name> && cd <name>`` (the folder the clone
  makes), and the Codespaces words of the teacher pages, ``Create codespace on <branch>``;
* the Colab install cells' ``git+https://github.com/<owner>/<name>@<branch>`` (the branch is added where it
  was missing), ``https://raw.githubusercontent.com/<owner>/<name>/<branch>/...`` and
  ``https://github.com/<owner>/<name>[/tree|blob/<branch>]`` links, where they name this project: the
  upstream ``nbcallback/nbcallback``, the repository configured before, or the new one (links to other
  projects on GitHub are left alone).

It looks at every file of the checkout that git tracks or would track (``git ls-files -co
--exclude-standard``; every file but build and cache folders where there is no git), except ``tests/``
(their expected values are not links for learners) and this module. Text only: a notebook is rewritten as
text, so its cells, outputs and JSON layout stay as they were and its English and Chinese versions stay alike.

``--private-masters`` also keeps the exercises' solutions and hidden tests out of the fork (:data:`PRIVATE`):
git stops tracking them and ignores them, so the next commit removes them from the fork's branch while they
stay on the teacher's disk, where ``notebooks/exercises/assign.py`` reads them.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

#: The project's own repository; links to it are this project's in any fork.
UPSTREAM = "nbcallback/nbcallback"
#: The one place that holds the repository and the branch, relative to the checkout's root.
REPOSITORY_FILE = "nbcallback/repository.py"
#: Not rewritten: the tests' expected values and this module (it names UPSTREAM).
SKIPPED_PREFIXES = ("tests/",)
SKIPPED_FILES = ("nbcallback/fork.py", REPOSITORY_FILE)
#: Where there is no git: folders that hold no project file.
_NOT_PROJECT_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", "build", "dist", ".pytest_cache",
                     ".hypothesis", ".ipynb_checkpoints", ".mypy_cache", ".ruff_cache", "__marimo__"}
_MAX_BYTES = 50_000_000
#: A file without any of these has no link to rewrite.
_WORDS = ("github", "mybinder", "codespace")

_OWNER = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})"
_NAME = r"[A-Za-z0-9._-]*[A-Za-z0-9_-]"  # not ending with a dot (the end of a sentence)
_BRANCH = r"[A-Za-z0-9_](?:[A-Za-z0-9._-]*[A-Za-z0-9_-])?"
_REPO = rf"{_OWNER}/{_NAME}"

#: Each form of link: its regular expression (groups ``repo`` and ``branch``), whether it counts whatever
#: repository it names (badges into this project's notebooks) and what to add where the branch is missing
#: (None: nothing, the link may name no branch).
_FORMS: dict[str, tuple[str, bool, str | None]] = {
    "binder": (rf"https://mybinder\.org/v2/gh/(?P<binder_repo>{_REPO})/(?P<binder_branch>{_BRANCH})", True, ""),
    "colab": (rf"https://colab\.research\.google\.com/github/(?P<colab_repo>{_REPO})/blob/(?P<colab_branch>{_BRANCH})/",
              True, ""),
    "codespaces": (rf"https://codespaces\.new/(?P<codespaces_repo>{_REPO})(?:/tree/(?P<codespaces_branch>{_BRANCH}))?",
                   True, "/tree/{branch}"),
    "clone": (rf"git clone https://github\.com/(?P<clone_repo>{_REPO}?)(?:\.git)?\s*&&\s*cd\s+(?P<clone_folder>[A-Za-z0-9._-]+)",
              False, None),
    "words": (rf"Create codespace on (?P<words_branch>{_BRANCH})", True, None),
    "pip": (rf"git\+https://github\.com/(?P<pip_repo>{_REPO})(?:@(?P<pip_branch>{_BRANCH}))?", False, "@{branch}"),
    "raw": (rf"https://raw\.githubusercontent\.com/(?P<raw_repo>{_REPO})/(?P<raw_branch>{_BRANCH})/", False, ""),
    "page": (rf"https://github\.com/(?P<page_repo>{_REPO})(?:/(?:tree|blob)/(?P<page_branch>{_BRANCH}))?", False, None),
}
LINK = re.compile("|".join(f"(?P<{kind}>{pattern})" for kind, (pattern, _, _) in _FORMS.items()))
#: What ``--private-masters`` keeps out of the fork's branch (git stops tracking it and ignores it; the files
#: stay on disk): the exercises' masters (solutions, hidden tests) and the project's tests of the exercises
#: (they read the masters, and hold wrong and nearly right answers). binder/postBuild removes the same folders
#: from a Binder image or a Codespace.
PRIVATE = ("notebooks/exercises/master", "tests/exercises")
_SETTING = re.compile(r'^(?P<key>REPOSITORY|BRANCH) = "(?P<value>[^"\n]*)"[ \t]*$', re.MULTILINE)

_REPOSITORY_ARGUMENT = re.compile(rf"^{_REPO}$")
_ADDRESS = re.compile(rf"^(?:https?://(?:www\.)?github\.com/|git@github\.com:)(?P<repo>{_REPO})(?:\.git)?/?$")


class ForkError(Exception):
    """A bad owner/name or branch, or no checkout to rewrite: the message says what to do."""


@dataclass(frozen=True)
class Place:
    """One link of a file, where it points and where it should."""

    path: str  # relative to the checkout, with '/'
    line: int
    link: str
    expected: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.link} (should be {self.expected})"


@dataclass(frozen=True)
class Target:
    """The repository (``owner/name``) and branch that the links should name."""

    repository: str
    branch: str


def parse_repository(value: str) -> str:
    """``owner/name`` from ``owner/name`` or a GitHub address of the repository; ForkError if it is neither."""
    text = value.strip()
    address = _ADDRESS.match(text)
    if address:
        text = address.group("repo")
    if text.endswith(".git"):
        text = text[: -len(".git")]
    owner, _, name = text.partition("/")
    if not _REPOSITORY_ARGUMENT.match(text) or "--" in owner or owner.endswith("-") or name in {".", ".."}:
        raise ForkError(
            f"{value!r} is not a GitHub repository: give it as owner/name, the part after github.com/ in the "
            f"fork's address (e.g. alice/nbcallback for https://github.com/alice/nbcallback)"
        )
    return text


def parse_branch(value: str) -> str:
    """The branch name, checked to fit unescaped into Binder's, Colab's and pip's addresses."""
    if not re.fullmatch(_BRANCH, value) or ".." in value or value.endswith(".lock"):
        raise ForkError(
            f"{value!r} cannot be the branch: use a branch name of letters, digits, '.', '_' and '-' "
            f"(no '/', which Binder's and Colab's links would need escaped), e.g. main or fall-2026"
        )
    return value


def find_root(start: Path) -> Path:
    """The checkout holding ``start``: the nearest folder with pyproject.toml and nbcallback/repository.py."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / REPOSITORY_FILE).is_file() and (folder / "pyproject.toml").is_file():
            return folder
    raise ForkError(
        f"{start} is not in a clone of nbcallback (no folder above it has pyproject.toml and {REPOSITORY_FILE}): "
        f"run the command in your clone of the fork, or pass --root <that folder>"
    )


def configured(root: Path) -> Target:
    """The repository and branch that ``nbcallback/repository.py`` of the checkout holds."""
    text = (root / REPOSITORY_FILE).read_text(encoding="utf-8")
    values = {match.group("key"): match.group("value") for match in _SETTING.finditer(text)}
    if set(values) != {"REPOSITORY", "BRANCH"}:
        raise ForkError(
            f"{root / REPOSITORY_FILE} should hold the lines REPOSITORY = \"owner/name\" and BRANCH = \"branch\"; "
            f"restore them (git checkout {REPOSITORY_FILE}) and run the command again"
        )
    return Target(parse_repository(values["REPOSITORY"]), parse_branch(values["BRANCH"]))


def project_files(root: Path) -> list[str]:
    """The checkout's files (relative, with '/') that may hold links, sorted."""
    names: list[str] | None = None
    if (root / ".git").exists():
        try:
            listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=root,
                                    capture_output=True, check=True, timeout=120)
            names = [name for name in listed.stdout.decode("utf-8", "surrogateescape").split("\0") if name]
        except (OSError, subprocess.SubprocessError):
            names = None  # no git program: walk the folder instead
    if names is None:
        names = []
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in _NOT_PROJECT_DIRS and not d.endswith(".egg-info")
                       and not (Path(folder) / d / "pyvenv.cfg").exists()]
            names += [(Path(folder) / f).relative_to(root).as_posix() for f in files]
    return sorted(name for name in set(names)
                  if not name.startswith(SKIPPED_PREFIXES) and name not in SKIPPED_FILES and (root / name).is_file())


def _read_text(path: Path) -> str | None:
    """The file's text, or None for a binary, non-UTF-8 or very large file."""
    if path.stat().st_size > _MAX_BYTES:
        return None
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _rewrite(text: str, target: Target, ours: set[str]) -> tuple[str, list[tuple[int, str, str]]]:
    """``text`` with its links pointed at ``target``, and the (offset, link, new link) of each that changed."""
    changes: list[tuple[int, str, str]] = []

    def replace(match: re.Match[str]) -> str:
        kind = match.lastgroup
        assert kind is not None
        _, any_repository, missing_branch = _FORMS[kind]
        link = match.group(0)
        start = match.start()
        groups = {name[len(kind) + 1:]: name for name in match.re.groupindex if name.startswith(f"{kind}_")}
        repo = match.group(groups["repo"]) if "repo" in groups else None
        if not any_repository and (repo is None or repo.lower() not in ours):
            return link  # another project on GitHub
        replacements = []  # (group, new value), left to right
        if repo is not None:
            replacements.append((groups["repo"], target.repository))
        if "branch" in groups and match.group(groups["branch"]) is not None:
            replacements.append((groups["branch"], target.branch))
        if "folder" in groups:  # the clone line: the folder git clone makes is the repository's name
            replacements.append((groups["folder"], target.repository.split("/", 1)[1]))
        new, end = "", start
        for group, value in sorted(replacements, key=lambda item: match.start(item[0])):
            new += text[end: match.start(group)] + value
            end = match.end(group)
        tail = text[end: match.end()]
        if "branch" in groups and match.group(groups["branch"]) is None and missing_branch:
            new += text[end: match.end(groups["repo"])] + missing_branch.format(branch=target.branch)
            tail = text[match.end(groups["repo"]): match.end()]
        new += tail
        if new != link:
            changes.append((start, link, new))
        return new

    return LINK.sub(replace, text), changes


def _ours(root: Path, target: Target) -> set[str]:
    names = {UPSTREAM.lower(), target.repository.lower()}
    try:
        names.add(configured(root).repository.lower())
    except ForkError:
        pass  # a broken repository.py: it is rewritten below
    return names


def stale_places(root: Path, target: Target | None = None) -> list[Place]:
    """Every link of the checkout that does not name ``target`` (default: nbcallback/repository.py's)."""
    target = target or configured(root)
    ours = _ours(root, target)
    places = []
    if configured(root) != target:
        current = configured(root)
        places.append(Place(REPOSITORY_FILE, 1, f"{current.repository} ({current.branch})",
                            f"{target.repository} ({target.branch})"))
    for name in project_files(root):
        text = _read_text(root / name)
        if text is None or not any(word in text for word in _WORDS):
            continue
        for offset, link, new in _rewrite(text, target, ours)[1]:
            places.append(Place(name, text.count("\n", 0, offset) + 1, link, new))
    return places


def write_configuration(root: Path, target: Target) -> bool:
    """Write ``target`` into nbcallback/repository.py; True if it changed."""
    path = root / REPOSITORY_FILE
    text = path.read_text(encoding="utf-8")
    values = {"REPOSITORY": target.repository, "BRANCH": target.branch}
    new = _SETTING.sub(lambda m: f'{m.group("key")} = "{values[m.group("key")]}"', text)
    if new != text:
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.write(new)
    return new != text


def apply(root: Path, target: Target) -> dict[str, int]:
    """Point every link of the checkout at ``target`` and record it in nbcallback/repository.py.

    Returns the number of links changed per file (nbcallback/repository.py counts 1 when it changed)."""
    ours = _ours(root, target)
    changed: dict[str, int] = {}
    for name in project_files(root):
        path = root / name
        text = _read_text(path)
        if text is None or not any(word in text for word in _WORDS):
            continue
        new, changes = _rewrite(text, target, ours)
        if changes:
            with open(path, "w", encoding="utf-8", newline="") as handle:
                handle.write(new)
            changed[name] = len(changes)
    if write_configuration(root, target):
        changed[REPOSITORY_FILE] = 1
    return changed


def _git(root: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as error:
        raise ForkError(f"--private-masters needs git, which could not run ({error}): install git, or remove "
                        f"{', '.join(PRIVATE)} from the fork by hand") from None
    if done.returncode != 0:
        raise ForkError(f"git {' '.join(args)} failed in {root}: {done.stderr.strip()}")
    return done.stdout


def tracked_private(root: Path) -> dict[str, int]:
    """How many files of each :data:`PRIVATE` folder git tracks in the checkout ({} where there is no git)."""
    if not (root / ".git").exists():
        return {}
    try:
        listed = _git(root, "ls-files", "-z", "--", *PRIVATE)
    except ForkError:
        return {}
    counts: dict[str, int] = {}
    for name in filter(None, listed.split("\0")):
        folder = next(folder for folder in PRIVATE if name.startswith(folder + "/"))
        counts[folder] = counts.get(folder, 0) + 1
    return counts


def make_private(root: Path) -> list[str]:
    """Stop tracking the :data:`PRIVATE` folders and ignore them (their files stay on disk); what was done, in words."""
    if not (root / ".git").exists():
        raise ForkError(f"--private-masters needs the clone's git repository, and {root} has no .git: run it in "
                        f"your clone of the fork")
    done = []
    for folder, count in tracked_private(root).items():
        _git(root, "rm", "-r", "-q", "--cached", "--", folder)
        done.append(f"{folder}/: {count} file(s) no longer tracked by git, kept on this disk; the next commit "
                    f"removes them from the fork's branch")
    ignore = root / ".gitignore"
    text = ignore.read_text(encoding="utf-8") if ignore.exists() else ""
    missing = [f"/{folder}/" for folder in PRIVATE if f"/{folder}/" not in text.splitlines()]
    if missing:
        block = ("" if not text or text.endswith("\n") else "\n") + (
            "# The exercises' solutions and hidden tests stay on the teacher's disk (python -m nbcallback.fork "
            "--private-masters)\n" + "".join(f"{line}\n" for line in missing))
        with open(ignore, "a", encoding="utf-8", newline="") as handle:
            handle.write(block)
        done.append(f".gitignore: now ignores {', '.join(missing)}")
    return done


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not argparse's usage block
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(
        prog="python -m nbcallback.fork",
        description="Point the badges, Colab install cells and links of this checkout at a fork (owner/name on "
                    "GitHub) and its branch, and record them in nbcallback/repository.py.",
    )
    parser.add_argument("repository", nargs="?",
                        help="the fork as owner/name (or its GitHub address); default: the one in nbcallback/repository.py")
    parser.add_argument("--branch", help="the branch the class opens; default: the one in nbcallback/repository.py")
    parser.add_argument("--check", action="store_true",
                        help="change nothing; list the places that point elsewhere and exit 1 if there are any")
    parser.add_argument("--private-masters", action="store_true",
                        help="also keep the exercises' solutions and hidden tests (" + ", ".join(PRIVATE) + ") out of "
                             "the fork: git stops tracking them and ignores them; the files stay on this disk")
    parser.add_argument("--root", type=Path, default=None,
                        help="the checkout (default: the one holding the current folder)")
    args = parser.parse_args(argv)
    try:
        root = find_root(args.root or Path.cwd())
        current = configured(root)
        target = Target(
            parse_repository(args.repository) if args.repository is not None else current.repository,
            parse_branch(args.branch) if args.branch is not None else current.branch,
        )
    except ForkError as error:
        parser.error(str(error))
    where = f"{target.repository} (branch {target.branch})"
    if args.check:
        places = stale_places(root, target)
        if places:
            print(f"{len(places)} place(s) do not point at {where}:", file=sys.stderr)
            for place in places:
                print(f"  {place}", file=sys.stderr)
            option = f" {target.repository} --branch {target.branch}" if target != current else ""
            print(f"Rewrite them with: python -m nbcallback.fork{option}", file=sys.stderr)
            return 1
        print(f"Every badge, install cell and link points at {where}.")
        return 0
    private = []
    if args.private_masters:
        try:
            private = make_private(root)
        except ForkError as error:
            parser.error(str(error))
    changed = apply(root, target)
    for line in private:
        print(line)
    for name, count in changed.items():
        print(f"{name}: {count} link(s) rewritten" if name != REPOSITORY_FILE else f"{name}: now {where}")
    left = stale_places(root, target)
    if left:  # cannot happen unless a file could not be written
        for place in left:
            print(f"  still stale: {place}", file=sys.stderr)
        return 1
    if changed or private:
        print(f"Every badge, install cell and link now points at {where}. Commit and push the "
              f"{len(changed)} changed file(s){' and the untracked masters' if private else ''}, e.g.: "
              f"git commit -am 'Point the badges at {target.repository}' && git push")
    else:
        print(f"Nothing to change: every badge, install cell and link already points at {where}.")
    if private:
        print("The masters are now only on this disk: keep a copy elsewhere too (a private repository), since a new "
              "clone of the fork will not have them. The fork's history still holds the upstream project's masters, "
              "which are public on GitHub anyway: change the exercises and their hidden tests for graded work "
              "(docs/teaching.md, \"What students can see\").")
    else:
        tracked = tracked_private(root)
        if tracked:
            print(f"The exercises' solutions and hidden tests ({', '.join(f'{folder}/' for folder in tracked)}) "
                  f"are still in the fork, readable by anyone on GitHub; binder/postBuild leaves them out of the Binder "
                  f"image and Codespaces. To keep them on this disk only, run: python -m nbcallback.fork "
                  f"{target.repository} --branch {target.branch} --private-masters")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
