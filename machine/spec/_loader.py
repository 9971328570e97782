"""Loading a workspace's machines folder.

The folder is imported as a private package with a name of its own, so ``from .rubric import rubric``
and ``from ..machine import machine as parent`` work in machine files and never collide with the
user's own modules. A machine file that fails to import is reported with its file and line. With a
``TrustBook``, no file a model wrote is imported unless the person trusted its content: the machine holding
it is refused before anything of it is imported, and an import of such a file from anywhere else in the
package is refused too.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import keyword
import re
import sys
import traceback
import types
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from machine.errors import DefinitionError, NotFoundError, NotTrusted
from machine.runs import NAME_SEGMENT

from ._machine import Machine
from ._trust import untrusted_message

if TYPE_CHECKING:
    from ._trust import TrustBook

_SKIP = {"__pycache__"}


def _builtin_machines() -> Path:
    """``machinist/machines``: found where the package maps ``machine.machinist`` (a folder beside
    ``machine/`` in a source checkout, inside it when installed), without importing it."""
    spec = importlib.util.find_spec("machine.machinist")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(folders[0] if folders else Path(__file__).resolve().parents[1] / "machinist") / "machines"


BUILTIN_MACHINES = _builtin_machines()
"""The machines the library ships (the optimizer and the author), beside the machinist. A workspace's own
machine of the same name is used instead."""


def discover(machines_dir: Path) -> list[str]:
    """Names of the machines under ``machines_dir`` (folders with a machine.py), sorted."""
    if not machines_dir.is_dir():
        return []
    names = []
    for file in machines_dir.rglob("machine.py"):
        parts = file.parent.relative_to(machines_dir).parts
        hidden = any(p in _SKIP or p.startswith(".") for p in parts)
        if parts and not hidden and all(NAME_SEGMENT.match(p) for p in parts):
            names.append("/".join(parts))
    return sorted(names)


NAMING_RULE = "lower-case letters, digits, '.', '_' and '-', starting with a letter or a digit"


def misnamed(machines_dir: Path) -> list[str]:
    """Folders under ``machines_dir`` that hold a machine.py but whose names break the naming rule
    (``discover`` leaves them out), as paths relative to it, sorted."""
    if not machines_dir.is_dir():
        return []
    found = []
    for file in machines_dir.rglob("machine.py"):
        parts = file.parent.relative_to(machines_dir).parts
        hidden = any(p in _SKIP or p.startswith(".") for p in parts)
        if parts and not hidden and not all(NAME_SEGMENT.match(p) for p in parts):
            found.append("/".join(parts))
    return sorted(found)


def misnamed_message(machines_dir: Path, folder: str) -> str:
    """Why the machine in ``folder`` is not loaded, and the name to give it."""
    parts = [re.sub(r"[^a-z0-9._-]+", "-", p.lower()).strip("-._") or "machine" for p in folder.split("/")]
    return (
        f"{machines_dir.name}/{folder} holds a machine.py, but its name breaks the naming rule "
        f"({NAMING_RULE}), so it is not loaded: rename the folder to {machines_dir.name}/{'/'.join(parts)}"
    )


def _defines(machines_dir: Path, name: str) -> bool:
    """Whether ``discover`` finds machine ``name`` under ``machines_dir``, without walking the folder: its
    folders named as machines are named, none hidden or a link (which ``rglob`` does not follow)."""
    parts = name.split("/")
    if any(p in _SKIP or p.startswith(".") or not NAME_SEGMENT.match(p) for p in parts):
        return False
    folder = machines_dir
    for part in parts:
        folder = folder / part
        if folder.is_symlink():
            return False
    return (folder / "machine.py").is_file()


class MachineLoader:
    """Imports a machines folder's machines by name, each once, under a private package of its own;
    with ``builtins``, a name the folder does not define is looked up among the library's machines."""

    def __init__(self, machines_dir: Path, *, builtins: bool = False, trust: TrustBook | None = None) -> None:
        self.machines_dir = machines_dir.resolve()
        self.fallback = MachineLoader(BUILTIN_MACHINES) if builtins else None
        digest = hashlib.sha256(str(self.machines_dir).encode()).hexdigest()[:12]
        self.package = f"_machine_workspace_{digest}"
        self.trust = trust
        """The record of model-written files; None imports every file (inside the vetting sandbox)."""
        self._cache: dict[str, Machine] = {}
        if trust is not None:
            _Guard.install(self.package, trust)

    def names(self) -> list[str]:
        """The machines under the folder, sorted."""
        return discover(self.machines_dir)

    def misnamed(self) -> dict[str, str]:
        """Each folder that holds a machine.py under a name that breaks the naming rule, with why it is
        not loaded and the name to give it."""
        return {folder: misnamed_message(self.machines_dir, folder) for folder in misnamed(self.machines_dir)}

    def is_builtin(self, name: str) -> bool:
        """Whether ``name`` loads the library's machine of that name (the folder has none of its own)."""
        if self.fallback is None or not (self.fallback.machines_dir / name / "machine.py").is_file():
            return False
        return not (self.machines_dir / name / "machine.py").is_file()

    def unload(self) -> None:
        """Forget every machine loaded, so the next ``load`` imports the files as they are now."""
        self._cache.clear()
        for module in [m for m in sys.modules if m == self.package or m.startswith(self.package + ".")]:
            del sys.modules[module]
        importlib.invalidate_caches()

    def package_of(self, name: str) -> str:
        """The private package the files of machine ``name`` are imported under (``PACKAGE.module``
        imports a module of its folder), registered on first use."""
        return self._package_for(name)

    def _package_for(self, name: str) -> str:
        """Register a package module for each folder level of ``name`` and return the innermost."""
        if self.package not in sys.modules:
            root = types.ModuleType(self.package)
            root.__path__ = [str(self.machines_dir)]
            sys.modules[self.package] = root
        module, folder = self.package, self.machines_dir
        for part in name.split("/"):
            module, folder = f"{module}.{_identifier(part)}", folder / part
            if module not in sys.modules:
                package = types.ModuleType(module)
                package.__path__ = [str(folder)]
                package.__package__ = module
                sys.modules[module] = package
        return module

    def load(self, name: str) -> Machine:
        """The machine ``name``, imported on first use; a missing or broken one says what is wrong."""
        if name in self._cache:
            return self._cache[name]
        if not _defines(self.machines_dir, name):
            if self.fallback is not None and self.is_builtin(name):
                return self.fallback.load(name)
            wrong = misnamed(self.machines_dir)
            if name.strip("/") in wrong:
                raise DefinitionError(misnamed_message(self.machines_dir, name.strip("/")))
            known = self.names()
            listing = (
                ", ".join(known)
                if known
                else f"none (no machines/<name>/machine.py under {self.machines_dir})"
            )
            skipped = "".join(f"; {misnamed_message(self.machines_dir, folder)}" for folder in wrong)
            raise NotFoundError(f"there is no machine {name!r}; the known machines are: {listing}{skipped}")
        file = self.machines_dir / name / "machine.py"
        if self.trust is not None:
            self.trust.refuse(name)
        try:
            module = importlib.import_module(self._package_for(name) + ".machine")
        except NotTrusted:
            raise
        except DefinitionError as error:
            raise DefinitionError(f"{_where(error, self.machines_dir, file)}: {error}") from None
        except ModuleNotFoundError as error:
            missing = _missing(error, self.package, self.machines_dir)
            shown = missing or f"{type(error).__name__}: {error}"
            raise DefinitionError(f"{_where(error, self.machines_dir, file)}: {shown}") from None
        except Exception as error:
            raise DefinitionError(
                f"{_where(error, self.machines_dir, file)}: {type(error).__name__}: {error}"
            ) from None
        found = getattr(module, "machine", None)
        if not isinstance(found, Machine):
            raise DefinitionError(
                f"{file} must define a module attribute `machine` made with define_machine or define_child"
            )
        if found.name != name:
            raise DefinitionError(
                f"{file} defines a machine named {found.name!r}; its folder makes it {name!r}"
            )
        found = _with_source(found, file)
        other = found.counterpart.machine if found.counterpart is not None else None
        if other is not None and other.source is None and _defines(self.machines_dir, other.name):
            _with_source(other, self.machines_dir / other.name / "machine.py")  # imported by its file
        self._cache[name] = found
        return found


def _identifier(part: str) -> str:
    """A folder's module name: the folder name itself when Python can import it (so relative imports
    between machine files reach the same modules the loader made), else a distinct escaped form."""
    if part.isidentifier() and not keyword.iskeyword(part):
        return part
    escaped = part.replace("_", "_5f").replace(".", "_2e").replace("-", "_2d")
    return "_x_" + escaped


def _missing(error: ModuleNotFoundError, package: str, machines_dir: Path) -> str | None:
    """A machine file's import of another machine's files (``from ..coder.steps import ...``) that is
    not there, said as the folder or file to copy; None for any other missing module (a library's),
    whose own message says it. The private package's name is never shown: it means nothing to anyone."""
    name = error.name or ""
    if not name.startswith(package + "."):
        return None
    parts = [_folder_name(part) for part in name.removeprefix(package + ".").split(".")]
    top = machines_dir / parts[0]
    if not top.is_dir():
        return (
            f"it imports from the machine folder {parts[0]!r}, which {machines_dir} does not have: copy "
            f"that folder into it as well (a machine that imports another's files needs both)"
        )
    return f"it imports {'/'.join(parts)} from {machines_dir}, which has no such file or folder"


def _folder_name(module: str) -> str:
    """The folder or file name ``_identifier`` made ``module`` from."""
    if not module.startswith("_x_"):
        return module
    return module.removeprefix("_x_").replace("_2d", "-").replace("_2e", ".").replace("_5f", "_")


def _with_source(found: Machine, file: Path) -> Machine:
    """Record where the machine was loaded from on the object itself, so a child's ``parent``
    is the very machine that loading the parent returns."""
    object.__setattr__(found, "source", file)
    return found


def _where(error: BaseException, machines_dir: Path, fallback: Path) -> str:
    """``file:line`` of the deepest frame inside the machines folder, where the error arose."""
    frames = traceback.extract_tb(error.__traceback__)
    if isinstance(error, SyntaxError) and error.filename:
        return f"{error.filename}:{error.lineno}"
    inside = [f for f in frames if Path(f.filename).resolve().is_relative_to(machines_dir)]
    if inside:
        return f"{inside[-1].filename}:{inside[-1].lineno}"
    return str(fallback)


class _Guard:
    """Finds the modules of one private package as Python would, refusing a file a model wrote whose
    content the person has not trusted: whoever imports it (the machine that holds it, a child, a sibling).
    A finder on ``sys.meta_path`` needs only ``find_spec`` (``importlib.abc`` would load
    ``importlib.resources`` with every command)."""

    def __init__(self, package: str, book: TrustBook) -> None:
        self.package = package
        self.book = book

    @classmethod
    def install(cls, package: str, book: TrustBook) -> None:
        """Guard ``package`` with ``book`` (the newest loader's book, for a package guarded already)."""
        guard = _GUARDS.get(package)
        if guard is not None:
            guard.book = book
            return
        guard = _GUARDS[package] = cls(package, book)
        sys.meta_path.insert(0, guard)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(self.package + ".") or path is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        origin = spec.origin if spec is not None else None
        if origin:
            state = self.book.of_file(Path(origin))
            if state is not None and state.state in ("untrusted", "changed"):
                message = untrusted_message(state.machine, [state])
                raise NotTrusted(message, machine=state.machine, files=[state])
        return spec


_GUARDS: dict[str, _Guard] = {}
"""The guard of each private package guarded in this process."""
