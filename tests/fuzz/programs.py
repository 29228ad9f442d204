"""Random NumPy programs as data: the program model the fuzzer and the property tests share.

A program is a list of steps over an environment that starts with the arguments and grows by one
entry for each step that yields a value. `run_step` runs one step; the function handed to
`strider.compile` is a closure over the step list, so the tracer sees ordinary NumPy calls. A Case
renders as the Python it runs and round-trips through JSON (how the fuzzer saves a mismatch as a
regression, tests/fuzz/regressions/*.json). The strategies that draw programs are in generator.py.
"""
import hashlib
import json
import operator
import os
import warnings

import numpy as np

import strider
from differential import check

# the first four are arange's and linspace's; every dtype strider carries (csrc/ir/dtypes.def)
DTYPES = ["int32", "int64", "float32", "float64", "bool", "int8", "uint8", "int16", "uint16", "uint32", "uint64",
          "float16"]
TOLERANCE = dict(rtol=1e-3, atol=1e-2)  # for programs with tainted (inexact) values
YIELDS = {"view", "expr", "unary", "astype", "where", "clip", "reduce",  # steps that add an entry
          "join", "split", "count_nonzero", "ufunc_reduce", "create", "like", "clip_arr", "matmul",
          "isclose", "diff", "tile", "repeat", "copy", "pad", "sort", "argsort", "take", "cumsum",
          "roll", "chase", "branch", "select"}

BINOPS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
    "&": operator.and_, "|": operator.or_, "^": operator.xor,
    "<": operator.lt, "==": operator.eq, ">=": operator.ge,
    "maximum": np.maximum, "minimum": np.minimum,
}
INPLACE = {
    "+": operator.iadd, "-": operator.isub, "*": operator.imul, "/": operator.itruediv,
    "&": operator.iand, "|": operator.ior, "^": operator.ixor,
}
UNARY_UFUNCS = {"negative": np.negative, "absolute": np.absolute}  # the ones written with out=
UFUNCS = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
          "maximum": np.maximum, "minimum": np.minimum}
UNARY = {
    "neg": operator.neg, "invert": operator.invert, "abs": np.abs, "logical_not": np.logical_not,
    "sqrt_abs": lambda x: np.sqrt(np.abs(x)), "exp": np.exp,
}

JOINS = {"concatenate": np.concatenate, "stack": np.stack, "hstack": np.hstack, "vstack": np.vstack}
SPLITS = {"split": np.split, "array_split": np.array_split}
REDUCE_UFUNCS = {"add": np.add, "maximum": np.maximum}
PRODUCTS = {"matmul": np.matmul, "dot": np.dot}

VIEWS = {
    "index": lambda x, key: x[key],
    "T": lambda x, _: x.T,
    "transpose": lambda x, perm: x.transpose(perm),
    "swapaxes": lambda x, ab: np.swapaxes(x, *ab),
    "flip": lambda x, axis: np.flip(x, axis),
    "reshape": lambda x, shape: x.reshape(shape),
    "ravel": lambda x, _: x.ravel(),
    "broadcast_to": lambda x, shape: np.broadcast_to(x, shape),
    "expand_dims": lambda x, axis: np.expand_dims(x, axis),
    "squeeze": lambda x, axis: np.squeeze(x, axis),
    "cut": lambda x, c: _cut(x, c),
}


# ---------------------------------------------------------------------------------------------
# The interpreter. Value expressions: ("env", i) | ("const", c) | ("sub", i, key) | ("T", i) |
# ("bin", op, value, value).


def _value(v, env):
    kind = v[0]
    if kind == "env":
        return env[v[1]]
    if kind == "const":
        return v[1]
    if kind == "sub":
        return env[v[1]][v[2]]
    if kind == "T":
        return env[v[1]].T
    if kind == "bin":
        return BINOPS[v[1]](_value(v[2], env), _value(v[3], env))
    raise AssertionError(v)


def run_step(s, env):
    kind = s[0]
    if kind == "view":
        _, view, src, param = s
        env.append(VIEWS[view](env[src], param))
    elif kind == "expr":
        env.append(_value(s[1], env))
    elif kind == "unary":
        env.append(UNARY[s[1]](env[s[2]]))
    elif kind == "astype":
        env.append(env[s[1]].astype(s[2]))
    elif kind == "where":
        env.append(np.where(_value(s[1], env), _value(s[2], env), _value(s[3], env)))
    elif kind == "clip":
        env.append(np.clip(env[s[1]], s[2], s[3]))
    elif kind == "reduce":
        _, op, src, axis, keepdims = s
        env.append(getattr(env[src], op)(axis=axis, keepdims=keepdims))
    elif kind == "join":  # ("join", fn, (entries), axis or None for h/vstack)
        _, fn, srcs, axis = s
        xs = [env[i] for i in srcs]
        env.append(JOINS[fn](xs) if axis is None else JOINS[fn](xs, axis=axis))
    elif kind == "split":  # one piece of np.split(x, sections, axis)
        _, fn, src, sections, axis, piece = s
        env.append(SPLITS[fn](env[src], sections, axis=axis)[piece])
    elif kind in ("sort", "argsort"):  # (kind, src, axis): stable, so ties have one answer
        env.append(getattr(np, kind)(env[s[1]], axis=s[2], kind="stable"))
    elif kind == "take":  # ("take", src, indices, axis)
        env.append(np.take(env[s[1]], list(s[2]), axis=s[3]))
    elif kind == "cumsum":  # ("cumsum", src, axis)
        env.append(np.cumsum(env[s[1]], axis=s[2]))
    elif kind == "roll":  # ("roll", src, shift, axis)
        env.append(np.roll(env[s[1]], s[2], axis=s[3]))
    elif kind == "chase":  # ("chase", src, c): a while loop on a run-time length (NMS's shape)
        env.append(_chase(env[s[1]], s[2]))
    elif kind == "branch":  # ("branch", cond, a, c): an if on a traced value, merging a result
        env.append(_branch(env[s[1]], env[s[2]], s[3]))
    elif kind == "mask_set":  # ("mask_set", dst, c, v): a boolean mask write
        x = env[s[1]]
        x[x > s[2]] = s[3]
    elif kind == "select":  # ("select", src, c): the rows whose first element passes c (a run-time length)
        env.append(_select(env[s[1]], s[2]))
    elif kind == "count_nonzero":
        _, src, axis, keepdims = s
        env.append(np.count_nonzero(env[src], axis=axis, keepdims=keepdims))
    elif kind == "ufunc_reduce":
        _, op, src, axis, keepdims = s
        env.append(REDUCE_UFUNCS[op].reduce(env[src], axis=axis, keepdims=keepdims))
    elif kind == "create":  # ("create", fn, shape, dtype, param)
        env.append(_create(*s[1:]))
    elif kind == "like":  # ("like", fn, src, dtype or None, fill value)
        _, fn, src, dtype, c = s
        x = env[src]
        if fn == "full_like":
            env.append(np.full_like(x, c, dtype=dtype))
        elif fn == "empty_like":
            y = np.empty_like(x, dtype=dtype)
            y[...] = c
            env.append(y)
        else:
            env.append(getattr(np, fn)(x, dtype=dtype))
    elif kind == "clip_arr":
        env.append(np.clip(env[s[1]], _value(s[2], env), _value(s[3], env)))
    elif kind == "matmul":
        env.append(PRODUCTS[s[1]](_value(s[2], env), _value(s[3], env)))
    elif kind == "isclose":
        env.append(np.isclose(_value(s[1], env), _value(s[2], env)))
    elif kind == "diff":
        _, src, n, axis = s
        env.append(np.diff(env[src], n=n, axis=axis))
    elif kind == "tile":
        env.append(np.tile(env[s[1]], s[2]))
    elif kind == "repeat":
        _, src, repeats, axis = s
        env.append(np.repeat(env[src], repeats, axis=axis))
    elif kind == "copy":
        env.append(np.copy(env[s[1]]) if s[2] == "np" else env[s[1]].copy())
    elif kind == "pad":
        _, src, width, c = s
        env.append(np.pad(env[src], width, constant_values=c))
    elif kind == "setitem":
        _, dst, key, val = s
        env[dst][key] = _value(val, env)
    elif kind == "aug":
        _, dst, key, op, val = s
        if key is None:  # v op= val
            env[dst] = INPLACE[op](env[dst], _value(val, env))
        else:  # v[key] op= val, spelled out the way Python runs it
            base = env[dst]
            item = INPLACE[op](base[key], _value(val, env))
            base[key] = item
    elif kind == "fill":
        env[s[1]].fill(s[2])
    elif kind == "copyto":
        np.copyto(env[s[1]], _value(s[2], env))
    elif kind == "clip_out":
        np.clip(env[s[1]], s[2], s[3], out=env[s[1]])
    elif kind == "ufunc_out":
        _, op, a, b, dst = s
        UFUNCS[op](_value(a, env), _value(b, env), out=env[dst])
    elif kind == "unary_out":
        _, op, a, dst, key = s
        UNARY_UFUNCS[op](_value(a, env), out=env[dst] if key is None else env[dst][key])
    else:
        raise AssertionError(s)


def _chase(x, c):
    # the elements above c, each kept where it is at least the first kept: a loop whose carried
    # array shrinks every trip, with a running total; a return inside it once the total passes c + 4;
    # the largest element seen, a Python int until a trip finds one above it (a NumPy scalar)
    x = x.reshape(-1)
    order = np.flatnonzero(x > c)
    total = x[:0].sum()
    best = 0
    while order.size > 0:
        total = total + x[order[0]]
        if x[order[0]] > best:
            best = x[order[0]]
        if total > c + 4:
            return total * 2
        order = order[1:][x[order[1:]] >= x[order[0]]]
    return total + best


def _select(x, c):
    """x's rows whose first element is over c: an array of a run-time length, compiled."""
    return x[x[(slice(None),) + (0,) * (x.ndim - 1)] > c]


def _cut(x, c):
    """NumPy's view x[k // 2:k + 1], k counting x's elements over c: a slice of its first axis whose
    bounds only the run knows (strider's is a copy kept in step with x)."""
    k = np.count_nonzero(x > c)
    return x[k // 2:k + 1]


def _branch(cond, a, c):
    if c % 2:  # the first side leaves None: a Choice until `is None` picks (_control's _choose_now)
        if np.count_nonzero(cond) <= c:
            y = None
        else:
            y = a * 2
        return a - 1 if y is None else y
    if np.count_nonzero(cond) > c:
        y = a * 2
    else:
        y = a - 1
    return y


def _create(fn, shape, dtype, c):
    """np.zeros/ones/full/empty (then filled with c) of `shape`; arange and linspace of its size,
    from c in unit steps (exact), reshaped to it."""
    if fn in ("zeros", "ones"):
        return getattr(np, fn)(shape, dtype)
    if fn == "full":
        return np.full(shape, c, dtype)
    if fn == "empty":
        x = np.empty(shape, dtype)
        x[...] = c
        return x
    size = int(np.prod(shape))
    if fn == "arange":
        return np.arange(c, c + size, dtype=dtype).reshape(shape)
    return np.linspace(c, c + size - 1, size, dtype=dtype).reshape(shape)


def _interpret(steps, ret, args):
    env = list(args)
    for s in steps:
        run_step(s, env)
    if ret is None:
        return None
    if isinstance(ret, int):
        return env[ret]
    return tuple(env[i] for i in ret)


def _make_fn(nargs, steps, ret):
    # Fixed arity, so strider sees an ordinary signature.
    if nargs == 1:
        def program(a0):
            return _interpret(steps, ret, (a0,))
    elif nargs == 2:
        def program(a0, a1):
            return _interpret(steps, ret, (a0, a1))
    else:
        def program(a0, a1, a2):
            return _interpret(steps, ret, (a0, a1, a2))
    return program



# ---------------------------------------------------------------------------------------------
# Arguments: fresh C-contiguous roots, optionally seen through a strided view, or views of (or the
# very object of) an earlier argument.


def _root_range(dtype):
    """The [lo, hi) a root argument's values are drawn from: unsigned ones from 0 (a wrapped -3
    is a value no program keeps within bounds)."""
    if dtype == "bool":
        return 0, 2
    return (0 if np.dtype(dtype).kind == "u" else -3), 4


def make_args(specs):
    args = []
    for spec in specs:
        if spec[0] == "root":
            _, shape, dtype, seed, key = spec
            root = np.random.default_rng(seed).integers(*_root_range(dtype), size=shape).astype(dtype)
            args.append(root if key is None else root[key])
        else:
            _, j, key = spec
            args.append(args[j] if key is None else args[j][key])
    return args



# ---------------------------------------------------------------------------------------------
# Rendering, so a failing example reads as the Python it runs.


def _fmt_index(k):
    if k is None:
        return "None"
    if k is Ellipsis:
        return "..."
    if isinstance(k, slice):
        parts = ["" if p is None else str(p) for p in (k.start, k.stop, k.step)]
        return ":".join(parts if k.step is not None else parts[:2])
    return str(k)


def _fmt_key(key):
    if key == ():
        return "()"
    return ", ".join(_fmt_index(k) for k in key)


def _name(i, nargs):
    return f"a{i}" if i < nargs else f"v{i}"


def _fmt_value(v, n):
    kind = v[0]
    if kind == "env":
        return _name(v[1], n)
    if kind == "const":
        return repr(v[1])
    if kind == "sub":
        return f"{_name(v[1], n)}[{_fmt_key(v[2])}]"
    if kind == "T":
        return f"{_name(v[1], n)}.T"
    a, b = _fmt_value(v[2], n), _fmt_value(v[3], n)
    if v[1] in ("maximum", "minimum"):
        return f"np.{v[1]}({a}, {b})"
    return f"({a} {v[1]} {b})"


def _fmt_step(s, out, n):
    kind = s[0]
    lhs = f"{_name(out, n)} = "
    if kind == "view":
        _, view, src, p = s
        x = _name(src, n)
        return lhs + {
            "index": lambda: f"{x}[{_fmt_key(p)}]",
            "T": lambda: f"{x}.T",
            "transpose": lambda: f"{x}.transpose({p})",
            "swapaxes": lambda: f"np.swapaxes({x}, {p[0]}, {p[1]})",
            "flip": lambda: f"np.flip({x}, {p})",
            "reshape": lambda: f"{x}.reshape({p})",
            "ravel": lambda: f"{x}.ravel()",
            "broadcast_to": lambda: f"np.broadcast_to({x}, {p})",
            "expand_dims": lambda: f"np.expand_dims({x}, {p})",
            "squeeze": lambda: f"np.squeeze({x}, {p})",
            "cut": lambda: f"_cut({x}, {p!r})  # a slice of run-time bounds (tests/fuzz/programs.py)",
        }[view]()
    if kind == "expr":
        return lhs + _fmt_value(s[1], n)
    if kind == "unary":
        x = _name(s[2], n)
        return lhs + {"neg": f"-{x}", "invert": f"~{x}", "abs": f"np.abs({x})",
                      "logical_not": f"np.logical_not({x})", "sqrt_abs": f"np.sqrt(np.abs({x}))",
                      "exp": f"np.exp({x})"}[s[1]]
    if kind == "astype":
        return lhs + f"{_name(s[1], n)}.astype({s[2]!r})"
    if kind == "where":
        return lhs + "np.where({}, {}, {})".format(*(_fmt_value(v, n) for v in s[1:]))
    if kind == "clip":
        return lhs + f"np.clip({_name(s[1], n)}, {s[2]}, {s[3]})"
    if kind == "reduce":
        _, op, src, axis, keepdims = s
        return lhs + f"{_name(src, n)}.{op}(axis={axis}, keepdims={keepdims})"
    if kind == "join":
        _, fn, srcs, axis = s
        xs = "(" + "".join(_name(i, n) + ", " for i in srcs) + ")"
        return lhs + f"np.{fn}({xs}" + ("" if axis is None else f", axis={axis}") + ")"
    if kind == "split":
        _, fn, src, sections, axis, piece = s
        return lhs + f"np.{fn}({_name(src, n)}, {sections}, axis={axis})[{piece}]"
    if kind in ("sort", "argsort"):
        return lhs + f"np.{kind}({_name(s[1], n)}, axis={s[2]}, kind='stable')"
    if kind == "take":
        return lhs + f"np.take({_name(s[1], n)}, {list(s[2])}, axis={s[3]})"
    if kind == "cumsum":
        return lhs + f"np.cumsum({_name(s[1], n)}, axis={s[2]})"
    if kind == "roll":
        return lhs + f"np.roll({_name(s[1], n)}, {s[2]!r}, axis={s[3]!r})"
    if kind == "chase":
        return lhs + f"_chase({_name(s[1], n)}, {s[2]!r})  # a while loop (tests/fuzz/programs.py)"
    if kind == "branch":
        return lhs + f"_branch({_name(s[1], n)}, {_name(s[2], n)}, {s[3]!r})  # an if (tests/fuzz/programs.py)"
    if kind == "mask_set":
        x = _name(s[1], n)
        return f"{x}[{x} > {s[2]!r}] = {s[3]!r}"
    if kind == "select":
        return lhs + f"_select({_name(s[1], n)}, {s[2]!r})  # rows by a mask (tests/fuzz/programs.py)"
    if kind == "count_nonzero":
        _, src, axis, keepdims = s
        return lhs + f"np.count_nonzero({_name(src, n)}, axis={axis}, keepdims={keepdims})"
    if kind == "ufunc_reduce":
        _, op, src, axis, keepdims = s
        return lhs + f"np.{op}.reduce({_name(src, n)}, axis={axis}, keepdims={keepdims})"
    if kind == "create":
        _, fn, shape, dtype, c = s
        x = _name(out, n)
        size = int(np.prod(shape))
        return lhs + {
            "zeros": f"np.zeros({shape}, {dtype!r})", "ones": f"np.ones({shape}, {dtype!r})",
            "full": f"np.full({shape}, {c!r}, {dtype!r})",
            "empty": f"np.empty({shape}, {dtype!r}); {x}[...] = {c!r}",
            "arange": f"np.arange({c!r}, {c + size!r}, dtype={dtype!r}).reshape({shape})",
            "linspace": f"np.linspace({c!r}, {c + size - 1!r}, {size}, dtype={dtype!r}).reshape({shape})",
        }[fn]
    if kind == "like":
        _, fn, src, dtype, c = s
        x, d = _name(src, n), "" if dtype is None else f", dtype={dtype!r}"
        if fn == "full_like":
            return lhs + f"np.full_like({x}, {c!r}{d})"
        if fn == "empty_like":
            return lhs + f"np.empty_like({x}{d}); {_name(out, n)}[...] = {c!r}"
        return lhs + f"np.{fn}({x}{d})"
    if kind in _CALLS:  # the step's fields after its kind fill the template; entries first
        fields = list(s[1:])
        for i in _ENTRY_AT.get(kind, ()):
            fields[i - 1] = _name(s[i], n)
        for i in _VALUE_AT.get(kind, ()):
            fields[i - 1] = _fmt_value(s[i], n)
        return lhs + _CALLS[kind].format(*fields)
    if kind == "copy":
        return lhs + (f"np.copy({_name(s[1], n)})" if s[2] == "np" else f"{_name(s[1], n)}.copy()")
    if kind == "setitem":
        return f"{_name(s[1], n)}[{_fmt_key(s[2])}] = {_fmt_value(s[3], n)}"
    if kind == "aug":
        _, dst, key, op, val = s
        target = _name(dst, n) + ("" if key is None else f"[{_fmt_key(key)}]")
        return f"{target} {op}= {_fmt_value(val, n)}"
    if kind == "fill":
        return f"{_name(s[1], n)}.fill({s[2]!r})"
    if kind == "copyto":
        return f"np.copyto({_name(s[1], n)}, {_fmt_value(s[2], n)})"
    if kind == "clip_out":
        x = _name(s[1], n)
        return f"np.clip({x}, {s[2]}, {s[3]}, out={x})"
    if kind == "ufunc_out":
        _, op, a, b, dst = s
        return f"np.{op}({_fmt_value(a, n)}, {_fmt_value(b, n)}, out={_name(dst, n)})"
    if kind == "unary_out":
        _, op, a, dst, key = s
        target = _name(dst, n) + ("" if key is None else f"[{_fmt_key(key)}]")
        return f"np.{op}({_fmt_value(a, n)}, out={target})"
    raise AssertionError(s)


_CALLS = {
    "clip_arr": "np.clip({0}, {1}, {2})", "matmul": "np.{0}({1}, {2})", "isclose": "np.isclose({0}, {1})",
    "diff": "np.diff({0}, n={1}, axis={2})", "tile": "np.tile({0}, {1})",
    "repeat": "np.repeat({0}, {1}, axis={2})", "pad": "np.pad({0}, {1}, constant_values={2})",
}


class Case:
    """A program and its arguments: `fn(*args())` runs it, repr is its Python source."""

    def __init__(self, specs, steps, ret, tainted, calls):
        self.specs, self.steps, self.ret, self.tainted, self.calls = specs, steps, ret, tainted, calls
        self.nargs = len(specs)
        self.fn = _make_fn(self.nargs, steps, ret)

    def to_json(self):
        return {"specs": _encode(self.specs), "steps": _encode(self.steps), "ret": _encode(self.ret),
                "tainted": self.tainted, "calls": self.calls}

    @staticmethod
    def from_json(d):
        return Case(list(_decode(d["specs"])), list(_decode(d["steps"])), _decode(d["ret"]),
                    d["tainted"], d["calls"])

    def smaller(self):
        """Cases one step simpler: without an argument or a step (that nothing else refers to),
        returning less, calling once, an argument unstrided. The candidates of a shrinking pass."""
        n, ret = self.nargs, self.ret
        rets = [None] if isinstance(ret, int) else []
        if isinstance(ret, tuple):
            rets = list(dict.fromkeys([ret[:k] + ret[k + 1:] for k in range(len(ret))] + list(ret)))
        out = [self._with(ret=r) for r in rets]
        out += [self._with(calls=1)] if self.calls > 1 else []
        out += [self._without(j, None) for j in range(n)] if n > 1 else []
        entry = n
        for i, s in enumerate(self.steps):
            if s[0] in YIELDS:
                out.append(self._without(entry, i))
                entry += 1
            else:
                out.append(self._with(steps=self.steps[:i] + self.steps[i + 1:]))
        for j, spec in enumerate(self.specs):
            if spec[0] == "root" and spec[-1] is not None:
                out.append(self._with(specs=self.specs[:j] + [spec[:-1] + (None,)] + self.specs[j + 1:]))
        return [c for c in out if c is not None]

    def _with(self, **fields):
        d = dict(specs=self.specs, steps=self.steps, ret=self.ret, tainted=self.tainted,
                 calls=self.calls)
        d.update(fields)
        return Case(**d)

    def _without(self, entry, step):
        """The case without environment entry `entry` (argument, or what step `step` yields),
        later entries renumbered; None when something refers to it."""
        def f(i):
            if i == entry:
                raise _Referenced
            return i - (i > entry)

        try:
            specs = [x if x[0] == "root" else ("alias", f(x[1]), x[2]) for x in self.specs]
            steps = [_map_step(s, f) for i, s in enumerate(self.steps) if i != step]
            ret = self.ret if self.ret is None else f(self.ret) if isinstance(self.ret, int) \
                else tuple(map(f, self.ret))
        except _Referenced:
            return None
        if step is None:
            del specs[entry]
        return self._with(specs=specs, steps=steps, ret=ret)

    def digest(self):
        """A short name for the program, the same in every process."""
        text = json.dumps(self.to_json(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def args(self):
        return make_args(self.specs)

    def tolerance(self):
        return TOLERANCE if self.tainted else {}

    def __repr__(self):
        n = self.nargs
        lines = []
        for i, spec in enumerate(self.specs):
            if spec[0] == "root":
                _, shape, dtype, seed, key = spec
                lo, hi = _root_range(dtype)
                src = f"rng({seed}).integers({lo}, {hi}, {shape}).astype({dtype!r})"
                lines.append(f"a{i} = {src}" + ("" if key is None else f"[{_fmt_key(key)}]"))
            else:
                _, j, key = spec
                lines.append(f"a{i} = a{j}" + ("" if key is None else f"[{_fmt_key(key)}]"))
        params = ", ".join(f"a{i}" for i in range(n))
        lines.append(f"def program({params}):")
        out = n
        for s in self.steps:
            lines.append("    " + _fmt_step(s, out, n))
            if s[0] in YIELDS:
                out += 1
        if self.ret is None:
            lines.append("    return None")
        elif isinstance(self.ret, int):
            lines.append(f"    return {_name(self.ret, n)}")
        else:
            lines.append("    return (" + "".join(_name(i, n) + ", " for i in self.ret) + ")")
        lines.append(f"# calls={self.calls} tolerance={self.tolerance()}")
        return "\n" + "\n".join(lines) + "\n"


class _Referenced(Exception):
    pass


# where the steps of each kind refer to environment entries: directly, or in a value expression
_ENTRY_AT = {"view": (2,), "unary": (2,), "astype": (1,), "clip": (1,), "reduce": (2,),
             "setitem": (1,), "aug": (1,), "fill": (1,), "copyto": (1,), "clip_out": (1,),
             "ufunc_out": (4,), "unary_out": (3,), "join": (2,), "split": (2,), "count_nonzero": (1,),
             "ufunc_reduce": (2,), "like": (2,), "clip_arr": (1,), "diff": (1,), "tile": (1,),
             "repeat": (1,), "copy": (1,), "pad": (1,), "sort": (1,), "argsort": (1,), "take": (1,),
             "cumsum": (1,), "roll": (1,), "mask_set": (1,), "select": (1,), "chase": (1,), "branch": (1, 2)}  # a tuple there is a tuple of entries
_VALUE_AT = {"expr": (1,), "where": (1, 2, 3), "setitem": (3,), "aug": (4,), "copyto": (2,),
             "ufunc_out": (2, 3), "unary_out": (2,), "clip_arr": (2, 3), "matmul": (2, 3),
             "isclose": (1, 2)}


def _map_value(v, f):
    if v[0] in ("env", "sub", "T"):
        return (v[0], f(v[1])) + v[2:]
    if v[0] == "bin":
        return ("bin", v[1], _map_value(v[2], f), _map_value(v[3], f))
    return v


def _map_step(s, f):
    """The step with every environment index i it refers to replaced by f(i)."""
    s = list(s)
    for i in _ENTRY_AT.get(s[0], ()):
        s[i] = tuple(map(f, s[i])) if isinstance(s[i], tuple) else f(s[i])
    for i in _VALUE_AT.get(s[0], ()):
        s[i] = _map_value(s[i], f)
    return tuple(s)


def runs_in_numpy(case):
    """Whether the whole program runs in NumPy (it was built step by step, each step alone)."""
    try:
        with np.errstate(all="ignore"):
            case.fn(*case.args())
    except Exception:
        return False
    return True


def check_case(case):
    """Run the case in NumPy and through strider (JIT and reference executor); raise on a mismatch.
    A program with run-time lengths (a select, a cut) may break the graph where strider does not
    carry one through a step: that call runs in NumPy, compared all the same."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", strider.GraphBreakWarning)
        check(case.fn, *case.args(), calls=case.calls, strict=not any(s[0] == "select" or s[:2] == ("view", "cut")
                                                                      for s in case.steps),
              **case.tolerance())


def save_regression(case, directory, name=None, **notes):
    """Write the case as <directory>/<name or digest>.json, after `notes` (the error, or why the
    case matters) and its source, for the reader."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, (name or case.digest()) + ".json")
    record = dict(notes, source=repr(case).strip("\n").split("\n"), case=case.to_json())
    with open(path, "w") as f:
        f.write(_dumps(record))
    return path


def _dumps(record):
    """JSON with one line per note, source line, argument and step."""
    def rows(xs, indent):
        return "[\n" + ",\n".join(indent + json.dumps(x) for x in xs) + "\n" + indent[:-1] + "]"

    case = record["case"]
    fields = [f'  "specs": {rows(case["specs"], "   ")}', f'  "steps": {rows(case["steps"], "   ")}']
    fields += [f'  "{k}": {json.dumps(case[k])}' for k in ("ret", "tainted", "calls")]
    lines = [f' "{k}": {json.dumps(v)}' for k, v in record.items() if k not in ("source", "case")]
    lines.append(f' "source": {rows(record["source"], "  ")}')
    lines.append(' "case": {\n' + ",\n".join(fields) + "\n }")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def load_regression(path):
    with open(path) as f:
        return Case.from_json(json.load(f)["case"])


# ---------------------------------------------------------------------------------------------
# JSON: tuples become lists (every list of a case is a tuple but the step and spec lists, since a
# list in an indexing key would mean fancy indexing), slices and Ellipsis become objects.


def _encode(x):
    if isinstance(x, (tuple, list)):
        return [_encode(v) for v in x]
    if isinstance(x, slice):
        return {"slice": [x.start, x.stop, x.step]}
    if x is Ellipsis:
        return {"ellipsis": True}
    return x


def _decode(x):
    if isinstance(x, list):
        return tuple(_decode(v) for v in x)
    if isinstance(x, dict):
        return slice(*x["slice"]) if "slice" in x else Ellipsis
    return x
