"""ccompiler: the reference's C source codegen (CodegenC / CSourceCodegen), for the
functions PartitionGraph gives to "ccompiler".

For a function with global symbol S the C holds, as in the reference:
1. one node function per op call, `S_0`, `S_1`, ... numbered as the reference's
   visitor numbers them (a call takes its number before its arguments are visited, so
   the result's op is `S_0`); binary ops on equal shapes through the reference's
   `CSOURCE_BINARY_OP_<rank>D` macro, the others (broadcasting, activations, bias_add,
   pooling, dense, matmul, batch_matmul, conv2d) as plain loops;
2. the subgraph function `S_`: it mallocs a buffer `buf_N` for each intermediate value
   (numbered after the arguments are visited), calls the node functions in order (the
   result's op writes into the output), frees the buffers;
3. the wrapper `S` with the build's calling convention (the data pointers of the
   inputs, then of the outputs; 0 on success, -1 when a malloc fails) and `S_packed`
   (the arguments as one int64 array), the analog of TVM_DLL_EXPORT_TYPED_FUNC.

Only float32 is supported, NCHW / OIHW for convolutions and pooling; the check
functions (`target.ccompiler`) claim exactly what the codegen compiles.
"""
from __future__ import annotations

import numpy as np

from ..errors import BuildError
from ..graph.ir.expr import Call, Constant, Function, Tuple, Var
from ..graph.ir.op import Op
from ..graph.ir.ty import TensorType
from .c_source_module import CSourceModule

TARGET = "ccompiler"

BINARY = {"add": "{a} + {b}", "subtract": "{a} - {b}", "multiply": "{a} * {b}",
          "divide": "{a} / {b}", "maximum": "fmaxf({a}, {b})", "minimum": "fminf({a}, {b})"}
UNARY = {"nn.relu": "{a} > 0.f ? {a} : 0.f", "sigmoid": "1.f / (1.f + expf(-{a}))",
         "tanh": "tanhf({a})", "exp": "expf({a})", "sqrt": "sqrtf({a})", "negative": "-{a}",
         "clip": "fminf(fmaxf({a}, {a_min}), {a_max})"}
COPY = ("reshape", "nn.batch_flatten")
WINDOWED = ("nn.conv2d", "nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d")
GEMM = ("nn.dense", "matmul", "nn.batch_matmul")
SUPPORTED = (*BINARY, *UNARY, *COPY, *WINDOWED, *GEMM, "nn.bias_add")


def _float32(ty) -> bool:
    return isinstance(ty, TensorType) and ty.dtype == "float32"


def takes(call: Call) -> bool:
    """Whether the codegen compiles `call` (its `target.ccompiler` check)."""
    if not _float32(call.ty) or not all(_float32(a.ty) for a in call.args):
        return False
    name, attrs = call.op.name, call.attrs
    if name == "nn.conv2d":
        return attrs["data_layout"] == "NCHW" and attrs["kernel_layout"] == "OIHW" and \
            attrs["out_layout"] in ("", "NCHW")
    if name in WINDOWED:  # its loops know plain windows only: no dilation, no ceil_mode
        return attrs["layout"] == "NCHW" and tuple(attrs.get("dilation", (1, 1))) == (1, 1) \
            and not attrs.get("ceil_mode", False)
    if name == "matmul":
        return all(a.ty.ndim == 2 for a in call.args)
    if name == "nn.dense":
        return call.args[0].ty.ndim >= 1
    return call.ty.ndim > 0  # a scalar op is not worth a C function (and has no loops)


def ccompiler(func: Function, symbol: str) -> CSourceModule:
    """The external codegen: `func`'s C source, compiled (see the module docstring)."""
    return CSourceModule.create(symbol, c_source(func, symbol))

HEADER = """\
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
"""


def c_source(func: Function, symbol: str) -> str:
    """The C of `func` under `symbol` (see the module docstring)."""
    return CodegenC(symbol).generate(func)


class CodegenC:
    """Visits a function's body the reference's way: see the module docstring."""

    def __init__(self, symbol: str):
        self.symbol = symbol
        self.func_idx = 0
        self.buf_idx = 0
        self.const_idx = 0
        self.macros: set[int] = set()
        self.func_decl: list[str] = []
        self.buf_decl: list[str] = []
        self.body: list[str] = []
        self.names: dict[int, str] = {}  # id(expr) -> the C array holding its value
        self.dest: dict[int, str] = {}   # id(output call) -> its output argument
        self._entered: dict[int, tuple[str, int]] = {}  # id(call) -> its name, decl place

    def generate(self, func: Function) -> str:
        outs = func.body.fields if isinstance(func.body, Tuple) else [func.body]
        for i, out in enumerate(outs):
            if not isinstance(out, Call) or id(out) in self.dest:
                raise BuildError(f"{self.symbol}: an output that is not an op call of "
                                 "its own (a parameter, a constant, an output twice)")
            self.dest[id(out)] = f"out{i}"
        for out in outs:
            self.visit(out)
        params = [f"float* {p.name}" for p in func.params] + \
            [f"float* out{i}" for i in range(len(outs))]
        args = [p.name for p in func.params] + [f"out{i}" for i in range(len(outs))]
        frees = [f"  free(buf_{k});" for k in range(self.buf_idx)]
        bufs = [f"buf_{k}" for k in range(self.buf_idx)]
        checks = [f"  if ({' || '.join(f'!{b}' for b in bufs)}) {{ "
                  f"{' '.join(f'free({b});' for b in bufs)} return -1; }}"] if bufs else []
        macros = [_binary_macro(rank) for rank in sorted(self.macros)]
        s = self.symbol
        packed = ", ".join(f"(float*)(intptr_t)args[{k}]" for k in range(len(args)))
        return "\n".join([
            HEADER, *macros, *self.func_decl, "",
            f"static int {s}_({', '.join(params)}) {{", *self.buf_decl, *checks,
            *self.body, *frees, "  return 0;", "}", "",
            f"int {s}({', '.join(params)}) {{",
            f"  return {s}_({', '.join(args)});", "}", "",
            f"int {s}_packed(int64_t* args) {{",
            f"  return {s}({packed});", "}", ""])

    def visit(self, expr) -> str:
        """The C array holding `expr`'s value, its code emitted first: a call is numbered
        before its operands (pre-order) and computed after them, its buffer numbered
        then; a work list, not recursion, so a region thousands of ops deep needs no
        deep stack."""
        work: list[tuple[bool, object]] = [(False, expr)]
        while work:
            done, node = work.pop()
            if done:
                self.names[id(node)] = self._emit(node)
            elif id(node) in self.names:
                continue
            elif isinstance(node, Var):
                self.names[id(node)] = node.name
            elif isinstance(node, Constant):
                self.names[id(node)] = self._constant(node)
            elif isinstance(node, Call) and isinstance(node.op, Op):
                self._enter(node)
                work.append((True, node))
                work.extend((False, a) for a in reversed(node.args))
            else:
                raise BuildError(f"{self.symbol}: the ccompiler codegen cannot compile a "
                                 f"{type(node).__name__} inside the function")
        return self.names[id(expr)]

    def _constant(self, c: Constant) -> str:
        if c.data.dtype != np.float32:
            raise BuildError(f"{self.symbol}: a {c.data.dtype} constant; the ccompiler "
                             "codegen compiles float32 only")
        name = f"{self.symbol}_const_{self.const_idx}"
        self.const_idx += 1
        values = ", ".join(_c_float(v) for v in c.data.ravel()) or "0.f"
        self.func_decl.append(f"static const float {name}[] = {{{values}}};")
        return name

    def _enter(self, call: Call) -> None:
        """Number `call`'s function and hold its declaration's place, before its
        operands'."""
        if call.op.name not in SUPPORTED or not takes(call):
            raise BuildError(f"{self.symbol}: the ccompiler codegen cannot compile "
                             f"{call.op.name} on {', '.join(str(a.ty) for a in call.args)}")
        self._entered[id(call)] = (f"{self.symbol}_{self.func_idx}", len(self.func_decl))
        self.func_idx += 1
        self.func_decl.append("")

    def _emit(self, call: Call) -> str:
        """`call`'s output array (its buffer numbered now) and its code, its operands
        emitted."""
        func_name, place = self._entered.pop(id(call))
        args = [self.names[id(a)] for a in call.args]
        out = self.dest.get(id(call))
        if out is None:
            out = f"buf_{self.buf_idx}"
            self.buf_idx += 1
            size = int(np.prod(call.ty.shape, dtype=np.int64))
            self.buf_decl.append(f"  float* {out} = (float*)malloc(4 * {size});")
        self.func_decl[place] = self._node_function(func_name, call)
        self.body.append(f"  {func_name}({', '.join([*args, out])});")
        return out

    def _node_function(self, name: str, call: Call) -> str:
        op, shapes, out = call.op.name, [a.ty.shape for a in call.args], call.ty.shape
        if op in BINARY and shapes[0] == shapes[1] == out and op in ("add", "subtract",
                                                                     "multiply", "divide"):
            self.macros.add(len(out))
            sign = BINARY[op].split()[1]
            return f"CSOURCE_BINARY_OP_{len(out)}D({name}, {sign}, " \
                   f"{', '.join(str(d) for d in out)});"
        params = ", ".join([*(f"const float* restrict in{k}" for k in range(len(shapes))),
                            "float* restrict out"])
        head = f"static void {name}({params}) {{"
        if op in BINARY or op in UNARY or op == "nn.bias_add":
            lines = _elementwise(op, call, shapes, out)
        elif op in COPY:
            size = int(np.prod(out, dtype=np.int64))
            lines = [f"  memcpy(out, in0, 4 * {size});"]
        elif op in GEMM:
            lines = _gemm(op, shapes, out)
        elif op == "nn.conv2d":
            lines = _conv2d(call.attrs, shapes, out)
        else:
            lines = _pool(op, call.attrs, shapes[0], out)
        return "\n".join([head, *lines, "}"])


def _c_float(value) -> str:
    """A float as a C float literal (INFINITY, NAN for those)."""
    value = float(value)
    if np.isnan(value):
        return "NAN"
    if np.isinf(value):
        return "INFINITY" if value > 0 else "-INFINITY"
    return f"{value!r}f"


def _binary_macro(rank: int) -> str:
    """The reference's CSOURCE_BINARY_OP_<rank>D: out = a op b on equal shapes."""
    dims = [f"p_DIM{k + 1}_" for k in range(rank)]
    lines = [f"#define CSOURCE_BINARY_OP_{rank}D(p_ID_, p_OP_, {', '.join(dims)})",
             "  static void p_ID_(const float* a, const float* b, float* out) {"]
    index = "0"
    for k, d in enumerate(dims):
        lines.append("  " * (k + 2) + f"for (int64_t i{k} = 0; i{k} < {d}; ++i{k}) {{")
        index = f"i{k}" if k == 0 else f"({index}) * {d} + i{k}"
    lines.append("  " * (rank + 2) + f"int64_t k = {index};")
    lines.append("  " * (rank + 2) + "out[k] = a[k] p_OP_ b[k];")
    for k in reversed(range(rank + 1)):
        lines.append("  " * (k + 1) + "}")
    return " \\\n".join(lines) + "\n"


def _loops(shape, indent: int = 1) -> tuple[list[str], str]:
    """Nested loops over `shape` (i0, i1, ...) and the flat index of the innermost."""
    lines, index = [], "0"
    for k, d in enumerate(shape):
        lines.append("  " * (indent + k) + f"for (int64_t i{k} = 0; i{k} < {d}; ++i{k})")
        index = f"i{k}" if k == 0 else f"({index}) * {d} + i{k}"
    return lines, index


def _broadcast_index(shape, out) -> str:
    """The flat index into an argument of `shape` broadcast to `out` (numpy's rules)."""
    terms, stride = [], 1
    offset = len(out) - len(shape)
    for k in reversed(range(len(shape))):
        if shape[k] != 1:
            terms.append(f"i{k + offset}" + (f" * {stride}" if stride != 1 else ""))
        stride *= shape[k]
    return " + ".join(reversed(terms)) or "0"


def _elementwise(op: str, call: Call, shapes, out) -> list[str]:
    loops, index = _loops(out)
    if op == "nn.bias_add":
        axis = call.attrs["axis"] % len(out)
        expr = f"in0[{index}] + in1[i{axis}]"
    elif op in BINARY:
        a, b = (f"in{k}[{_broadcast_index(s, out)}]" for k, s in enumerate(shapes))
        expr = BINARY[op].format(a=a, b=b)
    else:
        expr = UNARY[op].format(a=f"in0[{index}]", **{k: _c_float(v) for k, v in
                                                         call.attrs.items()})
    return [*loops, "  " * (len(out) + 1) + f"out[{index}] = {expr};"]


def _gemm(op: str, shapes, out) -> list[str]:
    """out = a x b, with dense's b as [N, K] and batch_matmul's as [B, N, K]."""
    if op == "nn.batch_matmul":
        (batch, m, k), n = shapes[0], shapes[1][1]
        a, b = "in0[(b * M + i) * K + k]", "in1[(b * N + j) * K + k]"
    elif op == "nn.dense":
        # Data of any rank: its leading dimensions are the rows of one gemm.
        batch, m, k, n = 1, int(np.prod(shapes[0][:-1])), shapes[0][-1], shapes[1][0]
        a, b = "in0[i * K + k]", "in1[j * K + k]"
    else:
        batch, (m, k), n = 1, shapes[0], shapes[1][1]
        a, b = "in0[i * K + k]", "in1[k * N + j]"
    return [f"  const int64_t M = {m}, N = {n}, K = {k};",
            f"  for (int64_t b = 0; b < {batch}; ++b)",
            "    for (int64_t i = 0; i < M; ++i)",
            "      for (int64_t j = 0; j < N; ++j) {",
            "        float acc = 0.f;",
            f"        for (int64_t k = 0; k < K; ++k) acc += {a} * {b};",
            "        out[(b * M + i) * N + j] = acc;",
            "      }"]


def _conv2d(attrs, shapes, out) -> list[str]:
    (n, c, h, w), (o, cg, kh, kw) = shapes
    (sh, sw), (dh, dw), groups = attrs["strides"], attrs["dilation"], attrs["groups"]
    top, left = attrs["padding"][0], attrs["padding"][1]
    oh, ow = out[2], out[3]
    return [f"  const int64_t C = {c}, H = {h}, W = {w}, O = {o}, CG = {cg}, OG = {o // groups};",
            f"  const int64_t OH = {oh}, OW = {ow}, KH = {kh}, KW = {kw};",
            f"  for (int64_t n = 0; n < {n}; ++n)",
            "    for (int64_t o = 0; o < O; ++o)",
            "      for (int64_t y = 0; y < OH; ++y)",
            "        for (int64_t x = 0; x < OW; ++x) {",
            "          float acc = 0.f;",
            "          const int64_t g = o / OG;",
            "          for (int64_t c = 0; c < CG; ++c)",
            "            for (int64_t ky = 0; ky < KH; ++ky) {",
            f"              const int64_t iy = y * {sh} - {top} + ky * {dh};",
            "              if (iy < 0 || iy >= H) continue;",
            "              for (int64_t kx = 0; kx < KW; ++kx) {",
            f"                const int64_t ix = x * {sw} - {left} + kx * {dw};",
            "                if (ix < 0 || ix >= W) continue;",
            "                acc += in0[((n * C + g * CG + c) * H + iy) * W + ix] *",
            "                       in1[((o * CG + c) * KH + ky) * KW + kx];",
            "              }",
            "            }",
            "          out[((n * O + o) * OH + y) * OW + x] = acc;",
            "        }"]


def _pool(op: str, attrs, shape, out) -> list[str]:
    n, c, h, w = shape
    if op == "nn.global_avg_pool2d":
        return [f"  for (int64_t p = 0; p < {n * c}; ++p) {{",
                "    float acc = 0.f;",
                f"    for (int64_t q = 0; q < {h * w}; ++q) acc += in0[p * {h * w} + q];",
                f"    out[p] = acc / {h * w}.f;",
                "  }"]
    (kh, kw), (sh, sw) = attrs["pool_size"], attrs["strides"]
    top, left = attrs["padding"][0], attrs["padding"][1]
    is_max = op == "nn.max_pool2d"
    if is_max:
        result = "acc"
    elif attrs["count_include_pad"]:
        result = f"acc / {kh * kw}.f"
    else:
        result = "acc / (float)count"
    return [f"  const int64_t H = {h}, W = {w}, OH = {out[2]}, OW = {out[3]};",
            f"  for (int64_t p = 0; p < {n * c}; ++p)",
            "    for (int64_t y = 0; y < OH; ++y)",
            "      for (int64_t x = 0; x < OW; ++x) {",
            f"        float acc = {'-INFINITY' if is_max else '0.f'};",
            "        int64_t count = 0;",
            f"        for (int64_t ky = 0; ky < {kh}; ++ky) {{",
            f"          const int64_t iy = y * {sh} - {top} + ky;",
            "          if (iy < 0 || iy >= H) continue;",
            f"          for (int64_t kx = 0; kx < {kw}; ++kx) {{",
            f"            const int64_t ix = x * {sw} - {left} + kx;",
            "            if (ix < 0 || ix >= W) continue;",
            "            const float v = in0[(p * H + iy) * W + ix];",
            "            acc = " + ("v > acc ? v : acc;" if is_max else "acc + v;"),
            "            ++count;",
            "          }",
            "        }",
            f"        out[(p * OH + y) * OW + x] = {result};",
            "      }"]
