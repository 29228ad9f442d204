"""ops.def's attributes against NumPy: each elementwise op has a loop for exactly the dtype
families its ufunc has one for (so the backends refuse what NumPy refuses, and nothing NumPy
runs), and the bool-result attributes match the ufuncs' output types."""
import numpy as np
import pytest

from strider import _C

TABLE = _C.op_table()
ELEMENTWISE = sorted(name for name, info in TABLE.items() if info["loops"])
FAMILIES = {"bool": set("?"), "int": set("bhilqBHILQ"), "float": set("efdg")}


def ufunc(name):
    return getattr(np, name)


def numpy_loops(u):
    inputs = [t.split("->")[0] for t in u.types]
    return {f for f, codes in FAMILIES.items() if any(set(i) <= codes for i in inputs)}


def test_every_elementwise_op_is_a_numpy_ufunc():
    assert len(ELEMENTWISE) > 60
    for name in ELEMENTWISE:
        assert isinstance(ufunc(name), np.ufunc), name
        assert ufunc(name).nin == TABLE[name]["arity"], name


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_loops_are_numpys(name):
    assert set(TABLE[name]["loops"]) == numpy_loops(ufunc(name))


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_bool_results_are_numpys(name):
    # over bool inputs most ufuncs answer in bool (add is or): the int and float loops tell
    numeric = FAMILIES["int"] | FAMILIES["float"]
    loops = [t.split("->") for t in ufunc(name).types if set(t.split("->")[0]) <= numeric]
    bool_out = all(out == "?" for _, out in loops)
    assert (TABLE[name]["predicate"] or TABLE[name]["comparison"]) == bool_out


def test_only_integer_power_may_fail():
    assert [name for name, info in TABLE.items() if info["may_fail"]] == ["power"]
    with pytest.raises(ValueError, match="Integers to negative integer powers are not allowed"):
        np.power(np.int64(2), np.int64(-1))
