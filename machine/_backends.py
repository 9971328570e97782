"""Backends by name, one registry shape for every kind (harnesses, trainers, stores, executors): a name maps
to an entry holding the factory, the extra that installs it with that extra's modules (checked before
anything is spent), and what the backend declares about itself, so the core never infers a capability from
a name. Entries are found through one mechanism, the package metadata's entry points (a group per kind,
``machine.harnesses``, ...), so a third-party package adds a backend by declaring one in its own metadata.

The typed entries live beside their protocols (``machine.runs``: harnesses and stores, ``machine.training``:
trainers, ``machine.workspace``: executors); this module holds what they share and stays below them.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

from machine.errors import BadInputError, MachineError

if TYPE_CHECKING:
    import importlib.metadata

HARNESS_GROUP = "machine.harnesses"
TRAINER_GROUP = "machine.trainers"
STORE_GROUP = "machine.stores"
EXECUTOR_GROUP = "machine.executors"
PART_GROUP = "machine.parts"
"""What the core takes from the adapters that is not a backend chosen by name: the judges' model access,
the sandboxes, the library's tools and hidden-tests grader (``machine.ops`` composes them)."""


@dataclass(frozen=True, kw_only=True)
class Backend:
    """What every backend declares, whatever its kind: the extra that installs it and the modules that extra
    brings (all checked before its factory runs), where it is listed among its kind, whether it is the one
    used when none is named, and the model ids it serves, and serves alone (a prefix, ``local:``), which
    pick it when none is named. Keyword-only, so each kind's entry takes its factory first."""

    extra: str | None = None
    modules: tuple[str, ...] = ()
    order: int = 100
    """Where it is listed among its kind: lower first, ties by name."""
    default: bool = False
    serves: str | None = None
    makes: str = ""
    """What its factory makes (``module:Class``), so a listing, and the layer test, can say which class
    each name stands for."""


E = TypeVar("E", bound=Backend)

_INSTALLED: list[Any] = []
"""Every installed package's entry points, read once a process (one pass over the metadata for all
groups: a pass costs some milliseconds at start-up, whatever the group)."""


def entry_points(group: str) -> importlib.metadata.EntryPoints:
    """The entry points of ``group`` of every installed package, this package's own first."""
    import importlib.metadata  # what start-up needs no registry for does not load it (20 ms)

    if not _INSTALLED:
        _INSTALLED.append(importlib.metadata.entry_points())
    points: importlib.metadata.EntryPoints = _INSTALLED[0].select(group=group)  # 3.11: SelectableGroups
    own = [point for point in points if point.module.startswith("machine.")]
    return importlib.metadata.EntryPoints([*own, *(point for point in points if point not in own)])


class BrokenBackend(MachineError):
    """An installed package declares a backend that cannot be loaded, or is not an entry of its kind."""


class Registry(MutableMapping[str, E]):
    """The backends of one kind by name: read from the entry points of ``group`` on first use and kept
    (each entry loaded when it is first asked for). A test or a program registers one at run time by
    assigning it (``TRAINERS["mine"] = TrainerEntry(...)``) and removes it with ``del``."""

    def __init__(self, group: str, kind: type[E], what: str) -> None:
        self.group = group
        self.kind = kind
        self.what = what
        """The kind in words, for messages (``harness``)."""
        self._points: dict[str, importlib.metadata.EntryPoint] | None = None
        self._entries: dict[str, E] = {}
        self._assigned: set[str] = set()

    def _declared(self) -> dict[str, importlib.metadata.EntryPoint]:
        if self._points is None:
            self._points = {point.name: point for point in entry_points(self.group)}
        return self._points

    def __getitem__(self, name: str) -> E:
        if name not in self._entries:
            point = self._declared()[name]  # KeyError: no such backend
            self._entries[name] = self._load(point)
        return self._entries[name]

    def _load(self, point: importlib.metadata.EntryPoint) -> E:
        source = f"{point.value}" + (f", from {point.dist.name}" if point.dist is not None else "")
        try:
            entry = point.load()
        except Exception as error:  # a plugin's import may fail in any way: say which plugin
            raise BrokenBackend(
                f"the {self.what} {point.name!r} ({source}) cannot be loaded: {type(error).__name__}: {error}"
            ) from error
        if not isinstance(entry, self.kind):
            raise BrokenBackend(
                f"the {self.what} {point.name!r} ({source}) is a {type(entry).__name__}, "
                f"not a {self.kind.__name__}"
            )
        return entry

    def __setitem__(self, name: str, entry: E) -> None:
        self._entries[name] = entry
        self._assigned.add(name)

    def __delitem__(self, name: str) -> None:
        found = self._entries.pop(name, None) is not None
        self._assigned.discard(name)
        if name in self._declared():
            del self._declared()[name]
        elif not found:
            raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self._declared()

    def __iter__(self) -> Iterator[str]:
        """The names in their declared order; a broken plugin's is listed last (it is refused when named)."""
        names = {*self._declared(), *self._entries}
        return iter(sorted(names, key=lambda name: (self._order(name), name)))

    def _order(self, name: str) -> float:
        try:
            return self[name].order
        except BrokenBackend:
            return float("inf")

    def loaded(self) -> list[tuple[str, E]]:
        """Every entry that loads, by name, in order: a broken plugin does not stop the others' use."""
        found = []
        for name in self:
            try:
                found.append((name, self[name]))
            except BrokenBackend:
                continue
        return found

    def __len__(self) -> int:
        return len({*self._declared(), *self._entries})

    def reread(self) -> None:
        """Read the entry points again (a package was installed, or put on ``sys.path``, in this process);
        the entries assigned at run time are kept."""
        _INSTALLED.clear()
        self._points = None
        self._entries = {name: entry for name, entry in self._entries.items() if name in self._assigned}

    def named(self, name: str) -> E:
        """The entry called ``name``; an unknown name is refused with the names there are."""
        if name not in self:
            raise BadInputError(f"there is no {self.what} {name!r}: choose one of {', '.join(self)}")
        return self[name]

    def serving(self, model: str | None) -> str | None:
        """The name of the backend that serves ``model`` (its ``serves`` prefix), else of the default one."""
        entries = self.loaded()
        if model is not None:
            for name, entry in entries:
                if entry.serves is not None and model.startswith(entry.serves):
                    return name
        return next((name for name, entry in entries if entry.default), None)

    def where(self, test: Callable[[E], bool]) -> list[str]:
        """The names of the entries ``test`` holds for, in their order."""
        return [name for name, entry in self.loaded() if test(entry)]


_REGISTRIES: dict[str, Registry[Any]] = {}


def registry(group: str, kind: type[E], what: str) -> Registry[E]:
    """The one registry of ``group``, made on first use: every module that asks for it gets the same."""
    found = _REGISTRIES.get(group)
    if found is None:
        found = _REGISTRIES[group] = Registry(group, kind, what)
    elif issubclass(kind, found.kind):  # asked for first by a module that knows only the base type
        found.kind, found.what = kind, what
    return cast(Registry[E], found)


def installed(module: str) -> bool:
    """Whether ``module`` can be imported (without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent that fails to import, or a module blocked in sys.modules
        return False


def check_extra(what: str, name: str, entry: Backend) -> None:
    """Refuse a backend whose extra's modules are not installed, before anything is spent."""
    missing = [module for module in entry.modules if not installed(module)]
    if missing and entry.extra is not None:
        raise BadInputError(
            f"the {name} {what} needs the {entry.extra} extra, and {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not installed: pip install 'machine[{entry.extra}]'",
        )


T = TypeVar("T")


def build(what: str, name: str, entry: Backend, make: Callable[[], T]) -> T:
    """``make()`` for the backend ``name`` once its extra is checked; a module it cannot import is refused
    with the extra that brings it."""
    check_extra(what, name, entry)
    try:
        return make()
    except ModuleNotFoundError as lost:
        raise BadInputError(
            f"the {name} {what} cannot be loaded ({lost}): pip install 'machine[{entry.extra or name}]'"
        ) from None


_PARTS: dict[str, Any] = {}


def part(name: str) -> Any:
    """The adapter part ``name`` of the ``machine.parts`` entry points, loaded once."""
    if name not in _PARTS:
        points = {point.name: point for point in entry_points(PART_GROUP)}
        if name not in points:
            raise BrokenBackend(f"no installed package provides the {name!r} part ({PART_GROUP})")
        try:
            _PARTS[name] = points[name].load()
        except Exception as error:
            raise BrokenBackend(
                f"the part {name!r} ({points[name].value}) cannot be loaded: {type(error).__name__}: {error}"
            ) from error
    return _PARTS[name]


def declared_free(name: str) -> bool:
    """Whether ``name`` is a harness that declares its runs cost nothing (read by pricing: such a name,
    used as a model id, costs nothing too). One lookup: pricing asks on every model call."""
    harnesses = registry(HARNESS_GROUP, Backend, "harness")
    if name not in harnesses:
        return False
    try:
        return bool(getattr(harnesses[name], "free", False))
    except BrokenBackend:
        return False


__all__ = [
    "EXECUTOR_GROUP",
    "HARNESS_GROUP",
    "PART_GROUP",
    "STORE_GROUP",
    "TRAINER_GROUP",
    "Backend",
    "BrokenBackend",
    "Registry",
    "build",
    "check_extra",
    "declared_free",
    "entry_points",
    "installed",
    "part",
    "registry",
]
