"""Functions with `assert` on traced values, for test_data_dependent.py. A module of their own:
pytest rewrites the assert statements of test modules, and these must stay Python's."""


def assert_positive(x, y):
    y[0] = 1.0
    assert (x > 0).all(), "x must be positive"
    y[1] = 2.0
    return x.sum()


def assert_bare(x, y):
    y[:] = x[:3]
    assert x.max() < 0.9
    y *= 2
    return y


def assert_computed_message(x, y):
    y[2] = 5.0
    assert x.min() > 0, f"x has {x.size} elements, some not positive"
    return x * 2
