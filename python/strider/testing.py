"""Differential checks against NumPy: the comparison strider's tests and demo use, for users too.

    expected = fn(*np_args); got = compiled(*st_args)
    compare_calls(expected, got, np_args, st_args, rtol=1e-6)

compares results (values, dtypes, shapes, kinds: array, NumPy scalar or Python object), every
argument after the call, and memory sharing of results with arguments and among results.
"""
import copy

import numpy as np


class Mismatch(AssertionError):
    """strider and NumPy disagree."""


def leaves(tree):
    """The non-container leaves of nested tuples, lists and dicts, in their order (a dict's keys
    in insertion order, which a function that iterates it sees)."""
    if isinstance(tree, (tuple, list)):
        return [x for t in tree for x in leaves(t)]
    if isinstance(tree, dict):
        return leaves(list(tree.values()))
    return [tree]


def structure(tree):
    """The nesting of tuples, lists and dicts in a tree, their types and lengths, a dict's keys
    in order (the leaves as '.')."""
    if isinstance(tree, (tuple, list)):
        return (type(tree).__name__,) + tuple(structure(t) for t in tree)
    if isinstance(tree, dict):
        return ("dict",) + tuple((k, structure(v)) for k, v in tree.items())
    return "."


def _root(a):
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def clone_args(tree, _roots=None):
    """Deep copy of arguments that keeps their aliasing (views of one array stay views of one copy),
    their read-only flags and their misalignment."""
    roots = {} if _roots is None else _roots
    if isinstance(tree, (tuple, list)):
        items = [clone_args(t, roots) for t in tree]
        return type(tree)._make(items) if hasattr(type(tree), "_make") else type(tree)(items)
    if isinstance(tree, dict):
        return {k: clone_args(v, roots) for k, v in tree.items()}
    if not isinstance(tree, np.ndarray):
        return copy.deepcopy(tree)
    root = _root(tree)
    if not root.flags.c_contiguous:
        return _same_flags(tree.copy(order="K"), tree)
    if id(root) not in roots:
        roots[id(root)] = (root, root.copy() if root.flags.aligned else _misaligned_copy(root))
    new_root = roots[id(root)][1]
    if tree is root:
        # a copy of its own: the root's copy stays writeable for the views cloned from it
        return _same_flags(new_root.view(), tree) if not tree.flags.writeable else new_root
    offset = tree.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    view = np.ndarray(tree.shape, tree.dtype, buffer=new_root, offset=offset, strides=tree.strides)
    return _same_flags(view, tree)


def _misaligned_copy(a):
    """A copy of an unaligned (C-contiguous) array that is unaligned too: one byte into a buffer."""
    clone = np.frombuffer(bytearray(a.nbytes + 1), a.dtype, count=a.size, offset=1).reshape(a.shape)
    clone[...] = a
    return clone


def _same_flags(clone, tree):
    """A read-only argument stays read-only in its clone (writing into it must fail there too)."""
    clone.flags.writeable = tree.flags.writeable
    return clone


def _kind(x):
    if isinstance(x, np.ndarray):
        return "ndarray"
    if isinstance(x, np.generic):
        return "scalar"
    return type(x).__name__


def compare(expected, got, rtol=0.0, atol=0.0, what="result"):
    """Max abs error between two leaves; raises Mismatch when kinds, dtypes, shapes or values
    (beyond rtol/atol; exact when both are 0, -0.0 and 0.0 then told apart; NaNs equal NaNs)
    differ."""
    if _kind(expected) != _kind(got):
        raise Mismatch(f"{what}: kind {_kind(got)} != NumPy's {_kind(expected)}")
    if not isinstance(expected, (np.ndarray, np.generic)):
        if type(expected) is float and (rtol or atol):  # (float(x.mean()): the tolerance of its sum)
            err = abs(got - expected)
            if not (err <= atol + rtol * abs(expected) or (expected != expected and got != got)):
                raise Mismatch(f"{what}: {got!r} != NumPy's {expected!r} (rtol={rtol}, atol={atol})")
            return err if err == err else 0.0
        if not (expected == got or (expected != expected and got != got)):
            raise Mismatch(f"{what}: {got!r} != NumPy's {expected!r}")
        return 0.0
    if got.dtype != expected.dtype:
        raise Mismatch(f"{what}: dtype {got.dtype} != NumPy's {expected.dtype}")
    if np.shape(got) != np.shape(expected):
        raise Mismatch(f"{what}: shape {np.shape(got)} != NumPy's {np.shape(expected)}")
    e, g = np.asarray(expected), np.asarray(got)
    if e.size == 0:
        return 0.0
    if e.dtype.kind != "f":
        bad = e != g
        err = float(np.max(np.abs(g.astype(np.float64) - e.astype(np.float64)))) if bad.any() else 0.0
    else:
        with np.errstate(all="ignore"):
            diff = np.abs(g.astype(np.float64) - e.astype(np.float64))
            diff = np.where((np.isnan(e) & np.isnan(g)) | (e == g), 0.0, diff)
            bad = ~((diff == 0) | (diff <= atol + rtol * np.abs(e.astype(np.float64))))
            if rtol == 0 and atol == 0:  # the sign of a zero is NumPy's answer too
                bad = bad | ((e == 0) & (g == 0) & (np.signbit(e) != np.signbit(g)))
        err = float(np.max(diff))
    if np.any(bad):
        first = np.argwhere(bad)[0] if e.ndim else ()
        raise Mismatch(f"{what}: {int(np.count_nonzero(bad))} of {e.size} elements differ (max abs error "
                       f"{err:.3g}, rtol={rtol}, atol={atol}); first at {tuple(first)}: "
                       f"{g[tuple(first)]!r} != NumPy's {e[tuple(first)]!r}")
    return err


def compare_calls(expected, got, np_args, st_args, rtol=0.0, atol=0.0):
    """Compares one call made in NumPy and through strider on clones of the same arguments;
    returns the max abs error, raises Mismatch."""
    exp_leaves, got_leaves = leaves(expected), leaves(got)
    if structure(expected) != structure(got):
        raise Mismatch(f"containers {structure(got)} != NumPy's {structure(expected)}")
    if len(exp_leaves) != len(got_leaves):
        raise Mismatch(f"{len(got_leaves)} results, NumPy returns {len(exp_leaves)}")
    err = 0.0
    for i, (e, g) in enumerate(zip(exp_leaves, got_leaves)):
        err = max(err, compare(e, g, rtol, atol, f"result {i}"))
    np_arg_leaves, st_arg_leaves = leaves(np_args), leaves(st_args)
    for i, (e, g) in enumerate(zip(np_arg_leaves, st_arg_leaves)):
        if isinstance(e, np.ndarray):
            err = max(err, compare(e, g, rtol, atol, f"argument {i} after the call"))
    for i, (e, g) in enumerate(zip(exp_leaves, got_leaves)):
        if not isinstance(e, np.ndarray):
            continue
        for j, (ea, ga) in enumerate(zip(np_arg_leaves, st_arg_leaves)):
            if isinstance(ea, np.ndarray):
                if (e is ea) != (g is ga):
                    raise Mismatch(f"result {i} is argument {j}: NumPy says {e is ea}")
                if np.shares_memory(e, ea) != np.shares_memory(g, ga):
                    raise Mismatch(f"result {i} shares memory with argument {j}: NumPy says "
                                   f"{np.shares_memory(e, ea)}")
        for j in range(i):
            if isinstance(exp_leaves[j], np.ndarray):
                if np.shares_memory(e, exp_leaves[j]) != np.shares_memory(g, got_leaves[j]):
                    raise Mismatch(f"results {j} and {i} share memory: NumPy says "
                                   f"{np.shares_memory(e, exp_leaves[j])}")
    return err
