"""Python's `while` and `if` made traceable, as TensorFlow's AutoGraph does: the function's source
is rewritten so that each loop and branch calls _control.py with its condition and its body as
functions of the variables it assigns. Where the condition is a Python value the call runs the
statement as Python would; where it is traced, the statement becomes a loop or branch of the IR.

A function whose returns sit in `if`s (`if dets.size == 0: return None`) is first given one
exit: the statements after such an `if` move into its paths that do not return, each `return x`
becomes an assignment to one variable, and the function returns it at its end; the branch then
merges what each path returns (a Choice where they differ in kind, _choice.py).

The rewrite keeps every line where it was (ops name the user's file and line) and runs only
while tracing: a call that runs in NumPy (a graph break) runs the function as written."""
import ast
import copy
import functools
import inspect
import itertools
import linecache
import operator
import textwrap
import types

from ._errors import user_file

_CF = "__strider_cf"  # the name the rewritten code reaches _control.py by (a closure cell)
_cache = {}           # code object -> the rewritten code object, or None where nothing changed
_bounds = {}          # code object -> slice_bound_parameters


class _Names:
    """Names a statement list assigns and loads, not looking into nested functions or classes;
    and the names whose items it assigns (`lst[k] = v`, in a converted `if` too: `items`). A
    walk of its own, in the order of ast.NodeVisitor's: the rewrite asks this of every loop and
    branch, and a visitor's method lookups made it a tenth of a first call's conversion."""

    def __init__(self, nodes):
        self.stored, self.loaded, self.items = [], set(), []
        stack = list(reversed(nodes))
        while stack:
            node = stack.pop()
            for n in getattr(node, "strider_items", ()):  # a converted `if`'s
                self._item(n)
            kind = type(node)
            if kind is ast.Name:
                if isinstance(node.ctx, (ast.Store, ast.Del)):  # (`del a` unbinds it: a store)
                    if node.id not in self.stored:
                        self.stored.append(node.id)
                else:
                    self.loaded.add(node.id)
                continue
            if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
                if node.name not in self.stored:
                    self.stored.append(node.name)
                continue
            if kind is ast.Lambda:  # a lambda reads the names it closes over
                self.loaded.update(n.id for n in _walk(node.body) if isinstance(n, ast.Name))
                continue
            if kind is ast.AugAssign and isinstance(node.target, ast.Name):  # `count += 1` reads count first
                self.loaded.add(node.target.id)
            if kind is ast.Subscript:
                if isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name):
                    self._item(node.value.id)
            elif kind is ast.Call:
                f = node.func  # `x[k] op= v` rewritten: augitem_(op, x, k, v)
                if (isinstance(f, ast.Attribute) and f.attr == "augitem_" and isinstance(f.value, ast.Name)
                        and f.value.id == _CF and isinstance(node.args[1], ast.Name)):
                    self._item(node.args[1].id)
            stack.extend(reversed(_children(node)))

    def _item(self, name):
        if name not in self.items:
            self.items.append(name)


def _children(node):
    """ast.iter_child_nodes(node), as a list: the walks below, without its generators."""
    out = []
    for field in node._fields:
        value = getattr(node, field, None)
        if type(value) is list:
            out.extend(c for c in value if isinstance(c, ast.AST))
        elif isinstance(value, ast.AST):
            out.append(value)
    return out


def _walk(node):
    """The nodes of `node`'s tree in ast.walk's order, as a list, three times as fast: the rewrite
    walks the subtrees of every loop and branch."""
    out = [node]
    for n in out:
        out.extend(_children(n))
    return out


def _located(node):
    """ast.fix_missing_locations(node), with _walk's loop instead of its recursion over
    ast.iter_child_nodes (a fifth of a first call's conversion): a node without a position
    takes its parent's."""
    stack = [(node, 1, 0, 1, 0)]
    while stack:
        n, line, col, end_line, end_col = stack.pop()
        if "lineno" in n._attributes:
            if not hasattr(n, "lineno"):
                n.lineno = line
            else:
                line = n.lineno
            if not hasattr(n, "col_offset"):
                n.col_offset = col
            else:
                col = n.col_offset
            if getattr(n, "end_lineno", None) is None:
                n.end_lineno = end_line
            else:
                end_line = n.end_lineno
            if getattr(n, "end_col_offset", None) is None:
                n.end_col_offset = end_col
            else:
                end_col = n.end_col_offset
        stack.extend((c, line, col, end_line, end_col) for c in _children(n))
    return node


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def _jumps(nodes):
    """The return, break and continue statements in `nodes` that leave them (not those of nested
    functions, nor break and continue of loops nested inside). Statements alone are searched: a
    function holding a yield or an await is not rewritten (_rewritten_code), and the rewrite runs
    this on every loop and branch."""
    found = []

    def walk(node, in_loop):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return
        if isinstance(node, ast.Return) or (isinstance(node, (ast.Break, ast.Continue)) and not in_loop):
            found.append(node)
        loop = isinstance(node, (ast.For, ast.While, ast.AsyncFor))
        for field in _BLOCKS:
            for child in getattr(node, field, ()):
                walk(child, in_loop or (loop and field == "body"))

    for n in nodes:
        walk(n, False)
    return found


_RETURN = "__strider_return"
_GROWTH = 8  # a single exit may copy statements into several paths: at most this many times the function


def _if_returns(stmts):
    """The returns of stmts, each at their top level or in `if`s only; None where one sits in a
    loop, a with or a try."""
    found = []
    for s in stmts:
        if isinstance(s, ast.Return):
            found.append(s)
        elif isinstance(s, ast.If):
            for part in (s.body, s.orelse):
                inner = _if_returns(part)
                if inner is None:
                    return None
                found += inner
        elif any(isinstance(j, ast.Return) for j in _jumps([s])):
            return None
    return found


def _ends(stmts):
    """Whether every path through stmts returns or raises."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    return isinstance(last, ast.If) and _ends(last.body) and _ends(last.orelse)


def _tail_returns(stmts):
    """stmts with what follows an `if` that returns on some path moved into its paths that do
    not end: every return then ends its path."""
    for i, s in enumerate(stmts):
        if isinstance(s, ast.If) and any(isinstance(j, ast.Return) for j in _jumps([s])):
            rest = stmts[i + 1:]
            s.body = _tail_returns(s.body if _ends(s.body) else s.body + copy.deepcopy(rest))
            s.orelse = _tail_returns(s.orelse if _ends(s.orelse) else s.orelse + copy.deepcopy(rest))
            _spans(s)
            return stmts[:i + 1]
    return stmts


def _spans(s):
    """Ends s's lines at the last of what it now holds (statements moved into it): liveness asks
    which loads lie outside a statement's lines."""
    s.end_lineno = max(getattr(n, "end_lineno", None) or s.lineno for n in _walk(s))
    return s


class _Returns(ast.NodeTransformer):
    """Each `return x` (not in nested functions) as what replace(it) gives: a statement or a list
    of them; None keeps it."""

    def __init__(self, replace):
        self.replace = replace

    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

    def visit_Return(self, node):
        return self.replace(node) or node


def _assign(name, value):
    return ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=value)


def _returned(node):
    """`return x` as `__strider_return = x`."""
    return ast.copy_location(_assign(_RETURN, node.value or ast.Constant(None)), node)


def _single_exit(fn_node):
    """Gives the function one return, at its end, where its returns sit in `if`s; whether it did."""
    returns = _if_returns(fn_node.body)
    if not returns or all(any(r is s for s in fn_node.body) for r in returns):
        return False
    size = sum(1 for _ in _walk(fn_node))
    body = _tail_returns(copy.deepcopy(fn_node.body))
    if sum(1 for s in body for _ in _walk(s)) > _GROWTH * size:
        return False
    first = body[0]
    init = _assign(_RETURN, ast.Constant(None))
    init.lineno = init.end_lineno = first.lineno
    # one line past the function: outside every `if`, so that each one merges the value
    end = ast.Return(value=_load(_RETURN))
    end.lineno = end.end_lineno = fn_node.end_lineno + 1
    for n in (init, end):
        n.col_offset = n.end_col_offset = first.col_offset
    fn_node.body = [_located(init)] + [_Returns(_returned).visit(s) for s in body] + [
        _located(end)]
    return True


_RETURNED = "__strider_returned"


def _lift_loop_returns(stmts, loads, later, fresh):
    """stmts with each loop whose returns sit in `if`s of its body (or at its top level) made to
    leave by `break` with a fresh flag up, and to return after it: `if flag: return x`, x as it
    was where Python returned (a break leaves the loop's variables as they were), so that loops
    and branches of the IR carry flags, not return values of every kind. Inner loops first: an
    outer loop then lifts the inner one's `if flag: return x`. `loads`: the lines each name is
    loaded on in the function as written; `later` takes the lines x's names are now read on."""
    out = []
    for s in stmts:
        if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for field in ("body", "orelse", "finalbody"):
                if isinstance(getattr(s, field, None), list):
                    setattr(s, field, _lift_loop_returns(getattr(s, field), loads, later, fresh))
            for h in getattr(s, "handlers", ()):
                h.body = _lift_loop_returns(h.body, loads, later, fresh)
        returns = _if_returns(s.body) if isinstance(s, (ast.For, ast.While)) else None
        out += _lifted(s, returns, loads, later, fresh()) if returns else [s]
    return out


def _lifted(loop, returns, loads, later, k):
    """The loop's returns lifted (_lift_loop_returns): its flags lowered before it, the loop, the
    returns after it. The loop's `strider_guarded`: the names the returns read that may be
    unassigned where the loop starts, which it may then carry from a placeholder (_control.py):
    assigned on every path of a trip before the return (or the `for` target), read nowhere else
    outside the loop, and not read in a trip (or a `while`'s test) before it assigns them."""
    flags = {id(r): f"{_RETURNED}_{k}_{i}" for i, r in enumerate(returns)}
    target = [n.id for n in _target_names(loop.target) if n is not None] if isinstance(loop, ast.For) else []
    read = {id(r): {n.id for n in _walk(r.value) if isinstance(n, ast.Name)} if r.value else set()
            for r in returns}
    guarded = set().union(*(_assigned_before(loop.body, r, read[id(r)], loads) | (read[id(r)] & set(target))
                            for r in returns))
    lift = _Returns(lambda r: [ast.copy_location(_assign(flags[id(r)], ast.Constant(True)), r),
                               ast.copy_location(ast.Break(), r)])
    body = []
    for s in loop.body:  # (a return at the body's top level becomes two statements of it)
        v = lift.visit(s)
        body += v if isinstance(v, list) else [v]
    loop.body = body
    inside = set(range(loop.lineno, loop.end_lineno + 1))
    tested = _Names([loop.test]).loaded if isinstance(loop, ast.While) else set()  # read before every trip
    first = _reads_first(loop.body)
    loop.strider_guarded = sorted(n for n in guarded - tested if loads.get(n, set()) <= inside
                                  and (n in target or n not in first))
    # the returns sit on the loop's last line (within what holds it, before what follows it);
    # what they read counts as read just past the loop, where the loop leaves it
    for r in returns:
        for n in read[id(r)] | {flags[id(r)]}:
            later.setdefault(n, set()).add(loop.end_lineno + 1)
    ifs = [ast.If(test=_load(flags[id(r)]), body=[ast.Return(value=r.value)], orelse=[]) for r in returns]
    for stmt, r in zip(ifs, returns):
        ast.copy_location(stmt.body[0], r)
        stmt.lineno = stmt.end_lineno = loop.end_lineno
        stmt.col_offset = stmt.end_col_offset = loop.col_offset
    return [_at(_assign(flags[id(r)], ast.Constant(False)), loop) for r in returns] + [loop] + [
        _located(stmt) for stmt in ifs]


def _holds(stmts, node):
    return any(n is node for s in stmts for n in _walk(s))


def _assigned_before(stmts, node, read, loads):
    """The names of `read` that stmts assign on every path to node (a return in their `if`s).
    An `if` on that path whose side assigns some gets them as its `strider_guarded`: it may merge
    them from a placeholder on its other side where they are read nowhere else outside it, and
    not in the side before it assigns them."""
    names = set()
    for s in stmts:
        if not _holds([s], node):
            names |= _surely_assigned([s]) & read
            continue
        if isinstance(s, ast.If):
            side = s.body if _holds(s.body, node) else s.orelse
            inside = set(range(s.lineno, s.end_lineno + 1))
            first = _reads_first(side)
            mine = {n for n in _assigned_before(side, node, read, loads)
                    if loads.get(n, set()) <= inside and n not in first}
            s.strider_guarded = sorted(set(getattr(s, "strider_guarded", ())) | mine)
            names |= mine
        return names
    return names


def _surely_assigned(stmts):
    """The names stmts assign on every path (a lifted loop's placeholders too, not a loop's
    others: it may not run; nothing in a with or try: it may leave early)."""
    names = set()
    for s in stmts:
        if isinstance(s, ast.If):
            names |= _surely_assigned(s.body) & _surely_assigned(s.orelse)
        elif isinstance(s, (ast.For, ast.While)):
            names |= set(getattr(s, "strider_guarded", ()))
        elif not isinstance(s, (ast.With, ast.Try, ast.AsyncWith, ast.AsyncFor)) and not hasattr(s, "cases"):
            names |= set(_Names([s]).stored)
    return names


def _exit(s, jump=ast.Break):
    """Whether s is `if t: break` (no else): a loop of the IR leaves where t holds (break_if); or
    `if t: continue` where `jump` is ast.Continue (body() turns it around)."""
    return isinstance(s, ast.If) and not s.orelse and len(s.body) == 1 and isinstance(s.body[0], jump)


def _turn_continues(stmts):
    """A loop body with each `if t: continue` (no else) at its top level turned into `if not t:`
    around the rest, as Python runs them, so that the branch is one a loop can trace; the rest's
    own `if t: continue`s too (`if not x.size: continue` twice in one body). The break flag's
    `if flag: break` at the end stays out: a trip that continues has not raised it."""
    for i, s in enumerate(stmts):
        if _exit(s, ast.Continue):
            rest = _turn_continues(stmts[i + 1:])
            leave = rest[-1:] if rest and getattr(rest[-1], "strider_leave", False) else []
            rest = rest[:len(rest) - len(leave)]
            if not rest:
                return stmts[:i] + leave
            test = ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=s.test), s.test)
            return stmts[:i] + [_around(test, rest, s)] + leave
    return stmts


def _flag_jumps(stmts, flag, jump):
    """A loop body's statements with each `jump` (ast.Break, ast.Continue) inside its `if`s
    setting `flag` instead, and what follows run only while the flag is down (Python's loop would
    have left, or gone to its next trip)."""
    out = []
    for i, s in enumerate(stmts):
        if isinstance(s, jump):
            out.append(ast.copy_location(_assign(flag, ast.Constant(True)), s))
            return out
        if isinstance(s, ast.If) and any(isinstance(j, jump) for j in _jumps([s])):
            s.body = _flag_jumps(s.body, flag, jump) or [ast.Pass()]
            s.orelse = _flag_jumps(s.orelse, flag, jump)
            out.append(s)
            rest = _flag_jumps(stmts[i + 1:], flag, jump)
            if rest:
                out.append(_around(ast.UnaryOp(op=ast.Not(), operand=_load(flag)), rest, rest[0]))
            return out
        out.append(s)
    return out


def _around(test, body, at):
    """`if test:` around body (at `at`'s place), merging from a placeholder what the statements in
    it may (strider_guarded): each reads them only within itself, so within this `if` too."""
    s = _spans(ast.copy_location(ast.If(test=test, body=body, orelse=[]), at))
    s.strider_guarded = sorted({n for b in body for node in _walk(b) for n in getattr(node, "strider_guarded", ())})
    return s


def _load(name):
    return ast.Name(id=name, ctx=ast.Load())


def _cf(attr):
    return ast.Attribute(value=_load(_CF), attr=attr, ctx=ast.Load())


def _range_call(node):
    """Whether node is a call range(...) (whatever `range` names when it runs) of positional arguments."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"
            and not node.keywords and 1 <= len(node.args) <= 3 and not any(isinstance(a, ast.Starred) for a in node.args))


def _operand_kept(op, left, right):
    """Whether `left op right` needs no binop_: an operator it does not take, a literal right
    operand, or an int literal left one (whose operator an Extent's reflected one overrides)."""
    return (type(op).__name__ not in OPERATORS or isinstance(right, ast.Constant)
            or (isinstance(left, ast.Constant) and type(left.value) in (int, bool)))


def _operator_rewritten(n):
    """Whether n is an operator binop_ or augop_ takes (`0.5 * n` of a run-time length n: float's
    own operator reads its bound), in a function with nothing else to rewrite."""
    if isinstance(n, ast.BinOp):
        return not _operand_kept(n.op, n.left, n.right)
    if isinstance(n, ast.Compare) and len(n.ops) == 1:
        return not _operand_kept(n.ops[0], n.left, n.comparators[0])
    return isinstance(n, ast.AugAssign) and not _operand_kept(n.op, n.target, n.value)


# the operators binop_ and augop_ (_control.py) take, by their ast names
OPERATORS = {"Add": operator.add, "Sub": operator.sub, "Mult": operator.mul, "Div": operator.truediv,
             "FloorDiv": operator.floordiv, "Mod": operator.mod, "Pow": operator.pow, "Lt": operator.lt,
             "LtE": operator.le, "Gt": operator.gt, "GtE": operator.ge, "Eq": operator.eq, "NotEq": operator.ne}
INPLACE = {"Add": operator.iadd, "Sub": operator.isub, "Mult": operator.imul, "Div": operator.itruediv,
           "FloorDiv": operator.ifloordiv, "Mod": operator.imod, "Pow": operator.ipow}


def _call(attr, *args):
    return ast.Call(func=_cf(attr), args=list(args), keywords=[])


def _key(node):
    """A subscript's key as an expression: its slices as slice() calls."""
    if isinstance(node, ast.Slice):
        return ast.Call(func=_cf("slice_"), args=[n or ast.Constant(None) for n in (node.lower, node.upper, node.step)],
                        keywords=[])
    if isinstance(node, ast.Tuple):
        return ast.Tuple(elts=[_key(e) for e in node.elts], ctx=ast.Load())
    return node


def _thunk(expr):
    return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
                      body=expr)


def _tuple(names, ctx=ast.Load):
    return ast.Tuple(elts=[ast.Name(id=n, ctx=ctx()) for n in names], ctx=ctx())


def _values(names):
    """The variables' values as a tuple, Undefined for one not yet assigned."""
    return ast.Tuple(elts=[_call("maybe", _thunk(_load(n)), ast.Constant(n)) for n in names], ctx=ast.Load())


def _state_of(names, body):
    """What makes the variables' values as a region's body returns them (a fresh node each
    call): Undefined for one the body may `del` (RetinaFace's `del anchors` in a branch), else as
    they are."""
    deleted = {t.id for stmt in body for n in _walk(stmt) if isinstance(n, ast.Delete)
               for t in n.targets if isinstance(t, ast.Name)}
    return functools.partial(_values if deleted & set(names) else _tuple, names)


def _strs(names):
    return ast.Tuple(elts=[ast.Constant(n) for n in names], ctx=ast.Load())


def _def(name, params, body):
    return ast.FunctionDef(name=name, args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params],
                                                         kwonlyargs=[], kw_defaults=[], defaults=[]),
                           body=body, decorator_list=[], returns=None)


def _outer_comprehensions(node):
    """The list comprehensions in node's expressions, not those inside other comprehensions,
    lambdas or nested functions."""
    found = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ListComp):
            found.append(child)
        elif not isinstance(child, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.GeneratorExp,
                                    ast.SetComp, ast.DictComp)):
            found.extend(_outer_comprehensions(child))
    return found


class _Renamed(ast.NodeTransformer):
    """Copies of expressions with some names renamed (a comprehension's own variables), not
    where a lambda or comprehension inside binds the name again."""

    def __init__(self, names):
        self.names = names

    def copy(self, node):
        return self.visit(copy.deepcopy(node))

    def visit_Name(self, node):
        if node.id in self.names:
            node.id = self.names[node.id]
        return node

    def generic_visit(self, node):
        if isinstance(node, ast.Lambda):
            bound = {a.arg for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs}
        elif isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)):
            bound = {n.id for g in node.generators for n in _walk(g.target) if isinstance(n, ast.Name)}
        else:
            bound = set()
        if bound & set(self.names):
            return node  # its own variable of that name
        return super().generic_visit(node)


class _Replaced(ast.NodeTransformer):
    """The statement with each comprehension (by identity) replaced by its list's name."""

    def __init__(self, made):
        self.made = made

    def visit_ListComp(self, node):
        name = self.made.get(id(node))
        return ast.copy_location(_load(name), node) if name else node


def _target_names(node):
    """The names a `for` target assigns (nested tuples of names too); a None where it assigns
    anything else (an attribute, an item, a starred name)."""
    if isinstance(node, ast.Name):
        return [node]
    if isinstance(node, ast.Tuple):
        return [n for e in node.elts for n in _target_names(e)]
    return [None]


def _target(node):
    """A `for` target for _control.for_stmt: a name's string, a tuple's tuple of them."""
    if isinstance(node, ast.Name):
        return ast.Constant(node.id)
    return ast.Tuple(elts=[_target(e) for e in node.elts], ctx=ast.Load())


class _Rewrite(ast.NodeTransformer):
    def __init__(self, later_loads, local_names, deferred):
        self.count = 0
        self.local_names = local_names  # the function's own variables (not its globals nor closure's)
        self.loops = 0  # loops around the statement being rewritten
        self.loop = None  # the innermost of them
        self.changed = False
        self.later_loads = later_loads  # name -> the lines it is loaded on, in the whole function
        self.deferred = deferred  # the names nested functions and lambdas load (whenever they are called)

    def fresh(self):
        self.count += 1
        return self.count

    # nested functions and classes keep their own code
    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

    def test(self, node):
        """A condition whose `and`, `or`, `not` and chained comparisons work on traced values."""
        if isinstance(node, ast.BoolOp):
            fn = "and_" if isinstance(node.op, ast.And) else "or_"
            return ast.copy_location(_call(fn, *[_thunk(self.test(v)) for v in node.values]), node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return ast.copy_location(_call("not_", self.test(node.operand)), node)
        if isinstance(node, ast.Compare) and len(node.ops) > 1:
            left, parts = node.left, []
            for op, right in zip(node.ops, node.comparators):
                parts.append(ast.copy_location(ast.Compare(left=left, ops=[op], comparators=[right]), node))
                left = right
            return ast.copy_location(_call("and_", *[_thunk(self.visit(p)) for p in parts]), node)
        return self.visit(node)

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):  # a Choice's `is None`
            self.changed = True
            return ast.copy_location(_call("is_", node.left, node.comparators[0],
                                           ast.Constant(isinstance(node.ops[0], ast.IsNot))), node)
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):  # `k in unique_classes`
            self.changed = True
            return ast.copy_location(_call("in_", node.left, node.comparators[0],
                                           ast.Constant(isinstance(node.ops[0], ast.NotIn))), node)
        if len(node.ops) == 1:
            return self._operator(node, node.ops[0], node.left, node.comparators[0])
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        return self._operator(node, node.op, node.left, node.right)

    def visit_Subscript(self, node):
        # lst[k] read, where k may be an index only the run knows (item_), or a slice with a bound
        # that may be a run-time length; other slices stay Python's
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load) or isinstance(node.slice, (ast.Tuple, ast.Constant)) or (
                isinstance(node.slice, ast.Slice) and all(isinstance(b, (ast.Constant, type(None))) for b in (
                    node.slice.lower, node.slice.upper, node.slice.step))):
            return node
        self.changed = True
        return ast.copy_location(_call("item_", node.value, _key(node.slice)), node)

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        if isinstance(node.target, ast.Subscript) and type(node.op).__name__ in INPLACE:
            # x[k] op= v as Python runs it (get, in-place op, set) in augitem_, which also takes
            # an x[k] that strider holds as a copy (k known only at run time) where NumPy's is a view
            self.changed = True
            t = node.target
            return ast.copy_location(ast.Expr(_call("augitem_", ast.Constant(type(node.op).__name__), t.value,
                                                    _key(t.slice), _thunk(node.value))), node)
        if not isinstance(node.target, ast.Name) or _operand_kept(node.op, _load(node.target.id), node.value):
            return node
        self.changed = True
        return ast.copy_location(ast.Assign(targets=[node.target], value=_call(
            "augop_", ast.Constant(type(node.op).__name__), _load(node.target.id), node.value)), node)

    def _operator(self, node, op, left, right):
        """`left op right` as binop_ where right may be a run-time length that float's (or a
        NumPy scalar's) own operator would read as its bound: an Extent is an int."""
        if _operand_kept(op, left, right):
            return node
        self.changed = True
        return ast.copy_location(_call("binop_", ast.Constant(type(op).__name__), left, right), node)

    def visit_ListComp(self, node):
        # [i for i in range(n)]: a list of a run-time length where n is traced (range_list)
        g = node.generators[0]
        if (len(node.generators) == 1 and not g.ifs and not g.is_async and isinstance(g.target, ast.Name)
                and isinstance(node.elt, ast.Name) and node.elt.id == g.target.id and _range_call(g.iter)):
            self.changed = True
            return ast.copy_location(_call("range_list", ast.Constant(None), g.iter.func,
                                           *[self.visit(a) for a in g.iter.args]), node)
        if (len(node.generators) == 1 and not g.ifs and not g.is_async and isinstance(g.target, ast.Name)
                and not any(isinstance(n, ast.NamedExpr) for n in _walk(node.elt))):  # (`:=` binds outside)
            # [f(v) for v in items]: a loop of the IR where the items are a run-time length's (listcomp_)
            self.changed = True
            fn = ast.Lambda(args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=g.target.id)], kwonlyargs=[],
                                               kw_defaults=[], defaults=[]), body=self.visit(node.elt))
            return ast.copy_location(_call("listcomp_", self._loop_iter(g.iter), fn), node)
        return self.generic_visit(node)

    def visit_BoolOp(self, node):
        # `a and b` as a value (a condition's is test()'s): a branch where a is traced
        self.changed = True
        fn = "and_value" if isinstance(node.op, ast.And) else "or_value"
        return ast.copy_location(_call(fn, *[_thunk(self.visit(v)) for v in node.values]), node)

    def visit_UnaryOp(self, node):
        # `not a` as a value (a condition's is test()'s): Python's bool of a's truth, traced
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        self.changed = True
        return ast.copy_location(_call("not_value", node.operand), node)

    def visit_IfExp(self, node):
        # `a if c else b`: a branch where c is traced (ifexp_)
        self.changed = True
        return ast.copy_location(_call("ifexp_", self.test(node.test), _thunk(self.visit(node.body)),
                                       _thunk(self.visit(node.orelse))), node)

    def visit_Call(self, node):
        if (isinstance(node.func, ast.Name) and node.func.id == "list" and len(node.args) == 1 and not node.keywords
                and _range_call(node.args[0])):  # list(range(n)): as [i for i in range(n)]
            self.changed = True
            return ast.copy_location(_call("range_list", node.func, node.args[0].func,
                                           *[self.visit(a) for a in node.args[0].args]), node)
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1 and not node.keywords:
            self.changed = True
            return ast.copy_location(_call("len_", node.args[0]), node)
        # the callee's loops and branches too (`f(x)`, `self.f(x)`, `table[key](x)`, `make()(x)`)
        if isinstance(node.func, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
            self.changed = True
            node.func = ast.copy_location(_call("callee", node.func), node.func)
        return node

    def visit_Expr(self, node):
        # lst.append(v) and lst.extend(v) on a local name: assignments, so that a loop carries the
        # list; on a global or a closure variable (an assignment would make it local), a call that
        # refuses to change it in a loop or branch on a traced condition
        c = node.value
        if (isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr in ("append", "extend")
                and isinstance(c.func.value, ast.Name) and len(c.args) == 1 and not c.keywords):
            self.changed = True
            name = c.func.value.id
            value = self.visit(c.args[0])
            if name not in self.local_names:
                return ast.copy_location(ast.Expr(_call("outer_append", _load(name), ast.Constant(c.func.attr), value)),
                                         node)
            return ast.copy_location(_assign(name, _call(c.func.attr, _load(name), value)), node)
        return self.generic_visit(node)

    def body(self, stmts, in_loop):
        """Converted statements; a loop's body with its `if t: continue`s turned around first
        (_turn_continues); filtering list comprehensions made loops first (_comprehensions)."""
        out = []
        for s in _turn_continues(stmts) if in_loop else stmts:
            for h in self._comprehensions(s):
                r = self.visit(h)
                out.extend(r if isinstance(r, list) else [r])
        return out

    def _comprehensions(self, stmt):
        """A simple statement's list comprehensions of one `for` with `if`s (`[i for i in
        range(n) if s[i] > t]`: a test per item, traced where the items are) as loops that fill a
        fresh list before it, in the order Python evaluates them; the statement reads the lists."""
        if not isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr)):
            return [stmt]
        comps = [n for n in _outer_comprehensions(stmt) if len(n.generators) == 1 and n.generators[0].ifs
                 and not n.generators[0].is_async]
        if not comps:
            return [stmt]
        out, made = [], {}
        for comp in comps:
            k = self.fresh()
            name, gen = f"__strider_list_{k}", comp.generators[0]
            own = [n.id for n in _walk(gen.target) if isinstance(n, ast.Name)]
            rename = _Renamed({n: f"__strider_item_{k}_{n}" for n in own})
            test = gen.ifs[0] if len(gen.ifs) == 1 else ast.BoolOp(op=ast.And(), values=gen.ifs)
            append = ast.Expr(ast.Call(func=ast.Attribute(value=_load(name), attr="append", ctx=ast.Load()),
                                       args=[rename.copy(comp.elt)], keywords=[]))
            loop = ast.For(target=rename.copy(gen.target), iter=gen.iter,
                           body=[ast.If(test=rename.copy(test), body=[append], orelse=[])], orelse=[])
            out += [_assign(name, ast.List(elts=[], ctx=ast.Load())),
                    loop]
            made[id(comp)] = name
            self.local_names.add(name)
            self.later_loads[name] = {-1}  # read after its loop, by the statement
        out = [_located(ast.copy_location(n, stmt)) for n in out]
        return out + [_Replaced(made).visit(stmt)]

    def _flag(self, node, jump, name):
        """Makes the loop's `jump`s (ast.Break, ast.Continue) inside its `if`s set a fresh flag
        instead (_flag_jumps); the flag, or None where every one is `if t: jump` at the top."""
        simple = [s.body[0] for s in node.body if _exit(s, jump)]
        if not any(isinstance(j, jump) and not any(j is b for b in simple) for j in _jumps(node.body)):
            return None
        flag = f"__strider_{name}_{self.fresh()}"
        node.body = _flag_jumps(node.body, flag, jump)
        return flag

    def _loaded(self, flag, node):
        """Fills in the loop's locations; records where the flag is read (what a branch merges)."""
        _located(node)
        self.later_loads[flag] = {n.lineno for s in node.body for n in _walk(s)
                                  if isinstance(n, ast.Name) and n.id == flag and isinstance(n.ctx, ast.Load)}

    def _loop(self, node, convert):
        """A loop with its breaks and continues inside `if`s made flags, then converted: the
        continue flag lowered at each trip's start, the break flag before the loop and one
        `if flag: break` at the body's end."""
        out = []
        flag = self._flag(node, ast.Continue, "continue")
        if flag:
            node.body.insert(0, _at(_assign(flag, ast.Constant(False)), node.body[0]))
            self._loaded(flag, node)
        flag = self._flag(node, ast.Break, "break")
        if flag:
            leave = ast.If(test=_load(flag), body=[ast.Break()], orelse=[])
            leave.strider_leave = True
            # one line past the loop: outside every `if` in it, so that each one merges the flag
            leave.lineno = leave.end_lineno = node.end_lineno + 1
            leave.col_offset = leave.end_col_offset = node.col_offset
            node.body.append(leave)
            self._loaded(flag, node)
            out.append(_located(_at(_assign(flag, ast.Constant(False)), node)))
        self.loops += 1
        outer, self.loop = self.loop, node
        try:
            converted = convert(node)
        finally:
            self.loops -= 1
            self.loop = outer
        return out + (converted if isinstance(converted, list) else [converted])

    def visit_For(self, node):
        return self._loop(node, self._for)

    def _zip(self, node):
        """An argument of a `for` header's call, a zip(...) in enumerate(zip(...)) made _control's."""
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "zip"
                and not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args)):
            return ast.copy_location(_call("zip_", node.func, *[self.visit(a) for a in node.args]), node)
        return self.visit(node)

    def _loop_iter(self, it):
        """A `for` header's or a comprehension's iterable: range, enumerate and zip calls as
        _control's, whose bounds or lengths known only at run time make a loop of the IR
        (_control.range_; Python's range would take a run-time length for its bound)."""
        if (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in ("range", "enumerate", "zip")
                and not it.keywords and not any(isinstance(a, ast.Starred) for a in it.args)):
            return ast.copy_location(_call(it.func.id + "_", it.func, *[self._zip(a) for a in it.args]), it)
        return self.visit(it)

    def _for(self, node):
        body = self.body(node.body, True)
        node.iter = self._loop_iter(node.iter)
        targets = _target_names(node.target)
        exits = [s for s in body if _exit(s)]
        if (node.orelse or not all(isinstance(n, ast.Name) for n in targets)
                or [j for j in _jumps(body) if not any(j is e.body[0] for e in exits)]):
            node.body = body
            node.orelse = self.body(node.orelse, False)
            return node
        # for x in it: a loop of the IR where `it` is a range whose trips trace a loop or branch
        # on a traced condition (they would unroll into one region each), or an array of a
        # run-time length; Python's loop otherwise
        self.changed = True
        k = self.fresh()
        names = _Names([node.target] + body).stored
        inside = set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        first = _reads_first(node.body)
        live = [n for n in names if any(line not in inside for line in self.later_loads.get(n, ()))
                or n in first]
        state = _state_of(names, body)
        out = [_def(f"__strider_for_{k}", names, _with_exits(body, exits, state()) + [
            ast.Return(ast.Tuple(elts=[state(), ast.Constant(False)], ctx=ast.Load()))])]
        target = _target(node.target)
        items = _Names(body).items
        call = _call("for_stmt", node.iter, _load(f"__strider_for_{k}"), _values(names), _strs(names), _strs(live),
                     target, _strs(getattr(node, "strider_guarded", ())), _values(items), ast.Constant(bool(exits)))
        out.append(ast.Assign(targets=[_tuple(names, ast.Store)], value=call))
        out[-1].strider_items = items  # (a branch around it merges them: its body is a function _Names skips)
        return [_at(s, node) for s in out]

    def visit_If(self, node):
        if jumps := _jumps(node.body + node.orelse):
            if _exit(node) or _exit(node, ast.Continue):  # the loop's break_if, or body() turns it around
                node.test = self.test(node.test)
            else:
                node.test = self._left_to_python(node.test, "an `if`", jumps)
            node.body = self.body(node.body, False)
            node.orelse = self.body(node.orelse, False)
            return node
        self.changed = True
        k = self.fresh()
        # in a loop the test reads its names again on the next trip, after the branch
        tested = {n.id for n in _walk(node.test) if isinstance(n, ast.Name)} if self.loops else set()
        test = self.test(node.test)
        then = self.body(node.body, False) or [ast.Pass()]
        other = self.body(node.orelse, False) or [ast.Pass()]
        found = _Names(then + other)
        names = found.stored
        # the names whose items it assigns and that it does not assign: where they hold Python
        # lists, each side gets copies and the items merge (if_stmt); the sides take and return
        # them after the names, and the lists take the merged items in place
        items = [n for n in found.items if n not in names]
        # what outlives the branch: loaded after it (in its loop's trip, or past the loop), by a
        # nested function, or carried by the loop around it (read in a trip before it is
        # assigned: in this branch, the next trip's); not what code before it in the trip (or
        # the function) loads
        inside = set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        trip = set(range(self.loop.lineno, (self.loop.end_lineno or self.loop.lineno) + 1)) if self.loop else set()
        first = _reads_first(self.loop.body) if self.loop else set()
        live = [n for n in names if n in tested or n in self.deferred or n in first or any(
            line not in inside and (line > node.lineno or line < 0 or (self.loop and line not in trip))
            for line in self.later_loads.get(n, ()))]
        # a side that ends raising (a check whose message formats the data) is named so (_side_of_branch)
        sides = [f"__strider_{side}_{k}" + ("_raises" if body and isinstance(body[-1], ast.Raise) else "")
                 for side, body in (("then", node.body), ("else", node.orelse))]
        out = [_def(sides[0], names + items, then + [ast.Return(_state_of(names + items, then)())]),
               _def(sides[1], names + items, other + [ast.Return(_state_of(names + items, other)())])]
        call = _call("if_stmt", test, _load(sides[0]), _load(sides[1]),
                     _values(names + items), _strs(names + items), _strs(live), _strs(items),
                     _strs(getattr(node, "strider_guarded", ())))
        out.append(ast.Assign(targets=[_tuple(names, ast.Store)], value=call) if names else ast.Expr(call))
        out[-1].strider_items = items
        return [_at(s, node) for s in out]

    def _left_to_python(self, test, what, jumps):
        """The test of an `if` or `while` that stays Python's (around `jumps` that leave it, or a
        loop's `else` where there are none), asked through python_test: a traced value there is
        refused saying why, not with bool()'s generic message."""
        self.changed = True
        kinds = sorted({f"a `{type(j).__name__.lower()}`" for j in jumps})
        why = (f"around {' and '.join(kinds)}" if kinds else "with an `else` clause") + (" inside a loop" if self.loops else "")
        return ast.copy_location(_call("python_test", self.test(test), ast.Constant(f"{what} {why}")), test)

    def visit_While(self, node):
        return self._loop(node, self._while)

    def _while(self, node):
        body = self.body(node.body, True)
        # `if t: break` at the top level of the body leaves the loop; other jumps stay Python's
        exits = [s for s in body if _exit(s)]
        if node.orelse or (jumps := [j for j in _jumps(body) if not any(j is e.body[0] for e in exits)]):
            node.test = self._left_to_python(node.test, "a `while` loop", [] if node.orelse else jumps)
            node.body = body
            return node
        self.changed = True
        k = self.fresh()
        names = _Names(body).stored
        state = _state_of(names, body)
        new_body = _with_exits(body, exits, state()) + [
            ast.Return(ast.Tuple(elts=[state(), ast.Constant(False)], ctx=ast.Load()))]
        # what outlives an iteration: read by the condition, after the loop, or before the body assigns it
        inside = set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        cond_loads, first = _Names([node.test]).loaded, _reads_first(node.body)
        live = [n for n in names if n in cond_loads or any(line not in inside for line in self.later_loads.get(n, ()))
                or n in first]
        out = [_def(f"__strider_cond_{k}", names, [ast.Return(self.test(node.test))]),
               _def(f"__strider_body_{k}", names, new_body)]
        items = _Names(body).items
        call = _call("while_stmt", _load(f"__strider_cond_{k}"), _load(f"__strider_body_{k}"), _values(names),
                     _strs(names), _strs(live), _strs(getattr(node, "strider_guarded", ())), _values(items))
        out.append(ast.Assign(targets=[_tuple(names, ast.Store)], value=call) if names else ast.Expr(call))
        out[-1].strider_items = items
        return [_at(s, node) for s in out]


def _with_exits(body, exits, state):
    """The body with each `if t: break` of `exits` asking break_if, and returning (the state,
    True) where the loop is left."""
    return [ast.copy_location(ast.If(test=_call("break_if", s.test, _thunk(state)),
                                     body=[ast.Return(ast.Tuple(elts=[state, ast.Constant(True)], ctx=ast.Load()))],
                                     orelse=[]), s) if any(s is e for e in exits) else s for s in body]


def _at(stmt, node):
    """A generated statement on the first line of the statement it stands for (a frame running it
    reports that line: the `while` or `if` line, where ops it records are from). What it holds
    without a location takes its line when the module is fixed once, at the end."""
    stmt.lineno = stmt.end_lineno = node.lineno
    stmt.col_offset, stmt.end_col_offset = node.col_offset, node.col_offset
    return stmt


def _reads_first(stmts):
    """The names `stmts` may load before they assign them: values the previous iteration left.
    An `if` assigns a name where both its paths do; a loop's body may not run; a `for` assigns its
    target before each trip."""
    return _first_uses(stmts, frozenset())[0]


def _first_uses(stmts, assigned):
    """(the names `stmts` may load before assigning them, given those assigned before them; the
    names surely assigned after them)."""
    read, assigned = set(), set(assigned)
    for s in stmts:
        if isinstance(s, ast.If):
            read |= _Names([s.test]).loaded - assigned
            (r1, a1), (r2, a2) = _first_uses(s.body, assigned), _first_uses(s.orelse, assigned)
            read |= r1 | r2
            assigned |= a1 & a2
        elif isinstance(s, (ast.For, ast.While)):
            read |= _Names([s.iter] if isinstance(s, ast.For) else [s.test]).loaded - assigned
            target = set(_Names([s.target]).stored) if isinstance(s, ast.For) else set()
            # (the target's names: only the `else` may read them first, the trips assign them)
            read |= _first_uses(s.body + s.orelse, assigned)[0] - target
            read |= _first_uses(s.orelse, assigned)[0] & target
        else:
            v = _Names([s])
            read |= v.loaded - assigned
            assigned |= set(v.stored)
    return read, assigned


def _loads_by_line(fn_node):
    found = {}
    for n in _walk(fn_node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            found.setdefault(n.id, set()).add(n.lineno)
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):  # (reads its target)
            found.setdefault(n.target.id, set()).add(n.lineno)
    return found


def _last_line(code):
    """The last line `code` (and the functions, lambdas and comprehensions in it) has code on."""
    last = code.co_firstlineno
    for _, end, _, _ in code.co_positions():
        if end is not None and end > last:
            last = end
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            last = max(last, _last_line(c))
    return last


def _parsed(code):
    """(the module, the function's node) parsed anew from the source of `code`, at its lines in the file
    (of the code: a function's would follow a functools.wraps wrapper's __wrapped__); the node
    None where the source is not that function's. Its lines run to the last its code is on
    (inspect finds the end by tokenizing the file from the function on: ten times slower); where
    they do not parse as the function (a `pass` ending it leaves no code), inspect's."""
    first = code.co_firstlineno
    lines = linecache.getlines(code.co_filename)[first - 1:_last_line(code)]
    for attempt in range(2):
        try:
            if attempt:
                lines, first = inspect.getsourcelines(code)
            text = "".join(lines)
            dedented = textwrap.dedent(text)
            tree = ast.parse("\n" * (first - 1) + dedented)
        except (OSError, TypeError, SyntaxError):
            continue
        if code.co_name == "<lambda>":  # (the columns dedent took off: the code's are the file's)
            return tree, _lambda_def(tree, code, text.find("\n") - dedented.find("\n"))
        node = tree.body[0] if tree.body else None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == code.co_name:
            return tree, node
    return None, None


def _lambda_def(tree, code, shift):
    """The lambda of `code` in `tree` (the lines it is on) as a function returning its body
    (`strider.compile(lambda x: helper(x))`: the helper's loops are rewritten as a def's are); of
    several on its first line (albumentations' `{"e": lambda x: x, "h": lambda x: hflip(x)}`), the
    one whose body holds the columns of the code's instructions. None where that leaves none or
    several."""
    found = [n for n in _walk(tree) if isinstance(n, ast.Lambda) and n.lineno == code.co_firstlineno]
    if len(found) > 1:
        spans = [p for p in code.co_positions() if None not in p and (p[0], p[2]) < (p[1], p[3])]  # (RESUME: empty)
        if spans:
            first, last = min((p[0], p[2] - shift) for p in spans), max((p[1], p[3] - shift) for p in spans)
            found = [n for n in found if (n.body.lineno, n.body.col_offset) <= first
                     and last <= (n.body.end_lineno, n.body.end_col_offset)]
    if len(found) != 1 or any(isinstance(n, ast.Lambda) for n in _walk(found[0].body)):
        return None
    node = found[0]
    fn = ast.parse("def _(): pass").body[0]  # (the fields of this Python's FunctionDef)
    fn.name, fn.args, fn.body = code.co_name, node.args, [ast.copy_location(ast.Return(node.body), node.body)]
    return ast.copy_location(fn, node)


def _rewritten_code(fn):
    code = fn.__code__
    if code in _cache:
        return _cache[code]
    _cache[code] = None
    tree, fn_node = _parsed(code)
    if not isinstance(fn_node, ast.FunctionDef):
        return None
    if any(isinstance(n, (ast.Global, ast.Nonlocal, ast.Yield, ast.YieldFrom, ast.Await)) for n in _walk(fn_node)):
        return None
    if not any(isinstance(n, (ast.While, ast.If, ast.For, ast.Call, ast.BoolOp, ast.IfExp))
               or isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not)
               or isinstance(n, ast.Compare) and any(isinstance(o, (ast.In, ast.NotIn)) for o in n.ops)
               or _operator_rewritten(n) for n in _walk(fn_node)):
        return None  # nothing to rewrite (a call: the callee may have loops)
    fn_node.decorator_list = []
    lifted = {}
    fn_node.body = _lift_loop_returns(fn_node.body, _loads_by_line(fn_node), lifted, itertools.count().__next__)
    exits = _single_exit(fn_node)
    later_loads = _loads_by_line(fn_node)
    for name, lines in lifted.items():
        later_loads.setdefault(name, set()).update(lines)
    deferred = {n.id for d in _walk(fn_node) if d is not fn_node and isinstance(d, (ast.FunctionDef, ast.Lambda))
                for n in _walk(d) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    rewrite = _Rewrite(later_loads, set(code.co_varnames) | set(code.co_cellvars), deferred)
    fn_node.body = rewrite.body(fn_node.body, False)
    if not (rewrite.changed or exits):
        return None
    # a factory whose parameters are the function's free variables and the helpers' module: the
    # rewritten function closes over them as the original did
    # (under another name: a recursive call must reach the module's function, not the factory's)
    fn_node.name = "__strider_rewritten"
    factory = _def("__strider_factory", [_CF] + list(code.co_freevars), [fn_node, ast.Return(_load(fn_node.name))])
    module = _located(ast.Module(body=[factory], type_ignores=[]))
    try:
        compiled = compile(module, code.co_filename, "exec")
    except (SyntaxError, ValueError):  # a construct the rewrite does not handle: the function as written
        return None
    factory_code = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    rewritten = next(c for c in factory_code.co_consts if isinstance(c, types.CodeType) and c.co_name == fn_node.name)
    _cache[code] = rewritten.replace(co_name=code.co_name, co_qualname=code.co_qualname)
    return _cache[code]


def slice_bound_parameters(fn):
    """The parameters fn's source uses, never assigned, as a bound or step of a slice
    (YOLOv5's `i[:max_det]`): tracing needs the value of a number passed for one (a length), so
    it is static from the first trace on, not found so halfway through a trace that then starts
    again (_api)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return frozenset()
    if code not in _bounds:
        _bounds[code] = frozenset()
        node = _parsed(code)[1]
        if node is not None:
            args = node.args
            params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
            used = {part.id for n in _walk(node) if isinstance(n, ast.Slice)
                    for part in (n.lower, n.upper, n.step) if isinstance(part, ast.Name)}
            _bounds[code] = frozenset((params & used) - set(_Names(node.body).stored))
    return _bounds[code]


def user_function(fn):
    """Whether fn is the user's Python function (not strider's, NumPy's, the standard library's
    or an installed package's): the ones whose loops and branches a trace rewrites."""
    return type(fn) is types.FunctionType and user_file(fn.__code__.co_filename)


def converted(fn, control):
    """fn with its loops and branches on traced values made traceable (fn itself where it has
    none, or where its source cannot be read or rewritten); a bound method's function, bound
    again."""
    if isinstance(fn, types.MethodType):
        return types.MethodType(converted(fn.__func__, control), fn.__self__)
    if not isinstance(fn, types.FunctionType):
        return fn
    code = _rewritten_code(fn)
    if code is None:
        return fn
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    cells[_CF] = types.CellType(control)
    closure = tuple(cells[name] for name in code.co_freevars)
    clone = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, closure)
    clone.__kwdefaults__ = fn.__kwdefaults__
    clone.__wrapped__ = fn
    return clone
