"""Static arguments that are not hashable (lists, ndarrays, and lists and tuples of them), kept by
value: the dispatcher compares their Frozen forms, and a trace gets a copy, so a caller that
changes the original later makes a new signature, never a stale answer."""
import numpy as np


class Frozen:
    __slots__ = ("_key", "_copy")

    def __init__(self, value):
        self._key = _key(value)
        self._copy = _copy(value)

    def __eq__(self, other):
        return type(other) is Frozen and self._key == other._key

    def __hash__(self):
        return hash(self._key)

    def thaw(self):
        """A copy of the value, for one trace."""
        return _copy(self._copy)


def _key(value):
    if isinstance(value, np.ndarray):
        return (type(value), value.dtype.str, value.shape, value.tobytes())
    if type(value) in (list, tuple):
        return (type(value), tuple(_key(v) for v in value))
    hash(value)  # TypeError: nothing to keep it by
    return (type(value), value)


def _copy(value):
    if isinstance(value, np.ndarray):
        return value.copy()
    if type(value) in (list, tuple):
        return type(value)(_copy(v) for v in value)
    return value


class Identity:
    """An argument object that is not hashable (a @dataclass config object), kept in a signature
    by identity, as a plain object's default hash and == keep it: what the function reads from it
    is read on every call (_capture.py's sources), so a change to it makes a new signature."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return type(other) is Identity and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)


class Plain:
    """The first item of the tag (Plain, class, k) that keys an argument or source object by its
    class and by which earlier such object of the call it is (k), not by its identity
    (_capture.by_type says which objects; csrc/python/call_signature.cc's Walk::add_plain)."""
