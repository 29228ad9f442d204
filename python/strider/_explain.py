"""What strider made of one call, for f.explain()."""
import os


class GraphBreakExplanation:
    """explain() of a call that runs in NumPy: where its trace stopped, and why."""

    def __init__(self, reason):
        self.breaks = [reason]

    def __str__(self):
        return "== graph breaks ==\n" + "\n".join(self.breaks) + "\nthe whole call runs as the function's own Python, in NumPy\n"

    __repr__ = __str__


class Explanation:
    """What strider made of one call: the IR, the storages' dependency tables, the DAG."""

    def __init__(self, program, cuda=None, reads=(), runtime_breaks=()):
        graph = program.graph
        self.breaks = []  # none: the whole call is compiled
        # why calls of the function ran in NumPy once their run had started (a run-time length
        # of 1 that NumPy broadcasts), as their warnings said
        self.runtime_breaks = list(runtime_breaks)
        self.reads = list(reads)  # what the call reads besides its arguments (self.stride, GLOBALS, ...)
        self.ir = str(graph)
        self.tables = program.table_text
        self.edges = list(program.edges)
        self.stages = list(program.stages)          # dicts: domain, ops, reduce_axes, registers, loops, schedule,
                                                    # computed_in (the stage whose loops run it, or -1)
        self.rejections = list(program.rejections)  # why neighbouring ops were not fused
        self.schedules = dict(program.schedules)    # stage index -> primitives, as compile(schedule=) takes
        self.fallbacks = list(program.fallbacks)    # per stage: why it runs on the reference executor
        self._stages_text = program.stages_text
        self.code = [ll or None for ll in program.code]  # per stage: the optimized LLVM IR, None without
        # target="cuda": per stage, why it runs on the host between copies ("" when on the device)
        self.cuda_fallbacks = list(cuda.fallbacks) if cuda is not None else []
        self._lines = [graph.op_line(i) for i in range(graph.num_ops)]
        self._names = [graph.op_name(i) for i in range(graph.num_ops)]

    def source_line(self, op):
        file, line = self._lines[op]
        return f"{os.path.basename(file)}:{line}"

    def __str__(self):
        lines = ["== IR ==", self.ir.rstrip(), "", "== storages: data-dependency tables ==",
                 self.tables.rstrip(), "", "== DAG edges =="]
        for src, dst, kind in self.edges:
            lines.append(f"{kind}  op{src} ({self._names[src]} @ {self.source_line(src)}) -> "
                         f"op{dst} ({self._names[dst]} @ {self.source_line(dst)})")
        if not self.edges:
            lines.append("(none)")
        lines += ["", "== read on every call besides the arguments ==", ", ".join(self.reads) or "(nothing)"]
        lines += ["", "== stages (loop nests) and fusion decisions ==", self._stages_text.rstrip()]
        for i, why in enumerate(self.fallbacks):
            if why:
                lines.append(f"stage {i} runs on the reference executor: {why}")
        if self.runtime_breaks:
            lines += ["", "== run-time breaks: calls that ran in NumPy =="] + self.runtime_breaks
        return "\n".join(lines) + "\n"

    __repr__ = __str__
