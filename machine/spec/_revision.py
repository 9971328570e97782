"""A machine as it was at a git revision, read from git and never checked out: the revision's whole
``machines/`` tree (machines import siblings and parents) is exported into a temporary folder and loaded
by a loader of its own, so the two versions never meet in ``sys.modules``."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from machine.errors import BadInputError, DefinitionError, Fix, NotTrusted

from ._loader import MachineLoader
from ._machine import Machine
from ._trust import TrustBook


@dataclass
class Baseline:
    """The machine as it was at a git revision, loaded from an exported copy of that revision."""

    ref: str
    commit: str
    machine: Machine


@contextmanager
def machine_at(
    machines_dir: Path, name: str, ref: str = "HEAD", *, trust: TrustBook | None = None
) -> Iterator[Baseline]:
    """Load machine ``name`` of the workspace whose machines are in ``machines_dir`` as it was at ``ref``;
    the exported copy is removed on exit. With ``trust``, a file a model wrote is imported only in a content
    the person trusted, as in the workspace itself."""
    import git  # GitPython is slow to import: only when a revision is read

    root = machines_dir.parent
    try:
        repo = git.Repo(root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise BadInputError(
            f"workspace {root} is not in a git repository, so there is no earlier version of "
            f"machine {name!r} to compare with: run `git init` there and commit machines/ first"
        ) from None
    with repo:
        if repo.working_tree_dir is None:
            raise BadInputError(f"the git repository at {repo.git_dir} is bare; compare needs a working tree")
        try:
            commit = repo.commit(ref)
        except Exception:  # BadName, BadObject, ValueError (no commits yet, not a commit): all the same here
            raise BadInputError(
                f"git revision {ref!r} does not exist in {repo.working_tree_dir} (or names no commit)",
                fixes=[Fix("ref", "HEAD~1", "(a commit, branch or tag that exists)")],
            ) from None
        where = f"{ref} ({commit.hexsha[:12]})"
        try:
            inside = machines_dir.resolve().relative_to(Path(repo.working_tree_dir).resolve())
        except ValueError:
            raise BadInputError(
                f"{machines_dir} is outside the git repository at {repo.working_tree_dir}"
            ) from None
        folder = inside.as_posix()
        try:
            tree = commit.tree / folder if folder != "." else commit.tree
            tree / f"{name}/machine.py"
        except KeyError:
            raise BadInputError(
                f"machine {name!r} did not exist at {where}: {folder}/{name}/machine.py is not in that "
                "commit, so there is no earlier version to compare with",
                fixes=[Fix("ref", "REV", "naming a commit that has it")],
            ) from None
        with tempfile.TemporaryDirectory(prefix="machine-compare-") as temp:
            machines = Path(temp) / "machines"
            _export(tree, machines)
            book = TrustBook(trust.path, machines) if trust is not None else None
            loader = MachineLoader(machines, trust=book)
            try:
                try:
                    spec = loader.load(name)
                except NotTrusted:
                    raise
                except DefinitionError as error:
                    raise DefinitionError(f"machine {name!r} at {where}: {error}") from None
                yield Baseline(ref=ref, commit=commit.hexsha, machine=spec)
            finally:
                loader.unload()


def _export(tree: Any, dest: Path) -> None:
    """Write a git tree's files under ``dest`` (no checkout: the person's working tree is never touched)."""
    dest.mkdir(parents=True)
    base = PurePosixPath(tree.path) if tree.path else PurePosixPath()
    for item in tree.traverse():
        target = dest.joinpath(*PurePosixPath(item.path).relative_to(base).parts)
        if item.type == "tree":
            target.mkdir(parents=True, exist_ok=True)
        elif item.type == "blob":
            target.parent.mkdir(parents=True, exist_ok=True)
            data = item.data_stream.read()
            if item.mode == 0o120000:  # a symbolic link: its target is the blob's content
                os.symlink(data.decode(), target)
            else:
                target.write_bytes(data)
