"""Text-in/text-out pass tests: each tests/text/<pass>.ir names the passes on its RUN line, any
stage schedules on `// SCHEDULE <stage>: <primitives>` lines, the target on an optional
`// TARGET: cpu|cuda` line (cpu by default), `// REQUIRES: llvm` where the output needs the LLVM
backend, and the expected output in CHECK / CHECK-NEXT / CHECK-NOT lines (FileCheck's meaning).
Every step of the pipeline (`_C.pass_names()`) has its own tests/text/<step>.ir."""
import pathlib

import pytest

from strider import _C

TEXT_DIR = pathlib.Path(__file__).resolve().parents[1] / "text"
CASES = sorted(TEXT_DIR.glob("*.ir"))


def filecheck(output, directives):
    lines = output.splitlines()
    pos, pending_not = 0, []
    for kind, pattern in directives:
        if kind == "CHECK-NOT":
            pending_not.append(pattern)
            continue
        if kind == "CHECK-NEXT":
            assert pos < len(lines) and pattern in lines[pos], \
                f"CHECK-NEXT: {pattern!r} not on the next line; got {lines[pos] if pos < len(lines) else '<end>'!r}"
            found = pos
        else:
            found = next((i for i in range(pos, len(lines)) if pattern in lines[i]), None)
            assert found is not None, f"CHECK: {pattern!r} not found after line {pos}\n{output}"
        for bad in pending_not:
            assert not any(bad in line for line in lines[pos:found]), f"CHECK-NOT: {bad!r} found\n{output}"
        pending_not, pos = [], found + 1
    for bad in pending_not:
        assert not any(bad in line for line in lines[pos:]), f"CHECK-NOT: {bad!r} found\n{output}"


def run_line(text):
    run = next(line for line in text.splitlines() if line.startswith("// RUN:"))
    return [p.strip() for p in run.split(":", 1)[1].split(",") if p.strip()]


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_pass_text(path):
    text = path.read_text()
    if "// REQUIRES: llvm" in text.splitlines() and not _C.llvm_backend_available():
        pytest.skip("built without LLVM")
    passes = run_line(text)
    directives = []
    for line in text.splitlines():
        for kind in ("CHECK-NEXT", "CHECK-NOT", "CHECK"):
            prefix = f"// {kind}: "
            if line.startswith(prefix):
                directives.append((kind, line[len(prefix):]))
                break
    assert directives, "a text test needs CHECK lines"
    schedules, target = {}, _C.Target.cpu
    for line in text.splitlines():
        if line.startswith("// SCHEDULE "):
            index, primitives = line[len("// SCHEDULE "):].split(":", 1)
            schedules[int(index)] = primitives.strip()
        if line.startswith("// TARGET: "):
            target = getattr(_C.Target, line[len("// TARGET: "):].strip())
    filecheck(_C.run_passes(text, passes, schedules, target), directives)


def test_every_pass_has_a_text_test():
    untested = [name for name in _C.pass_names()
                if not (TEXT_DIR / f"{name}.ir").exists() or name not in run_line((TEXT_DIR / f"{name}.ir").read_text())]
    assert not untested, f"steps without a tests/text/<step>.ir whose RUN line runs them: {', '.join(untested)}"


def test_an_unknown_pass_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown pass 'fuse' \\(known: verify_graph, .*fuse_stages"):
        _C.run_passes("graph @f {\n  return\n}\n", ["fuse"], {}, _C.Target.cpu)


def test_print_parse_round_trip_of_a_traced_graph():
    import numpy as np
    import strider

    def f(x):
        x[:, 0::2] *= 2
        return x.sum(axis=1), x[::-1]

    ir = strider.compile(f).explain(np.ones((3, 4), np.float32)).ir
    assert str(_C.parse_graph(ir)) == ir


def test_a_traced_graph_holds_each_constant_once():
    # a constant's storage is never written: every use of the same values reads one (here 1.0,
    # as the three Python 1s become, and the shift's 2)
    import numpy as np
    import strider

    def f(x):
        return (x + 1) * (x - 1) + 1, x + 2, x + 2.0

    ir = strider.compile(f).explain(np.ones(4)).ir
    consts = [line for line in ir.splitlines() if " const " in line]
    assert len(consts) == 2, ir
