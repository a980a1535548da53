"""Work counted, not timed: how a test shows that a function's cost grows with its input
and no faster, the same on a busy machine as on an idle one.

`Work(modules)` counts, while it is entered, two things the code of those modules does:

  lines    each line of their Python code executed (sys.settrace), loops included
  scanned  the characters they hand to their compiled regular expressions (the module's
           own re.Pattern globals, in tuples, lists and dicts too, swapped for counting
           wrappers): from pos to endpos for a call that scans (search, finditer, findall,
           split, sub), at most the expression's widest match for an anchored one (match,
           fullmatch), which cannot look further

What the regular expression engine does inside one scan is not visible from Python; a
module that promises linear work keeps each of its expressions' matches bounded in width
(`widest`), which a test can check of the expressions themselves.
"""
import re
import sys
from collections import Counter
from types import ModuleType

try:
    from re import _parser as _sre_parse  # Python 3.11+
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]

_SCANNING = frozenset(("search", "finditer", "findall", "split", "sub", "subn"))
_ANCHORED = frozenset(("match", "fullmatch"))
UNBOUNDED = 1 << 62


def widest(pattern: re.Pattern) -> int:
    """The most characters one match of `pattern` can span (UNBOUNDED or more when a
    repetition has no upper bound)."""
    return _sre_parse.parse(pattern.pattern, pattern.flags).getwidth()[1]


class _Counted:
    """A compiled expression that adds what it is handed to a Work."""

    def __init__(self, pattern: re.Pattern, work: "Work"):
        self._pattern, self._work = pattern, work
        self._widest = widest(pattern)

    def __getattr__(self, name):
        attr = getattr(self._pattern, name)
        if name not in _SCANNING and name not in _ANCHORED:
            return attr

        def counted(*args, **kwargs):
            string, pos, endpos = self._span(name, args, kwargs)
            span = max(0, min(endpos, len(string)) - pos)
            if name in _ANCHORED:
                span = min(span, self._widest)
            self._work.scanned += span
            self._work.calls[self._pattern.pattern[:40]] += 1
            return attr(*args, **kwargs)
        return counted

    @staticmethod
    def _span(name: str, args: tuple, kwargs: dict) -> tuple[str, int, int]:
        if name in ("sub", "subn"):
            string = args[1] if len(args) > 1 else kwargs["string"]
            return string, 0, len(string)
        string = args[0] if args else kwargs["string"]
        if name == "split":
            return string, 0, len(string)
        pos = args[1] if len(args) > 1 else kwargs.get("pos", 0)
        endpos = args[2] if len(args) > 2 else kwargs.get("endpos", len(string))
        return string, pos, endpos


class Work:
    """Lines executed in `modules` and characters they handed to their expressions, counted
    while entered (`with Work(mod) as work: ...`); `total` adds the two."""

    def __init__(self, *modules: ModuleType):
        self.modules = modules
        self.files = {m.__file__ for m in modules}
        self.lines = 0
        self.scanned = 0
        self.calls: Counter[str] = Counter()
        self._swapped: list[tuple[ModuleType, str, object]] = []

    @property
    def total(self) -> int:
        return self.lines + self.scanned

    def wrap(self, value):
        if isinstance(value, re.Pattern):
            return _Counted(value, self)
        if isinstance(value, tuple) and any(isinstance(v, (re.Pattern, tuple)) for v in value):
            return tuple(self.wrap(v) for v in value)
        if isinstance(value, list) and any(isinstance(v, (re.Pattern, tuple)) for v in value):
            return [self.wrap(v) for v in value]
        if isinstance(value, dict) and any(isinstance(v, re.Pattern) for v in value.values()):
            return {k: self.wrap(v) for k, v in value.items()}
        return value

    def _trace(self, frame, event, arg):
        if frame.f_code.co_filename not in self.files:
            return None

        def local(frame, event, arg):
            if event == "line":
                self.lines += 1
            return local
        return local

    def __enter__(self) -> "Work":
        for module in self.modules:
            for name, value in list(vars(module).items()):
                wrapped = self.wrap(value)
                if wrapped is not value:
                    self._swapped.append((module, name, value))
                    setattr(module, name, wrapped)
        self._previous = sys.gettrace()
        sys.settrace(self._trace)
        return self

    def __exit__(self, *exc) -> None:
        sys.settrace(self._previous)
        for module, name, value in reversed(self._swapped):
            setattr(module, name, value)
        self._swapped.clear()


def counted(function, *args, modules: tuple[ModuleType, ...], **kwargs) -> Work:
    """The work `function(*args, **kwargs)` does in `modules`."""
    with Work(*modules) as work:
        function(*args, **kwargs)
    return work


def package_modules(prefix: str) -> tuple[ModuleType, ...]:
    """The imported modules named `prefix` or `prefix.*`."""
    return tuple(m for name, m in sorted(sys.modules.items())
                 if (name == prefix or name.startswith(prefix + "."))
                 and getattr(m, "__file__", None))
