"""The public API: decorator forms, wrapping, static arguments, runtime scalars, the cache
counters of `stats()`, and what `explain()` reports (IR, storages, dependency tables, edges and
the user's source lines).
"""
import dataclasses
import functools
import inspect
import os
import re
import sys

import numpy as np
import pytest

import strider
from differential import check


def arr(shape=(6,), dtype=np.int64, seed=0):
    return np.random.default_rng(seed).integers(-3, 4, shape).astype(dtype)


def same(got, expected):
    """Equal values, dtype and shape (exact: the data are small integers)."""
    assert isinstance(got, np.ndarray) == isinstance(expected, np.ndarray)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected, strict=True)


def counters(compiled):
    s = compiled.stats()
    return s["traces"], s["cache_hits"]


# --- decorator forms and wrapping ----------------------------------------------------------------


def axpy(a, x, y):
    """Returns a * x + y."""
    return a * x + y


def test_bare_decorator():
    @strider.compile
    def f(x, y):
        return x * 2 + y

    x, y = arr(), arr(seed=1)
    same(f(x, y), x * 2 + y)


def test_decorator_with_empty_call():
    @strider.compile()
    def f(x, y):
        return x - y

    x, y = arr(), arr(seed=1)
    same(f(x, y), x - y)


def test_decorator_with_options():
    @strider.compile(target="cpu", static_argnames=("n",), cache=True)
    def f(x, n):
        return x[:n] * 2

    x = arr()
    same(f(x, 3), x[:3] * 2)
    same(f(x, n=4), x[:4] * 2)


def test_function_call_form():
    f = strider.compile(axpy)
    g = strider.compile(axpy, target="cpu")
    x, y = arr(dtype=np.float64), arr(dtype=np.float64, seed=1)
    same(f(2.0, x, y), 2.0 * x + y)
    same(g(3, x, y), 3 * x + y)
    # compiling does not change the Python function
    assert axpy(1, 2, 3) == 5


def test_compiled_function_methods():
    f = strider.compile(axpy)
    assert callable(f)
    assert callable(f.explain)
    assert callable(f.stats)


def test_wraps_name_and_doc():
    f = strider.compile(axpy)
    assert f.__name__ == "axpy"
    assert f.__qualname__ == axpy.__qualname__
    assert f.__doc__ == "Returns a * x + y."
    assert f.__module__ == axpy.__module__

    @strider.compile(static_argnames=("n",))
    def local(x, n):
        """Local doc."""
        return x[:n]

    assert local.__name__ == "local"
    assert local.__doc__ == "Local doc."
    assert "test_wraps_name_and_doc" in local.__qualname__


def test_compile_twice_gives_independent_functions():
    f, g = strider.compile(axpy), strider.compile(axpy)
    x, y = arr(), arr(seed=1)
    f(2, x, y)
    assert counters(f)[0] == 1
    assert counters(g) == (0, 0)


# --- static arguments and runtime scalars --------------------------------------------------------


def test_static_argnames_are_in_the_cache_key():
    @strider.compile(static_argnames=("n",))
    def f(x, n):
        return x[:n] + np.zeros(n, dtype=x.dtype)

    x = arr()
    same(f(x, 2), x[:2])
    assert counters(f) == (1, 0)
    same(f(arr(seed=5), 2), arr(seed=5)[:2])
    assert counters(f) == (1, 1)
    same(f(x, 3), x[:3])  # a new static value: a new trace
    assert counters(f)[0] == 2
    same(f(x, 2), x[:2])  # the first one is still cached
    assert counters(f) == (2, 2)


def test_static_non_int_values():
    @strider.compile(static_argnames=("mode",))
    def f(x, y, mode):
        if mode == "add":  # Python control flow on a static value is fine
            return x + y
        return x * y

    x, y = arr(), arr(seed=1)
    same(f(x, y, "add"), x + y)
    same(f(x, y, "mul"), x * y)
    assert counters(f)[0] == 2
    same(f(x, y, mode="add"), x + y)
    same(f(x, y, "add"), x + y)
    assert counters(f)[0] <= 3  # a keyword spelling may or may not share the entry


def test_static_value_changes_shapes_of_results():
    @strider.compile(static_argnames=("shape",))
    def f(x, shape):
        return x.reshape(shape)

    x = arr((6,))
    for shape in [(2, 3), (3, 2), (6, 1), (2, 3)]:
        got = f(x, shape)
        same(got, x.reshape(shape))
        assert np.shares_memory(got, x)
    assert counters(f) == (3, 1)


def test_unhashable_static_values_are_kept_by_value():
    # an anchors table or a list of strides as a static argument: equal values share a trace, and
    # a caller that changes the original in place gets a new one, never the first call's values
    @strider.compile(static_argnames=("strides", "table"))
    def f(x, strides, table):
        assert isinstance(strides, list) and isinstance(table, np.ndarray)
        return x[:3] / strides + table

    x = arr((4,))
    strides, table = [8.0, 16.0, 32.0], np.array([1.0, 2.0, 3.0], np.float32)
    same(f(x, strides, table), x[:3] / strides + table)
    same(f(x, list(strides), table.copy()), x[:3] / strides + table)
    assert counters(f) == (1, 1)
    strides[0] = 4.0
    table[2] = -1.0
    same(f(x, strides, table), x[:3] / strides + table)
    assert counters(f) == (2, 1)
    same(f(x, strides, table.astype(np.float64)), x[:3] / strides + table.astype(np.float64))  # dtype is part of it
    assert counters(f) == (3, 1)
    with pytest.raises(strider.UnsupportedError, match="static argument 'strides' of type set"):
        f(x, {8.0}, table)


def test_runtime_scalars_do_not_retrace():
    @strider.compile
    def f(x, s, t):
        return x * s + t

    x = arr(dtype=np.float32)
    same(f(x, 2, 0.5), x * 2 + 0.5)
    assert counters(f) == (1, 0)
    same(f(x, 3, 1.5), x * 3 + 1.5)  # new values, same trace
    assert counters(f) == (1, 1)
    same(f(x, -7, -0.25), x * -7 + -0.25)
    assert counters(f) == (1, 2)


def test_runtime_scalar_used_in_a_write():
    @strider.compile
    def f(x, v):
        x[::2] = v
        x[1::2] += v

    x = arr()
    f(x, 5)
    expected = arr()
    expected[::2] = 5
    expected[1::2] += 5
    same(x, expected)
    y = arr(seed=2)
    f(y, -1)
    expected = arr(seed=2)
    expected[::2] = -1
    expected[1::2] += -1
    same(y, expected)
    assert counters(f) == (1, 1)


def test_runtime_scalar_type_change_is_still_correct():
    @strider.compile
    def f(x, s):
        return x * s

    x = arr(dtype=np.int32)
    same(f(x, 2), x * 2)
    same(f(x, 2.5), x * 2.5)  # float64 result now: whatever the cache does, the value is NumPy's
    same(f(x, True), x * True)


def _scalar_ops(x, n, m):
    return ((n < 3) & True, True & (n < 3), (n < 3) & np.True_, n == m, n / m, n // m, n % m, n ** 2,
            n + 0.5, n * True, -n, abs(n), x + (n == 0))


def _int_ops(x, n, m):
    return n & 1, n | m, n ^ True, (n == m) & (m > 0)


@pytest.mark.parametrize("fn, n, m", [(_scalar_ops, 2, 3), (_scalar_ops, 2.5, 3), (_scalar_ops, 7, 2.0),
                                      (_int_ops, 2, 3), (_int_ops, 7, -2)])
def test_runtime_python_scalars_among_themselves_compute_as_python(fn, n, m):
    # only Python scalars in an operation: NumPy converts each to its default dtype (a comparison
    # once resolved to the object loop) and Python gets a Python scalar back
    check(fn, arr(), n, m)


# --- stats(): what enters the cache key ------------------------------------------------------------


def test_stats_first_call_then_hits():
    @strider.compile
    def f(x, y):
        return x + y

    s = f.stats()
    assert {"traces", "cache_hits", "compiles"} <= set(s)
    assert counters(f) == (0, 0)
    x, y = arr(), arr(seed=1)
    same(f(x, y), x + y)
    s = f.stats()
    assert (s["traces"], s["cache_hits"]) == (1, 0)
    assert 0 <= s["compiles"] <= 1
    x2, y2 = arr(seed=2), arr(seed=3)
    same(f(x2, y2), x2 + y2)  # same signature, new data
    assert counters(f) == (1, 1)
    same(f(x, y), x + y)
    assert counters(f) == (1, 2)
    assert f.stats()["compiles"] <= f.stats()["traces"]


def test_stats_signature_parts_retrace():
    @strider.compile(dynamic=False)  # (a count of rows its own signature: run_time_rows tests the default)
    def f(x, y):
        return x * 2 - y

    def call(x, y):
        same(f(x, y), x * 2 - y)

    base = arr((4, 6))
    other = arr((4, 6), seed=1)
    call(base, other)
    assert counters(f) == (1, 0)
    # shape
    call(arr((3, 6)), arr((3, 6), seed=1))
    assert counters(f) == (2, 0)
    # dtype
    call(base.astype(np.float64), other.astype(np.float64))
    assert counters(f) == (3, 0)
    # strides: same shape (4, 3) and dtype, contiguous vs every other column
    call(arr((4, 3), seed=2), arr((4, 3), seed=3))
    t = counters(f)[0]
    call(arr((4, 6), seed=4)[:, ::2], arr((4, 6), seed=5)[:, 1::2])
    assert counters(f)[0] == t + 1
    # aliasing: the same two shapes and strides, but one array passed twice
    x = arr((4, 6), seed=5)
    call(x, x)
    assert counters(f)[0] == t + 2
    call(arr((4, 6), seed=6).copy(), arr((4, 6), seed=7))  # back to distinct arrays: a hit
    assert counters(f)[0] == t + 2
    hits = counters(f)[1]
    x = arr((4, 6), seed=8)
    call(x, x)  # aliasing again: a hit
    assert counters(f) == (t + 2, hits + 1)


def test_stats_overlapping_views_retrace():
    @strider.compile
    def f(x, y):
        x += y
        return x

    a, b = arr((4,)), arr((4,), seed=1)
    same(f(a, b), arr((4,)) + b)
    assert counters(f) == (1, 0)
    # same shapes, strides and dtype, but the arguments overlap: x = buf[1:5], y = buf[0:4]
    buf = arr((5,), seed=2)
    expected = buf.copy()
    ex = expected[1:5]
    ex += expected[0:4]
    got = f(buf[1:5], buf[0:4])
    same(buf, expected)
    same(got, expected[1:5])
    assert np.shares_memory(got, buf)
    assert counters(f)[0] == 2


# --- explain() -----------------------------------------------------------------------------------


def line_of(fn, mark):
    lines, first = inspect.getsourcelines(fn)
    hits = [(first + i, text.strip()) for i, text in enumerate(lines) if mark in text]
    assert len(hits) == 1
    return hits[0]


def shows_line(text, fn, mark):
    """explain() shows the user's line: as file:line (file possibly quoted) or as its source."""
    line, source = line_of(fn, mark)
    name = re.escape(os.path.basename(inspect.getsourcefile(fn)))
    code = source.split("#")[0].strip()
    return bool(re.search(name + r'"?:' + str(line) + r"(?!\d)", text)) or code in text


def kinds_between(edges):
    out = {}
    for src, dst, kind in edges:
        assert kind in ("RAW", "WAR", "WAW", "RAR"), kind
        assert src < dst, "edges go from an earlier op to a later one"
        out.setdefault((src, dst), set()).add(kind)
    return out


def shift(x):
    x[1:] = x[:-1] + 1  # mark: shift


def test_explain_object():
    f = strider.compile(shift)
    x = arr()
    ex = f.explain(x)
    assert isinstance(ex.ir, str) and ex.ir.strip()
    assert isinstance(ex.edges, list)
    for e in ex.edges:
        assert isinstance(e, tuple) and len(e) == 3
        assert isinstance(e[0], int) and isinstance(e[1], int) and isinstance(e[2], str)
    text = str(ex)
    assert ex.ir in text
    # edges are printed with their kinds
    for _, _, kind in ex.edges:
        assert kind in text


def test_explain_shift_has_raw_and_war_between_add_and_store():
    ex = strider.compile(shift).explain(arr())
    pairs = kinds_between(ex.edges)
    assert any({"RAW", "WAR"} <= kinds for kinds in pairs.values()), ex.edges
    assert shows_line(str(ex), shift, "mark: shift")


def test_explain_ir_shows_view_metadata():
    def f(x):
        x[:, 1::2] = x[:, 0::2] * 2

    ir = strider.compile(f).explain(arr((4, 6))).ir
    # the two views of x's storage: shape [4,3], strides {6,2} (elements), offsets 1 and 0
    assert re.search(r"\[4,\s*3\]\s*\{6,\s*2\}\s*\+\s*1(?!\d)", ir), ir
    assert re.search(r"\[4,\s*3\]\s*\{6,\s*2\}\s*\+\s*0(?!\d)", ir), ir
    assert "multiply" in ir and "copy" in ir


def test_explain_lists_storages_and_their_dependency_tables():
    def f(x, y):
        t = x + y
        x[::2] = t[::2]
        return t

    ex = strider.compile(f).explain(arr(), arr(seed=1))
    text = str(ex)
    storages = re.findall(r"(%s\d+)\s*=\s*storage", ex.ir)
    assert len(storages) >= 3, ex.ir  # x, y and the temporary t
    rest = text.replace(ex.ir, "")
    for s in storages:
        assert re.search(re.escape(s) + r"(?!\d)", rest), f"no dependency table for {s}:\n{text}"
    lowered = rest.lower()
    assert "read" in lowered and "write" in lowered


def test_explain_disjoint_strided_writes_are_not_ordered():
    def f(x, y, z):
        x[:, 0::2] = y
        x[:, 1::2] = z

    args = arr((3, 4)), arr((3, 2), seed=1), arr((3, 2), seed=2)
    ex = strider.compile(f).explain(*args)
    ordering = [e for e in ex.edges if e[2] != "RAR"]
    assert ordering == [], f"x[:, 0::2] and x[:, 1::2] never overlap: {ex.edges}"

    def g(x, y, z):
        x[:, 0::2] = y
        x[:, ::3] = z  # shares column 0 with the first write

    ex = strider.compile(g).explain(arr((3, 6)), arr((3, 3), seed=1), arr((3, 2), seed=2))
    assert [e[2] for e in ex.edges if e[2] != "RAR"] == ["WAW"], ex.edges


def test_explain_read_of_odd_columns_then_write_of_even_columns():
    def f(x, y):
        t = x[:, 1::2] * 2
        x[:, 0::2] = y
        return t

    ex = strider.compile(f).explain(arr((3, 4)), arr((3, 2), seed=1))
    assert not [e for e in ex.edges if e[2] == "WAR"], ex.edges

    def g(x, y):
        t = x[:, 1::2] * 2
        x[:, 1::2] = y
        return t

    ex = strider.compile(g).explain(arr((3, 4)), arr((3, 2), seed=1))
    assert "WAR" in {e[2] for e in ex.edges}, ex.edges


def test_explain_two_reads_of_one_producer_get_rar():
    # an exp is stored for its two readers (a cheap producer would be recomputed in each, and
    # the explained program would have no shared producer left)
    def f(x):
        t = np.exp(x)  # mark: producer
        a = t * 2  # mark: reader a
        b = t - 3  # mark: reader b
        return a, b

    ex = strider.compile(f).explain(arr())
    pairs = kinds_between(ex.edges)
    rar = [p for p, kinds in pairs.items() if "RAR" in kinds]
    assert rar, ex.edges
    # the two readers share a producer: RAW from one op into both ends of the RAR hint
    raw_into = {}
    for (src, dst), kinds in pairs.items():
        if "RAW" in kinds:
            raw_into.setdefault(dst, set()).add(src)
    assert any(raw_into.get(a, set()) & raw_into.get(b, set()) for a, b in rar), ex.edges
    text = str(ex)
    for mark in ("mark: producer", "mark: reader a", "mark: reader b"):
        assert shows_line(text, f, mark), f"{mark} not shown:\n{text}"


def test_explain_overlapping_writes_get_waw():
    def f(x, y, z):
        x[1:] = y  # mark: first write
        x[:-1] = z  # mark: second write

    ex = strider.compile(f).explain(arr(), arr((5,), seed=1), arr((5,), seed=2))
    pairs = kinds_between(ex.edges)
    assert any("WAW" in kinds for kinds in pairs.values()), ex.edges
    text = str(ex)
    assert shows_line(text, f, "mark: first write")
    assert shows_line(text, f, "mark: second write")


def test_explain_with_static_arguments_and_no_side_effects():
    @strider.compile(static_argnames=("n",))
    def f(x, n):
        x[:n] += 1
        return x

    x = arr()
    before = x.copy()
    ex = f.explain(x, n=3)
    assert ex.ir.strip()
    same(x, before)  # explaining traces, it does not run the function


def test_explain_shows_stages_and_why_ops_were_not_fused():
    def f(boxes, deltas):
        px = (boxes[:, 0] + boxes[:, 2]) * 0.5
        deltas[:, 0::4] = px[:, None] + deltas[:, 0::4]
        np.clip(deltas[:, 0::2], 0, 100, out=deltas[:, 0::2])
        return deltas

    e = strider.compile(f).explain(np.ones((5, 4), np.float32), np.ones((5, 4), np.float32))
    assert [s["domain"] for s in e.stages] == [[5], [5, 2]]
    assert e.stages[0]["registers"], "the temporaries of the fused computation live in registers"
    assert len(e.rejections) == 1 and "loop domain [5,2] differs" in e.rejections[0]
    assert "== stages" in str(e) and "not fused: " in str(e)


def test_fast_dispatch_never_confuses_a_container_with_a_plain_array():
    def f(a, b):
        return (a[0] if isinstance(a, tuple) else a) + b

    compiled = strider.compile(f)
    x, y = np.arange(3.0), np.ones(3)
    np.testing.assert_array_equal(compiled((x,), y), x + y)
    np.testing.assert_array_equal(compiled(x, y), x + y)
    np.testing.assert_array_equal(compiled((x,), y), x + y)
    assert compiled.stats()["traces"] == 2


def test_fast_dispatch_counts_hits_and_keeps_aliasing_apart():
    def f(a, b):
        a[1:] += b[:-1]
        return a

    compiled = strider.compile(f)
    base = np.arange(6.0)
    for _ in range(3):
        compiled(np.arange(6.0), np.arange(6.0))
    expected = base.copy()
    expected[1:] += expected[:-1].copy()
    aliased = base.copy()
    np.testing.assert_array_equal(compiled(aliased, aliased), expected)
    stats = compiled.stats()
    assert stats["traces"] == 2 and stats["cache_hits"] == 2


def _no_general_path(compiled):
    """Calls of compiled may no longer trace (the one way a call enters Python)."""
    def refuse(*args, **kwargs):
        raise AssertionError("the call traced")
    compiled._trace = refuse


def test_fast_dispatch_takes_tuples_keywords_and_statics():
    def flip(boxes, img_shape, direction="horizontal", scale=1.0):
        h, w = img_shape
        out = boxes.copy()
        if direction == "horizontal":
            out[:, 0] = w - boxes[:, 2]
        else:
            out[:, 1] = h - boxes[:, 3]
        return out * scale

    compiled = strider.compile(flip, static_argnames=("direction",))
    boxes = np.arange(12.0).reshape(3, 4)
    calls = [((boxes, (800, 1333)), {}), ((boxes, (800, 1333), "vertical"), {}),
             ((boxes, (800, 1333)), {"direction": "vertical", "scale": 2.0}),
             ((boxes, (800, 1333)), {"scale": 3.0})]
    for args, kwargs in calls:
        compiled(*args, **kwargs)
    traces = compiled.stats()["traces"]
    _no_general_path(compiled)
    for args, kwargs in calls:  # new runtime values in the tuple and the keyword: no retrace
        args = (args[0], (600, 1000)) + args[2:]
        kwargs = {k: (v * 2 if k == "scale" else v) for k, v in kwargs.items()}
        np.testing.assert_array_equal(compiled(*args, **kwargs), flip(*args, **kwargs))
    assert compiled.stats()["traces"] == traces


def fields_in_order(fields):
    # TF object detection's BoxList walks its dict of fields: their order is the caller's
    return np.concatenate(list(fields.values())), [k for k in fields], {k: v * 2 for k, v in fields.items()}


def test_a_dict_argument_keeps_its_order():
    """Iterating a dict argument sees its insertion order, as NumPy's run does; the same keys in
    another order are another signature, and keys that do not compare (str and int) are keys."""
    compiled = check(fields_in_order, {"scores": np.zeros(2), "boxes": np.ones(2)})
    check(fields_in_order, {"boxes": np.ones(2), "scores": np.zeros(2)})
    out = compiled({"boxes": np.ones(2), "scores": np.zeros(2)})
    assert out[1] == ["boxes", "scores"] and list(out[2]) == ["boxes", "scores"]
    np.testing.assert_array_equal(out[0], [1, 1, 0, 0])
    check(fields_in_order, {1: np.ones(1), "x": np.zeros(1)})


@dataclasses.dataclass
class _Config:  # unhashable: a dataclass with eq and no frozen
    thr: float = 0.5
    table: np.ndarray = dataclasses.field(default_factory=lambda: np.arange(3.0))


def kept_over(s, cfg):
    return np.where(s > cfg.thr)[0], s + cfg.table


def test_an_unhashable_object_argument_is_kept_by_identity():
    """A @dataclass config object compiles (it was refused): held by identity, what the function
    reads from it is read on every call, so a change to it is seen and another object is traced."""
    s, cfg = np.array([0.1, 0.7, 0.9]), _Config()
    compiled = check(kept_over, s, cfg)
    cfg.thr, cfg.table[0] = 0.8, 5.0
    same(compiled(s, cfg)[0], kept_over(s, cfg)[0])
    same(compiled(s, cfg)[1], kept_over(s, cfg)[1])
    same(compiled(s, _Config(thr=0.05))[0], np.array([0, 1, 2]))


class _Scale:  # SSD's transforms: objects called as functions
    def __init__(self, k):
        self.k = k

    def __call__(self, boxes):
        boxes *= self.k
        return boxes


def test_an_object_with_call_compiles_as_its_bound_method():
    compiled = strider.compile(_Scale(2.0))
    boxes = np.arange(4.0)
    assert compiled(boxes) is boxes
    same(boxes, np.arange(4.0) * 2)


def test_fast_dispatch_keys_statics_by_type_and_keywords_by_name():
    def f(x, k, a=1, b=2):
        return x // k + a * 10 + b * 100

    compiled = strider.compile(f, static_argnames=("k",))
    x = np.arange(6)
    for k in (2, 2.0, True, 2, 2.0):
        got, want = compiled(x, k), f(x, k)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype
    assert compiled.stats()["traces"] == 3
    for kwargs in ({"a": 5}, {"b": 5}, {"a": 5}, {"b": 5, "a": 7}, {"a": 7, "b": 5}):
        np.testing.assert_array_equal(compiled(x, 3, **kwargs), f(x, 3, **kwargs))


@pytest.mark.parametrize("schedule", [
    "split(i0, a, b, 3)",
    "split(i1, a, b, 5) vectorize(b, 4)",
    "split(i0, a, b, 4) reorder(b, a, i1) parallel(b)",
    "split(i0, a, b, 4) parallel(a)",
    "tile(i0, i1, a, b, c, d, 3, 4)",
    "split(i0, a, b, 13)",
])
def test_splits_with_a_tail_skip_the_points_past_the_extent(schedule):
    def f(x, out):
        out[:, ::-1] = np.sqrt(x) + x[:, :1]
        return out.T * 2.0

    x = np.linspace(0, 1, 70, dtype=np.float32).reshape(10, 7)
    compiled = strider.compile(f, schedule={0: schedule})
    out_got, out_want = np.full((10, 7), -1, np.float32), np.full((10, 7), -1, np.float32)
    np.testing.assert_array_equal(compiled(x, out_got), f(x, out_want))
    np.testing.assert_array_equal(out_got, out_want)
    e = compiled.explain(x, out_got)
    assert " tails [" in str(e) and e.fallbacks == [""] * len(e.stages)


@pytest.mark.parametrize("reduce", [np.sum, np.max, np.argmax, np.argmin])
@pytest.mark.parametrize("schedule", ["split(i1, a, b, 3)", "split(i0, a, b, 3) split(i1, c, d, 4)"])
def test_splits_with_a_tail_of_a_reduced_loop(reduce, schedule):
    def f(x):
        return reduce(x * 2.0, axis=1)

    x = np.random.default_rng(0).standard_normal((7, 11)).astype(np.float32)
    x[3, 9] = 9.0  # a maximum in the last, partial block
    compiled = strider.compile(f, schedule={0: schedule})
    got, want = compiled(x), f(x)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert got.dtype == want.dtype


def test_schedules_are_text_users_can_edit():
    def f(x):
        return np.exp(x) * 2.0

    x = np.linspace(0, 1, 64, dtype=np.float32).reshape(8, 8)
    default = strider.compile(f).explain(x).schedules
    assert set(default) == {0}
    scheduled = strider.compile(f, schedule={0: "split(i0, i0o, i0i, 2) vectorize(i1, 8) parallel(i0o)"})
    e = scheduled.explain(x)
    assert e.schedules[0] == "split(i0, i0o, i0i, 2) vectorize(i1, 8) parallel(i0o)"
    assert e.stages[0]["loops"] == ["i0o", "i0i", "i1"]
    np.testing.assert_allclose(scheduled(x), f(x), rtol=1e-6)
    with pytest.raises(strider.ScheduleError, match=r"fuse\(a, b, c\): a has a tail \(a \* 3 \+ b < 8\)"):
        strider.compile(f, schedule={0: "split(i0, a, b, 3) fuse(a, b, c)"})(x)
    with pytest.raises(strider.ScheduleError, match="there are 1 stages"):
        strider.compile(f, schedule={4: "parallel(i0)"})(x)


def _softmax(x):
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=-1, keepdims=True)


@pytest.mark.parametrize("shape, schedule", [
    ((37, 11), "compute_at(%s2, i0) compute_at(%s3, i0)"),
    ((37, 11), "parallel(i0) compute_at(%s3, i0) compute_at(%s2, i0)"),
    ((5, 7, 11), "compute_at(%s2, i1) compute_at(%s3, i1)"),
    ((5, 7, 11), "parallel(i0) compute_at(%s2, i0) compute_at(%s3, i0)"),
])
def test_compute_at_runs_the_producers_inside_the_consumers_loops(shape, schedule):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    compiled = strider.compile(_softmax, schedule={2: schedule})
    np.testing.assert_allclose(compiled(x), _softmax(x), rtol=1e-6)
    e = compiled.explain(x)
    assert e.fallbacks == ["", "", ""]
    loop = schedule.split(", ")[-1].rstrip(")")
    assert f"(computed at {loop} of stage 2)" in str(e)
    assert e.stages[2]["schedule"] == schedule


def test_compute_at_of_a_best_class_and_its_score():
    def f(logits, thr):
        scores = 1.0 / (1.0 + np.exp(-logits))
        best = scores.max(axis=1)
        labels = scores.argmax(axis=1)
        keep = best > thr
        return np.where(keep, best, 0.0), np.where(keep, labels, -1)

    logits = np.random.default_rng(2).standard_normal((300, 17)).astype(np.float32)
    compiled = strider.compile(f, static_argnames=("thr",))
    text = str(compiled.explain(logits, 0.6))
    last = len(compiled.explain(logits, 0.6).stages) - 1
    reduced = [re.search(rf"  {op}\(.*\) -> (%s\d+)", text).group(1) for op in ("max", "argmax")]
    schedule = " ".join(f"compute_at({s}, i0)" for s in reduced)
    compiled = strider.compile(f, static_argnames=("thr",), schedule={last: schedule})
    for got, want in zip(compiled(logits, 0.6), f(logits, 0.6)):
        np.testing.assert_allclose(got, want, rtol=1e-6)  # exp within libmvec's 4 ulp
        assert got.dtype == want.dtype
    assert "computed at i0 of stage" in str(compiled.explain(logits, 0.6))


def test_default_schedule_computes_a_softmax_row_by_row():
    x = np.random.default_rng(4).standard_normal((50, 81)).astype(np.float32)
    compiled = strider.compile(_softmax)
    np.testing.assert_allclose(compiled(x), _softmax(x), rtol=1e-6)
    e = compiled.explain(x)
    assert e.schedules[2].endswith("compute_at(%s1, i0) compute_at(%s2, i0)")
    assert "folded %s1[1] folded %s2[81] folded %s3[1]" in str(e)
    # the user's compute_at replaces the defaults
    mine = strider.compile(_softmax, schedule={2: "compute_at(%s2, i0)"}).explain(x)
    assert "computed at" not in str(mine).split("stage 1:")[0]


@pytest.mark.parametrize("fn, schedule, reason", [
    (lambda x: _softmax(x), {2: "compute_at(%s2, i1)"}, r"stage 1 reduces loop i1, which the stages share"),
    (lambda x: _softmax(x), {2: "compute_at(%s0, i0)"}, r"%s0 is not a temporary"),
    (lambda x: _softmax(x), {2: "compute_at(%s2, i0) compute_at(%s3, i1)"}, r"names the same loop \(i0\)"),
    (lambda x: _softmax(x), {2: "compute_at(%s2)"}, r"takes \(%sN, loop\)"),
    (lambda x: x - np.max(x, axis=1)[::-1, None], {1: "compute_at(%s1, i0)"},
     r"stage 1 touches an element of %s1 that stage 0 writes at another iteration"),
    (lambda x: np.max(x, axis=1)[:3] * 2.0, {1: "compute_at(%s1, i0)"},
     r"stage 0's loop i0 runs 6 times, i0 3"),
])
def test_compute_at_refuses_what_could_change_the_result(fn, schedule, reason):
    x = np.random.default_rng(3).standard_normal((6, 3)).astype(np.float32)
    with pytest.raises(strider.ScheduleError, match=reason):
        strider.compile(fn, schedule=schedule)(x)


def test_a_warm_call_enters_python_only_to_trace():
    compiled = strider.compile(lambda a, b: a + b)
    x = np.arange(4.0)
    compiled(x, x + 1)

    def refuse(*args, **kwargs):
        raise AssertionError("the call entered Python")

    compiled._trace = compiled._inline = compiled._bind_error = refuse
    np.testing.assert_array_equal(compiled(x, x + 2), x + x + 2)
    np.testing.assert_array_equal(compiled(b=x + 3, a=x), x + x + 3)  # keywords bind in C++ too
    with pytest.raises(AssertionError, match="entered Python"):
        compiled(np.arange(5.0), x[:1])  # a new signature: traced
    entered = []
    sys.setprofile(lambda frame, event, arg: entered.append(frame.f_code.co_name) if event == "call" else None)
    try:
        compiled(x, x + 2)
    finally:
        sys.setprofile(None)
    assert entered == []


def test_varargs_and_kwargs_given_nothing_hit_the_cache():
    def f(x, *rest, **options):
        return x * (2 if not rest and not options else 3)

    compiled = strider.compile(f)
    x = np.arange(3.0)
    for _ in range(3):
        np.testing.assert_array_equal(compiled(x), f(x))
    assert compiled.stats()["traces"] == 1
    np.testing.assert_array_equal(compiled(x, 1.0, k=2), f(x, 1.0, k=2))
    assert compiled.stats()["traces"] == 2


class _Dets(tuple):
    """A tuple subclass that is not a namedtuple."""


def test_namedtuples_in_and_out():
    # a namedtuple argument reaches the function as one (it arrived as a list: AttributeError on
    # p.boxes), and a namedtuple or another tuple subclass returned comes back as one (it came
    # back as a list)
    import collections
    Pred = collections.namedtuple("Pred", "boxes scores")

    def f(p):
        return Pred(p.boxes * 2, p.scores.sum()), _Dets((p.boxes[:1],))

    x = np.arange(3.0)
    check(f, Pred(x, x + 1), calls=2)
    got = strider.compile(f)(Pred(x, x + 1))
    assert type(got[0]) is Pred and type(got[1]) is _Dets


def test_objects_holding_traced_values_are_not_returned():
    import dataclasses

    @dataclasses.dataclass
    class Det:
        box: np.ndarray
        score: float

    def f(x):
        return Det(x[:4] * 2, float(x[4]))

    x = np.arange(5.0)
    # named at the function's def: it has returned, and its frame is gone
    with pytest.raises(strider.UnsupportedError, match=r"test_api.py:\d+: returning a Det object holding traced values"):
        strider.compile(f, strict=True)(x)
    with pytest.warns(strider.GraphBreakWarning):
        got = strider.compile(f, strict=False)(x)  # NumPy runs it: real arrays in the object
    assert type(got.box) is np.ndarray and np.array_equal(got.box, x[:4] * 2) and got.score == 4.0


def _top_over(boxes, scores, thresh, top=3):
    order = scores.argsort()[::-1][:top]
    return boxes[order][scores[order] > thresh]


def test_a_partial_compiles_as_its_function_with_its_arguments_first():
    partial = functools.partial(_top_over, thresh=0.5)
    compiled = strider.compile(partial, strict=True)
    rng = np.random.default_rng(7)
    boxes, scores = rng.random((10, 4)), rng.random(10)
    same(compiled(boxes, scores), partial(boxes, scores))
    same(compiled(boxes, scores, top=5), partial(boxes, scores, top=5))
    assert compiled.__name__ == "_top_over" and "thresh=0.5" in str(inspect.signature(compiled))
    assert "argsort" in compiled.explain(boxes, scores).ir and compiled.stats()["traces"] >= 1


def recall_params(proposal_nums, iou_thrs, flag):
    # mmdet's set_recall_param: Python numbers the caller passes are Python's to isinstance
    if isinstance(proposal_nums, int):
        proposal_nums = np.array([proposal_nums])
    if isinstance(iou_thrs, float):
        iou_thrs = np.array([iou_thrs])
    return proposal_nums[-1] * np.ones(2), iou_thrs * 2, isinstance(flag, int), isinstance(flag, bool), \
        isinstance(proposal_nums[0], np.ndarray)


def test_isinstance_of_a_python_number_argument_is_python_s():
    check(recall_params, 5, 0.5, True)
    check(recall_params, np.array([3, 5]), np.array([0.5, 0.7]), False)


def _item_doubled(x, i):
    return x[i] * 2


def test_a_slice_argument_is_static_by_its_bounds():
    compiled = strider.compile(_item_doubled, strict=True)
    x = np.arange(10.0)
    for i in (slice(1, 3), slice(1, 3), slice(2, 8, 2), slice(None, None, -3)):
        same(compiled(x, i), x[i] * 2)
    assert counters(compiled) == (3, 1)


@pytest.mark.parametrize("x,i", [(np.array(["a", "b", "c"]), 1), (np.array([1 + 2j, 3j]), 0), ({1, 2}, None)],
                         ids=["strings", "complex", "set"])
def test_an_argument_strider_cannot_take_runs_in_numpy_unless_strict(x, i):
    fn = (lambda s, _: len(s)) if isinstance(x, set) else _item_doubled
    with pytest.raises(strider.UnsupportedError):
        strider.compile(fn, strict=True)(x, i)
    with pytest.warns(strider.GraphBreakWarning, match="the call runs in NumPy"):
        assert strider.compile(fn, strict=False)(x, i) == fn(x, i)


def _sum_over(s, t):
    total = 0.0
    for j in range(len(s)):
        if s[j] < t:
            continue
        total += s[j]
    return total


def test_the_numbers_of_a_list_needed_as_values_are_static_at_once():
    """A loop over a list of floats that decides on each (ensemble_boxes' prefilter): one more
    trace for all of them, not one (and a walk of the call) a number, which ran out of walks."""
    s = [float(v) for v in np.random.default_rng(17).random(200)]
    compiled = strider.compile(_sum_over, strict=True)
    assert compiled(s, 0.5) == _sum_over(s, 0.5)
    assert compiled.stats()["traces"] <= 3
