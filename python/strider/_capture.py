"""The Python state a compiled function reads and writes besides its arguments: attributes of
object arguments (`self.stride`), module globals and closure variables.

What it reads are *sources* (csrc/python/call_signature.h's Source): every call reads them again,
arrays as inputs of the program (read and written in place, as NumPy would), other values as
static parts of the cache key (a change makes a new signature, never a stale answer). A trace
finds them: globals and closure variables by the bytecode that loads them, attributes by
recording reads on the objects it reaches, whose class is swapped for a recording subclass while
the function traces. What it writes (attributes, items of lists and dicts it read, globals,
closure variables) is replayed after every call with that call's arrays."""
import dis
import enum
import functools
import sys
import types

import numpy as np

from ._tracer import Tracer, current_trace, holds_traced

_MISSING = object()  # a source that cannot be read (C++'s Walk::missing), a parameter left out
_HELPER_DEPTH = 3    # how deep calls of plain functions are followed for the globals they read


def _is_data(value, depth=0):
    """True for what a source holds: arrays, numbers, strings and containers of them (objects
    inside containers are static, compared by ==); never a Tracer (one kept from an earlier call
    raises where it is used)."""
    if type(value) is Tracer:
        return False
    if isinstance(value, (np.ndarray, np.generic, bool, int, float, complex, str, bytes, type(None))):
        return True
    if type(value) in (list, tuple, dict) and depth < 4:
        items = value.values() if type(value) is dict else value
        return all(_is_data(v, depth + 1) or _hashable(v) for v in items)
    return False


def _hashable(value):
    try:
        hash(value)
    except TypeError:
        return False
    return not isinstance(value, (types.FunctionType, types.MethodType, type, types.ModuleType))


def _adoptable(value):
    """Objects whose attributes a trace follows: instances of Python classes, and objects with a
    plain __dict__ (types.SimpleNamespace)."""
    cls = type(value)
    return _user_class(value) or (
        # a heap type's (Py_TPFLAGS_HEAPTYPE) or a plain __dict__: attributes of its own (Python
        # 3.12's namedtuple fields are objects of a heap type without)
        hasattr(value, "__dict__") and (cls.__flags__ & (1 << 9) or type(value.__dict__) is dict)
        and not isinstance(value, (type, types.ModuleType, types.FunctionType, types.MethodType, Tracer,
                                   np.ndarray, np.generic, list, tuple, dict, enum.Enum))
        and not callable(getattr(cls, "_trace", None)))  # compiled functions


def _slot(holder, key):
    """A global, an attribute in an object's __dict__ (holder: a dict), a class's attribute
    (holder: the class) or a cell's contents."""
    if isinstance(holder, dict):
        return holder[key]
    return getattr(holder, key) if isinstance(holder, type) else holder.cell_contents


def _set_slot(holder, key, value):
    if isinstance(holder, dict):
        holder[key] = value
    elif isinstance(holder, type):
        setattr(holder, key, value)
    else:
        holder.cell_contents = value


def _user_class(value):
    """A class of the user's (a config's `conf_thres = 0.5`, SORT's `count`): its data attributes
    are sources, as an object's are."""
    return (isinstance(value, type) and value.__flags__ & (1 << 9) and type(value) is type
            and not value.__module__.startswith(("strider", "numpy")) and not issubclass(value, enum.Enum))


_RECORDING = {}  # class -> its recording subclass
_OWN = {}  # recording subclass -> its class


def _recording_class(cls):
    rec = _RECORDING.get(cls)
    if rec is None:
        own_getattr = hasattr(cls, "__getattr__")

        def __getattribute__(obj, name, _get=cls.__getattribute__):
            if name == "__class__":  # (`self.__class__.count += 1` is the class's)
                return cls
            capture = _active()
            if capture is None:
                return _get(obj, name)
            if name == "__dict__":  # every attribute at once, none read as a source
                capture.identity_of(obj, "reads its __dict__")
            try:
                value = _get(obj, name)
            except AttributeError:
                if not own_getattr:  # (hasattr: another object may have it)
                    capture.missing(obj, name)
                raise
            return capture.read(obj, name, value)

        def __setattr__(obj, name, value, _set=cls.__setattr__):
            capture = _active()
            if capture is not None:
                current_trace().refuse_side_effect(f"setting {type(obj).__name__}.{name}")
                capture.wrote(obj, name)
            _set(obj, name, value)

        namespace = {"__slots__": (), "__getattribute__": __getattribute__, "__setattr__": __setattr__,
                     "__module__": cls.__module__, "__qualname__": cls.__qualname__}
        # object's own ==, hash and repr read the identity, which a key by type does not hold
        for name, how in (("__eq__", "compares it with =="), ("__hash__", "hashes it"),
                          ("__repr__", "writes its address (repr)")):
            if getattr(cls, name) is getattr(object, name):
                namespace[name] = _noting(getattr(object, name), how)
        if "__eq__" in namespace and "__hash__" not in namespace:  # (a class's own __eq__ drops it)
            namespace["__hash__"] = cls.__hash__
        rec = type(cls)(cls.__name__, (cls,), namespace)
        _RECORDING[cls], _OWN[rec] = rec, cls
    return rec


def _noting(method, how):
    """object's `method`, noting on the trace's capture that the function used the identity."""
    def noted(obj, *args):
        capture = _active()
        if capture is not None:
            capture.identity_of(obj, how)
        return method(obj, *args)
    return noted


# Another library's arrays: keyed as arrays (their dtype, shape and device), never as objects.
_ARRAY_PROTOCOLS = ("__array__", "__array_interface__", "__array_struct__", "__cuda_array_interface__", "__dlpack__",
                    "__dlpack_device__")


def by_type(cls):
    """Whether a call keys an argument or source object of class `cls` by its class (and by which
    earlier such object of the call it is) rather than by its identity (call_signature.cc's
    Walk::top): the user's classes whose objects a trace follows (_adoptable) and whose hash is
    object's own or left out (a @dataclass's). What the function reads from such an object is a
    source, read on every call; a trace that finds the function using an object's identity
    (Capture.identity) keys them by identity again."""
    return (bool(cls.__flags__ & (1 << 9)) and cls.__hash__ in (object.__hash__, None)  # Py_TPFLAGS_HEAPTYPE
            and not issubclass(cls, (type, types.ModuleType, BaseException, Tracer, np.ndarray, np.generic, list, tuple,
                                     dict, set, frozenset, enum.Enum))
            and not callable(getattr(cls, "_trace", None))
            and not any(hasattr(cls, name) for name in _ARRAY_PROTOCOLS))


def own_class(cls):
    """The class whose recording subclass `cls` is, else cls."""
    return _OWN.get(cls, cls)


def _active():
    trace = current_trace()
    return None if trace is None else getattr(trace, "capture", None)


def _functions(fn):
    """fn and the plain functions it calls by global name (followed _HELPER_DEPTH deep)."""
    seen, out, todo = set(), [], [(fn, 0)]
    while todo:
        f, depth = todo.pop()
        f = getattr(f, "__func__", f)
        f = getattr(f, "_fn", f)  # a compiled function runs inline in this trace
        if not isinstance(f, types.FunctionType) or id(f) in seen:
            continue
        seen.add(id(f))
        out.append(f)
        if depth < _HELPER_DEPTH:
            for name in _global_names(f.__code__):
                v = f.__globals__.get(name)
                if isinstance(v, types.FunctionType) or callable(getattr(v, "_trace", None)):
                    todo.append((v, depth + 1))
    return out


@functools.lru_cache(maxsize=4096)  # each trace asks again, and dis is slow
def _global_names(code):
    """The global names code (and the code nested in it) loads or stores."""
    names = {ins.argval for ins in dis.get_instructions(code) if ins.opname in ("LOAD_GLOBAL", "STORE_GLOBAL",
                                                                                 "LOAD_NAME")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return frozenset(names)


def source_name(source, params):
    """A source as the user writes it: `self.stride`, `ANCHORS`, `scale`, `self.trackers[0].age`
    (a step that is a 1-tuple is an item of a list, tuple or dict)."""
    param, root, key, attrs = source
    head = params[param] if param >= 0 else key
    return head + "".join(f"[{a[0]!r}]" if type(a) is tuple else "." + a for a in attrs)


def _under(name, constants):
    return any(name == c or name.startswith((c + ".", c + "[")) for c in constants)


def static_sources(fn, constants):
    """The globals, closure variables and list or dict defaults `fn` and the functions it calls
    read that hold data (a trace does not need to find them)."""
    out = []
    for f in _functions(fn):
        for name in sorted(_global_names(f.__code__)):
            if name in f.__globals__ and _is_data(f.__globals__[name]) and not _under(name, constants):
                out.append((-1, f.__globals__, name, ()))
        for name, cell in zip(f.__code__.co_freevars, f.__closure__ or ()):
            try:
                value = cell.cell_contents
            except ValueError:  # not yet assigned
                continue
            if _is_data(value) and not _under(name, constants):
                out.append((-1, cell, name, ()))
        # a list or dict default, which the caller may change between calls (`f.__defaults__[0]`)
        defaults, argcount = f.__defaults__ or (), f.__code__.co_argcount
        named = [(name, value, ("__defaults__", (i,))) for i, (name, value) in
                 enumerate(zip(f.__code__.co_varnames[argcount - len(defaults):argcount], defaults))]
        named += [(name, value, ("__kwdefaults__", (name,))) for name, value in (f.__kwdefaults__ or {}).items()]
        for name, value, steps in named:
            if type(value) in (list, dict) and _is_data(value) and not _under(name, constants):
                out.append((-1, f, f.__name__, steps))
    return out


def ident(source):
    param, root, key, attrs = source
    return (param, id(root), key if isinstance(root, dict) else None, attrs)


def _resolve(source, param_values, steps):
    """The object `steps` attributes down a source's root (all of them: len(attrs))."""
    return _path_objects(source, param_values, steps)[-1]


def _path_objects(source, param_values, steps):
    """The objects from a source's root to `steps` attributes down it, each one."""
    param, root, key, attrs = source
    if param >= 0:
        obj = param_values[param]
    elif isinstance(root, dict):
        obj = root[key]
    elif isinstance(root, types.CellType):
        obj = root.cell_contents
    else:
        obj = root
    out = [obj]
    for a in attrs[:steps]:
        out.append(out[-1][a[0]] if type(a) is tuple else getattr(out[-1], a))
    return out


def _containers(value, depth=0):
    """(container, a copy of its items) for the lists and dicts in `value`."""
    if type(value) not in (list, dict, tuple) or depth > 8:
        return []
    out = [] if type(value) is tuple else [(value, value.copy())]
    for v in (value.values() if type(value) is dict else value):
        if type(v) in (list, dict, tuple):  # (a list of thousands of numbers: no call per item, each trip)
            out.extend(_containers(v, depth + 1))
    return out


def _fill(container, items):
    """Gives a list or dict `items`' contents, keeping its identity."""
    if type(container) is list:
        container[:] = items
    else:
        container.clear()
        container.update(items)


def hold(values):
    """(container, a copy of its items) for the lists and dicts in `values`, for put_back: a
    trace that is undone may have changed them."""
    return [held for v in values for held in _containers(v)]


def put_back(held):
    for container, items in held:
        _fill(container, items)


def _held_objects(value, depth=0, seen=None):
    """(steps, object) for the user's objects in the lists, tuples and dicts of `value` (4 deep),
    steps the items that lead there from `value` (source steps: 1-tuples)."""
    seen = set() if seen is None else seen
    if type(value) not in (list, tuple, dict) or depth > 4 or id(value) in seen:
        return []
    seen.add(id(value))
    out = []
    for k, v in (value.items() if type(value) is dict else enumerate(value)):
        if type(v) in (list, tuple, dict):
            out.extend((((k,),) + steps, obj) for steps, obj in _held_objects(v, depth + 1, seen))
        elif _adoptable(v) and not isinstance(v, type) and type(getattr(v, "__dict__", None)) is dict and id(v) not in seen:
            seen.add(id(v))
            out.append((((k,),), v))
    return out


def _objects_inside(value):
    """(object, _attributes(object)) for _held_objects(value), whose changes the trace finds by
    comparing (changed_inside)."""
    return [(obj, _attributes(obj)) for _, obj in _held_objects(value)]


def compared(v):
    """How a value compares with what a place held before: a number or string by value, anything
    else by identity."""
    return v if type(v) in (int, float, bool, str, type(None)) else ("id", id(v))


def _own_vars(obj):
    """vars(obj), which a followed object's recording class would note as a use of its identity."""
    return object.__getattribute__(obj, "__dict__")


def _attributes(obj):
    """An object's attributes as _same_attribute compares them (arrays by contents too: a copy)."""
    return {name: (compared(v), v, v.copy() if isinstance(v, np.ndarray) else None)
            for name, v in _own_vars(obj).items()}


def _same_attribute(before, now):
    if before is _MISSING or now is _MISSING:
        return before is now
    key, value, contents = before
    if contents is not None:
        return now is value and np.array_equal(now, contents, equal_nan=now.dtype.kind in "fc")
    return key == compared(now)


def _class_data(cls):
    """A class's own data attributes, each as (_compared, its value)."""
    return {name: (compared(v), v) for name, v in list(vars(cls).items()) if not name.startswith("__") and _is_data(v)}


def _snapshot(value):
    """What a container holds, deeply, by identity: a trace's writes into it show as a change."""
    if type(value) in (list, tuple):
        return (type(value), tuple((id(v), _snapshot(v)) for v in value))
    if type(value) is dict:
        return (dict, tuple((k, id(v), _snapshot(v)) for k, v in value.items()))
    return None


class Capture:
    """One trace's reads and writes of sources. `sources` are those the dispatcher read for this
    call and `values` their traced forms (Tracers for arrays; _MISSING where absent)."""

    def __init__(self, fn, params, param_values, sources, values, constants):
        self.params = params
        self.param_values = param_values
        self.constants = constants
        self.traced = {ident(s): v for s, v in zip(sources, values) if v is not _MISSING}
        self.known = {ident(s) for s in sources}
        self.found = []  # new sources, in order
        self.paths = {}  # id(object) -> (its source path, the object)
        self.swapped = []  # (object, its class)
        self.written = {}  # source path ident -> (source, value before or _MISSING, the object written)
        self.patched = []  # (source, holder, key, value put there, value before)
        self.opened = []  # (object, its path, its attributes): objects followed through __dict__
        self.snapshots = []  # (source, traced container, snapshot)
        self.saved = []  # (container, its items): the real containers a dropped trace may write
        self.saved_arrays = []  # (array, a copy): sources found while tracing, which it may write as NumPy
        self.effects = None  # what restore found
        self.identity = []  # how the function uses the identity of an object it follows (by_type)
        self.methods = {}  # id -> the functions it reads as attributes of the objects it follows (their code may use id())
        self.fn = fn
        for s, v in zip(sources, values):
            if v is _MISSING:
                continue
            if s[3] == () and s[0] < 0:  # a global or a closure variable: the code reads it there
                self._put(s, s[1], s[2], v)
            if type(v) in (list, dict):
                self.snapshots.append((s, v, _snapshot(v)))
        roots = [((i, None, name, ()), v) for i, (name, v) in enumerate(zip(params, param_values))]
        self.inside = []  # (object, its attributes): objects in lists and dicts, which a trace does not follow
        for path, v in roots:  # lists and dicts the caller passes: the function gets copies
            if type(v) in (list, dict):
                self.snapshots.append((path, v, _snapshot(v)))
            self.inside.extend(_objects_inside(v))
        # a list or dict default the function changes (`history=[]`) would change once, as it
        # traces, not on each call: changes_defaults() says so, and undo puts it back
        code = getattr(fn, "__func__", fn)
        defaults = tuple(getattr(code, "__defaults__", None) or ()) + tuple((getattr(code, "__kwdefaults__", None)
                                                                            or {}).values())
        self.defaults = [(d, _snapshot(d)) for d in defaults if type(d) in (list, dict)]
        for d, _ in self.defaults:
            self.saved.extend(_containers(d))
        bound = getattr(fn, "__self__", None)
        if bound is not None and not isinstance(bound, types.ModuleType):
            roots.append(((-1, bound, "self", ()), bound))
        for f in _functions(fn):
            for name in sorted(_global_names(f.__code__)):
                v = f.__globals__.get(name)
                roots.append(((-1, f.__globals__, name, ()), v))
            for name, cell in zip(f.__code__.co_freevars, f.__closure__ or ()):
                try:
                    roots.append(((-1, cell, name, ()), cell.cell_contents))
                except ValueError:  # not yet assigned
                    pass
        for path, value in roots:
            if _adoptable(value):
                self._adopt(value, path)
            # objects in the lists, tuples and dicts it reads (SORT's trackers): through their items,
            # which each call reads again
            self._adopt_inside(value, path)
        for s, v in zip(sources, values):  # (`self.trackers`, found by an earlier trace)
            if v is not _MISSING:
                self.inside.extend(_objects_inside(v))
                self._adopt_inside(v, s)
        # the classes of the objects it follows, which it reads no attribute of: a change to
        # their data attributes would happen once, as it traces (changed_classes)
        classes = {id(k): k for _, c in self.swapped for k in c.__mro__  # (ByteTrack's BaseTrack._count)
                   if _user_class(k) and id(k) not in self.paths}
        self.classes = [(c, _class_data(c)) for c in classes.values()]

    # -- while tracing --

    def _put(self, source, holder, key, value):
        """The trace sees `value` (the source's traced form) where the code reads the source."""
        self.patched.append((source, holder, key, value, _slot(holder, key)))
        _set_slot(holder, key, value)

    def _adopt(self, obj, path):
        if id(obj) in self.paths or _under(source_name(path, self.params), self.constants):
            return
        self.paths[id(obj)] = (path, obj)
        cls = type(obj)
        if not isinstance(obj, type):
            try:  # object's own __setattr__: the class's may refuse (a frozen dataclass)
                object.__setattr__(obj, "__class__", _recording_class(cls))
                self.swapped.append((obj, cls))
                return
            except TypeError:
                pass
        # a class, or an object whose class Python cannot swap (types.SimpleNamespace): every
        # attribute of its own is read, and the trace sees the traced forms there
        attrs = vars(obj)
        self.opened.append((obj, path, dict(attrs)))
        for name, value in list(attrs.items()):
            if not name.startswith("__"):
                source = (path[0], path[1], path[2], path[3] + (name,))
                if ident(source) in self.traced:
                    self._put(source, obj if isinstance(obj, type) else attrs, name, self.traced[ident(source)])
                else:
                    self._found(source, value)

    def _adopt_inside(self, value, path):
        """Follows the objects `value`, read at `path`, holds in its containers."""
        param, root, key, attrs = path
        for steps, obj in _held_objects(value):
            self._adopt(obj, (param, root, key, attrs + steps))

    def _found(self, source, value, owner=None):
        """A value the trace read at `source`, as this call's walk did not: a new source (data, or
        anything else hashable an `owner` object holds but its bound methods, which its class
        gives), or an object to follow."""
        i = ident(source)
        if i in self.known or holds_traced([value]):
            return
        if _is_data(value):
            if not _under(source_name(source, self.params), self.constants):
                self._source(source)
                self.saved.extend(_containers(value))
                self.inside.extend(_objects_inside(value))
                self._adopt_inside(value, source)
                # not traced yet, the code writes it as NumPy does (`self.x[0] += self.x[1]`):
                # the walk again must find it as it was
                if isinstance(value, np.ndarray) and value.flags.writeable:
                    self.saved_arrays.append((value, value.copy()))
        elif _adoptable(value):
            if owner is not None and not _under(source_name(source, self.params), self.constants):
                self._source(source)  # which object it is (its class, for one kept by type)
            self._adopt(value, source)
        elif owner is not None and getattr(value, "__self__", None) is owner:
            self._method(getattr(value, "__func__", None))
        elif owner is not None:
            self._method(value)
            try:
                hash(value)
            except TypeError:
                return self.identity_of(owner, f"reads its {source[3][-1]}, an unhashable {type(value).__name__}")
            self._source(source)

    def _source(self, source):
        """A new source, after the objects on its path (keyed by type there: Walk::top), as the
        walk must tell objects of other classes apart."""
        param, root, key, attrs = source
        for k in range(len(attrs) + 1):
            s = (param, root, key, attrs[:k])
            if k == 0 and (param >= 0 or not isinstance(root, (dict, types.CellType))):
                continue  # a parameter (walked as one) or a fixed object (a bound method's)
            if ident(s) not in self.known:
                self.known.add(ident(s))
                self.found.append(s)

    def _method(self, f):
        if isinstance(f, types.FunctionType):
            self.methods[id(f)] = f

    def identity_of(self, obj, how):
        if id(obj) in self.paths:
            self.identity.append(f"{type(obj).__name__}: {how}")

    def _attribute(self, obj, name):
        """The source of obj.name where the trace follows obj, else None (dunders are the class's)."""
        found = self.paths.get(id(obj))
        if found is None or found[1] is not obj or name.startswith("__"):
            return None
        param, root, key, attrs = found[0]
        return (param, root, key, attrs + (name,))

    def missing(self, obj, name):
        """An attribute the trace found missing (hasattr): a source, as another object may have it."""
        source = self._attribute(obj, name)
        if source is None:
            return
        if ident(source) not in self.written:
            self._source(source)

    def read(self, obj, name, value):
        source = self._attribute(obj, name)
        if source is None:
            return value
        i = ident(source)
        if i in self.written:
            return value
        if i in self.traced:
            value = self.traced[i]
            if _adoptable(value):  # an object source (_source): followed as it was the first time
                self._adopt(value, source)
            return value
        self._found(source, value, obj)
        return value

    def wrote(self, obj, name):
        source = self._attribute(obj, name)
        if source is None:
            return
        i = ident(source)
        if i not in self.written:
            try:
                before = object.__getattribute__(obj, name)
            except AttributeError:
                before = _MISSING
            self.written[i] = (source, before, obj)

    def uses_identity(self, values):
        """Why the function uses the identity of an object it follows (by_type), or None: what the
        trace found (==, hash, __dict__), `id` in its code or its objects' methods, or such an
        object held in `values` (what it returns and writes, which each call gives as traced)."""
        if self.identity:
            return self.identity[0]
        # the methods it called, and those Python calls for operators on its objects (`len(self)`)
        methods = [self.fn] + list(self.methods.values()) + [
            v for klass in {k for _, cls in self.swapped for k in cls.__mro__[:-1]}
            for name, v in vars(klass).items() if name.startswith("__") and isinstance(v, types.FunctionType)]
        if any("id" in _global_names(f.__code__) for m in methods for f in _functions(m)):
            return "its code calls id()"
        held = {i: obj for i, (_, obj) in self.paths.items()}
        found = _holding(values, held, set(), 0)
        return None if found is None else f"{type(found).__name__}: the function returns or keeps it"

    def _read_containers(self):
        return [c for _, c, _ in self.snapshots] + [c for c, _ in self.saved]

    def changes_defaults(self):
        """Whether the trace changed a list or dict default of the function."""
        return any(_snapshot(d) != snap for d, snap in self.defaults)

    def changed_inside(self):
        """'Class.attribute' for each attribute the trace changed of an object in a list or dict
        that it does not replay: on an object it does not follow, or reached through a list or
        dict the trace changed (each call's replay would find another object there)."""
        changed = {id(c) for _, c, snap in self.snapshots if _snapshot(c) != snap}
        replayed = {(id(obj), name) for obj, _, _ in self.opened for name in _own_vars(obj)}  # (restore: all)
        for source, _, obj in self.written.values():
            try:
                held = _path_objects(source, self.param_values, len(source[3]) - 1)
            except (LookupError, AttributeError, TypeError):  # (its list emptied)
                continue
            if held[-1] is obj and not any(id(c) in changed for c in held):
                replayed.add((id(obj), source[3][-1]))
        return list(dict.fromkeys(
            f"{type(obj).__name__}.{name}" for obj, before in self.inside
            for name in sorted(before.keys() | _own_vars(obj).keys())
            if (id(obj), name) not in replayed
            and not _same_attribute(before.get(name, _MISSING), _own_vars(obj).get(name, _MISSING))))

    def slots_now(self):
        """What each global, closure variable and class attribute the trace patched holds now
        (by identity), for changed_slot."""
        return {id(entry): id(_slot(entry[1], entry[2])) for entry in self.patched}

    def changed_slot(self, before):
        """The name of a global, closure variable or class attribute the trace patched that the
        code changed since slots_now() gave `before` (SORT's `KalmanBoxTracker.count += 1`), else
        None."""
        for entry in self.patched:
            holder, key, put = entry[1:4]
            now = _slot(holder, key)
            if (id(now) != before[id(entry)]) if id(entry) in before else now is not put:
                return f"{holder.__name__}.{key}" if isinstance(holder, type) else repr(key)
        return None

    def changed_classes(self):
        """'Class.attribute' for each data attribute of a class the trace changed."""
        return [f"{c.__name__}.{name}" for c, before in self.classes
                for name in sorted(before.keys() | _class_data(c).keys()) if before.get(name) != _class_data(c).get(name)]

    def holds(self, container):
        """Whether the trace read `container` from outside the function (an argument, a global)."""
        return any(c is container for c in self._read_containers())

    def contents(self):
        """What the containers the trace has read hold now, by id (a region compares them)."""
        return {id(c): _snapshot(c) for c in self._read_containers()}

    def hold(self):
        """The containers' items now, for put_back."""
        return hold(self._read_containers())

    # -- after tracing --

    def restore(self):
        """Gives back the objects' classes, and the globals and closure variables the trace saw as
        traced values; returns the writes to replay: (kind, source, value) each (once: again, the
        same list)."""
        if self.effects is not None:
            return self.effects
        for obj, cls in self.swapped:
            object.__setattr__(obj, "__class__", cls)
        effects = []
        for source, holder, key, put, before in reversed(self.patched):
            now = _slot(holder, key)
            _set_slot(holder, key, before)
            if now is not put:
                effects.append(("set", source, now))
        for obj, (param, root, key, attrs), names in self.opened:
            for name in vars(obj).keys() - names:
                self.written.setdefault(ident((param, root, key, attrs + (name,))),
                                        ((param, root, key, attrs + (name,)), _MISSING, obj))
        for source, container, snap in self.snapshots:
            if _snapshot(container) != snap:
                effects.append(("fill", source, container))
        for source, _, obj in self.written.values():  # (the path may lead elsewhere now)
            effects.append(("set", source, getattr(obj, source[3][-1])))
        self.effects = effects
        return effects

    def undo(self):
        """Puts back what the trace wrote on objects (the trace is dropped: its Tracers must not
        stay there)."""
        for container, items in self.saved:
            _fill(container, items)
        for array, contents in self.saved_arrays:
            np.copyto(array, contents)
        for c, before in self.classes:
            for name, (_, value) in before.items():
                setattr(c, name, value)
            for name in _class_data(c).keys() - before.keys():
                delattr(c, name)
        for obj, before in self.inside:
            for name in vars(obj).keys() - before.keys():
                delattr(obj, name)
            for name, (_, value, contents) in before.items():
                if isinstance(value, np.ndarray) and contents is not None and value.flags.writeable:
                    np.copyto(value, contents)
                if vars(obj).get(name, _MISSING) is not value:
                    setattr(obj, name, value)
        for obj, _, before in self.opened:  # (a dropped walk may have written them as plain values)
            for name in list(vars(obj)):
                if not name.startswith("__") and name not in before:
                    delattr(obj, name)
            for name, value in before.items():
                if not name.startswith("__") and vars(obj).get(name, _MISSING) is not value:
                    setattr(obj, name, value)
        for source, before, obj in self.written.values():
            if before is _MISSING:
                try:
                    delattr(obj, source[3][-1])
                except AttributeError:
                    pass
            else:
                setattr(obj, source[3][-1], before)


def _holding(value, held, seen, depth):
    """The first object of `held` (by id) that `value` is or holds (in containers and objects'
    attributes, 4 deep), or None."""
    if id(value) in held:
        return held[id(value)]
    if depth > 4 or id(value) in seen or type(value).__module__.startswith(("strider", "numpy")):
        return None  # (a Choice refuses every use)
    seen.add(id(value))
    if type(value) is dict:
        items = list(value.keys()) + list(value.values())
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = value
    elif type(getattr(value, "__dict__", None)) is dict and not isinstance(value, (type, types.ModuleType)):
        items = list(vars(value).values())
    else:
        return None
    for v in items:
        found = _holding(v, held, seen, depth + 1)
        if found is not None:
            return found
    return None


def replay(effects, signature, passed=()):
    """post(result, args, kwargs) for the Runner: applies each call's writes and prints (their
    values computed by that call, in `result`'s second item where there are any; parameters as
    the call binds them) and returns the function's own result, with the caller's own lists and dicts at
    the `passed` (path, parameter index) (_api._returned_containers)."""
    def post(result, args, kwargs):
        value, written = result if effects else (result, ())
        param_values = None
        if passed or any(source[0] >= 0 for _, source in effects):
            bound = signature.bind(*args, **(kwargs or {}))
            param_values = [bound.arguments.get(name, _MISSING) for name in signature.parameters]
        for (kind, source), v in zip(effects, written):
            if kind == "print":  # (a logger's method, or print, and its keywords in the source's place)
                fn, kwargs = source[1]
                if fn is not None:
                    fn(*v, **kwargs)
                else:  # (the standard streams by name)
                    print(*v, **(dict(kwargs, file=getattr(sys, kwargs["file"])) if type(kwargs.get("file")) is str
                                 else kwargs))
                continue
            param, root, key, attrs = source
            if kind == "set" and not attrs:
                if isinstance(root, dict):
                    root[key] = v
                else:
                    root.cell_contents = v
                continue
            target = _resolve(source, param_values, len(attrs) - 1 if kind == "set" else len(attrs))
            if kind == "set":
                setattr(target, attrs[-1], v)
            else:
                _fill(target, v)
        for path, param in passed:
            value = _put_at(value, path, param_values[param])
        return value
    return post


def _put_at(value, path, obj):
    """value with obj at path (indices into tuples and lists)."""
    if not path:
        return obj
    items = list(value)
    items[path[0]] = _put_at(items[path[0]], path[1:], obj)
    return items if type(value) is list else tuple(items)
