"""Kernels written as IR text for the pass tests: each one exercises a rule of a pass."""
import pathlib

GEMV = (pathlib.Path(__file__).parents[1] / "ir" / "fixtures" / "gemv.nir").read_text()

# the quantize is written inside the row loop; licm must hoist it (guarded: N may be 0)
GEMV_INNER = """func @gemv_inner(%w: tensor<u8[N,G,144]>, %x: tensor<f32[G,256]>, %y: buffer<f32[N]>) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %n_rows = dim(%w) {axis = 0} : index
  for(%c0, %n_rows, %c1) ({
  ^(%n: index):
    %xq = quantize(%x) {format = #q8_k} : tensor<u8[G,292]>
    %wn = subview(%w, %n) {axes = "i::"} : tensor<u8[G,144]>
    %r = quantized_dot(%wn, %xq) {acc_dtype = f32, lhs_format = #q4_k, order = "seq", rhs_format = #q8_k} : tensor<f32[]>
    %s = load(%r) : f32
    store(%s, %y, %n)
    yield()
  })
  return()
}
"""

# the same with a static row count: the loop surely runs, so no guard is needed
GEMV_INNER_STATIC = GEMV_INNER.replace("@gemv_inner", "@gemv_inner_static").replace(
    "u8[N,G,144]", "u8[3,G,144]").replace("f32[N]", "f32[3]")

# two dots on one quantized x, and a second quantize of the same x that cse merges
TWO_DOTS = """func @two_dots(%a: tensor<u8[N,G,144]>, %b: tensor<u8[N,G,144]>, %x: tensor<f32[G,256]>, %y: buffer<f32[N]>, %z: buffer<f32[N]>) {
  %xq = quantize(%x) {format = #q8_k} : tensor<u8[G,292]>
  %xq2 = quantize(%x) {format = #q8_k} : tensor<u8[G,292]>
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %n_rows = dim(%a) {axis = 0} : index
  for(%c0, %n_rows, %c1) ({
  ^(%n: index):
    %an = subview(%a, %n) {axes = "i::"} : tensor<u8[G,144]>
    %bn = subview(%b, %n) {axes = "i::"} : tensor<u8[G,144]>
    %ra = quantized_dot(%an, %xq) {acc_dtype = f32, lhs_format = #q4_k, rhs_format = #q8_k} : tensor<f32[]>
    %rb = quantized_dot(%bn, %xq2) {acc_dtype = f32, lhs_format = #q4_k, order = "tree", rhs_format = #q8_k} : tensor<f32[]>
    %sa = load(%ra) : f32
    %sb = load(%rb) : f32
    store(%sa, %y, %n)
    store(%sb, %z, %n)
    yield()
  })
  return()
}
"""

# an elementwise producer of quantize's input, and the quantized records returned too
SCALED_QUANTIZE = """func @scaled_quantize(%w: tensor<u8[N,G,144]>, %x: tensor<f32[G,256]>, %s: f32, %y: buffer<f32[N]>) -> (tensor<u8[G,292]>) {
  %xs = mul(%x, %s) : tensor<f32[G,256]>
  %xn = neg(%xs) : tensor<f32[G,256]>
  %xq = quantize(%xn) {format = #q8_k} : tensor<u8[G,292]>
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %n_rows = dim(%w) {axis = 0} : index
  for(%c0, %n_rows, %c1) ({
  ^(%n: index):
    %wn = subview(%w, %n) {axes = "i::"} : tensor<u8[G,144]>
    %r = quantized_dot(%wn, %xq) {acc_dtype = f32, lhs_format = #q4_k, rhs_format = #q8_k} : tensor<f32[]>
    %v = load(%r) : f32
    store(%v, %y, %n)
    yield()
  })
  return(%xq)
}
"""

# explicit INT4 decode (mask, shift, cast, sub, mul) feeding an ordinary f32 dot
DECODE_DOT = """func @decode_dot(%p: tensor<u8[N,K]>, %x: tensor<f32[K]>, %scale: f32, %y: buffer<f32[N]>) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %rows = dim(%p) {axis = 0} : index
  %mask = constant() {value = 15} : u8
  %eight = constant() {value = 8.0} : f32
  for(%c0, %rows, %c1) ({
  ^(%n: index):
    %pn = subview(%p, %n) {axes = "i:"} : tensor<u8[K]>
    %lo = and(%pn, %mask) : tensor<u8[K]>
    %wf = cast(%lo) {to = f32} : tensor<f32[K]>
    %wc = sub(%wf, %eight) : tensor<f32[K]>
    %ws = mul(%wc, %scale) : tensor<f32[K]>
    %d = dot(%ws, %x) {order = "seq"} : tensor<f32[]>
    %v = load(%d) : f32
    store(%v, %y, %n)
    yield()
  })
  return()
}
"""

# the same decode with a tree-order dot: not fusable, the row is materialized per row
DECODE_DOT_TREE = DECODE_DOT.replace("@decode_dot", "@decode_dot_tree").replace(
    '{order = "seq"}', '{order = "tree"}')

# an ordinary f32 matmul: must stay f32 through the whole pipeline
MATMUL_F32 = """func @matmul_f32(%a: tensor<f32[M,K]>, %b: tensor<f32[N,K]>, %y: buffer<f32[M,N]>) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %m_rows = dim(%a) {axis = 0} : index
  %n_rows = dim(%b) {axis = 0} : index
  for(%c0, %m_rows, %c1) ({
  ^(%m: index):
    %am = subview(%a, %m) {axes = "i:"} : tensor<f32[K]>
    for(%c0, %n_rows, %c1) ({
    ^(%n: index):
      %bn = subview(%b, %n) {axes = "i:"} : tensor<f32[K]>
      %d = dot(%am, %bn) : tensor<f32[]>
      %v = load(%d) : f32
      store(%v, %y, %m, %n)
      yield()
    })
    yield()
  })
  return()
}
"""

# an elementwise chain returned as a tensor: computed straight into the output buffer
AXPY = """func @axpy(%a: f32, %x: tensor<f32[K]>, %b: tensor<f32[K]>) -> (tensor<f32[K]>) {
  %ax = mul(%x, %a) : tensor<f32[K]>
  %r = add(%ax, %b) : tensor<f32[K]>
  %mx = max(%r, %b) : tensor<f32[K]>
  %c = cmp(%mx, %r) {pred = "ge"} : tensor<bool[K]>
  %s = select(%c, %mx, %r) : tensor<f32[K]>
  return(%s)
}
"""

# row reductions: a fused seq sum of squares and a tree-order sum of a materialized value
ROW_SUMS = """func @row_sums(%m: tensor<f32[M,K]>) -> (tensor<f32[M]>, tensor<f32[M]>) {
  %sq = mul(%m, %m) : tensor<f32[M,K]>
  %s = reduce(%sq) {kind = "add", order = "seq"} : tensor<f32[M]>
  %h = abs(%m) : tensor<f32[M,K]>
  %t = reduce(%h) {kind = "add", order = "tree"} : tensor<f32[M]>
  return(%s, %t)
}
"""

# min/max/int folds of fused inputs (any order is exact for these)
ROW_MAX = """func @row_max(%m: tensor<f32[M,K]>, %q: tensor<i32[M,K]>) -> (tensor<f32[M]>, tensor<i32[M]>, tensor<i32[M]>) {
  %n = neg(%m) : tensor<f32[M,K]>
  %mx = reduce(%n) {kind = "max", order = "tree"} : tensor<f32[M]>
  %two = constant() {value = 2} : i32
  %q2 = mul(%q, %two) : tensor<i32[M,K]>
  %qs = reduce(%q2) {kind = "add", order = "chunk<2>"} : tensor<i32[M]>
  %q3 = sub(%q, %two) : tensor<i32[M,K]>
  %qm = reduce(%q3) {kind = "min"} : tensor<i32[M]>
  return(%mx, %qs, %qm)
}
"""

# two temporaries used in sequence: the second reuses the first one's buffer
SEQUENTIAL_TEMPS = """func @sequential_temps(%x: tensor<f32[K]>, %y: buffer<f32[K]>) -> (f32, f32) {
  %two = constant() {value = 2.0} : f32
  %one = constant() {value = 1.0} : f32
  %a = mul(%x, %two) : tensor<f32[K]>
  %da = dot(%a, %a) : tensor<f32[]>
  %sa = load(%da) : f32
  %b = add(%x, %one) : tensor<f32[K]>
  %db = dot(%b, %b) : tensor<f32[]>
  %sb = load(%db) : f32
  copy(%b, %y)
  return(%sa, %sb)
}
"""

# a value read from a buffer before a store into that buffer: the read stays first
LOAD_AFTER_STORE = """func @load_after_store(%y: buffer<f32[K]>, %z: buffer<f32[K]>, %v: f32) {
  %one = constant() {value = 1.0} : f32
  %t = add(%y, %one) : tensor<f32[K]>
  %c0 = constant() {value = 0} : index
  store(%v, %y, %c0)
  %two = constant() {value = 2.0} : f32
  %u = mul(%t, %two) : tensor<f32[K]>
  copy(%u, %z)
  %w = neg(%y) : tensor<f32[K]>
  copy(%w, %y)
  return()
}
"""

# a copy between overlapping views of one buffer (copy reads everything first)
SHIFT_COPY = """func @shift_copy(%y: buffer<i32[8]>) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %c7 = constant() {value = 7} : index
  %c8 = constant() {value = 8} : index
  %src = subview(%y, %c0, %c7, %c1) {axes = "r"} : buffer<i32[7]>
  %dst = subview(%y, %c1, %c8, %c1) {axes = "r"} : buffer<i32[7]>
  copy(%src, %dst)
  return()
}
"""

# integer identities canonicalize removes, and a narrowing cast the user wrote
INT_IDENTITIES = """func @int_identities(%x: tensor<i32[K]>, %s: i32) -> (tensor<i8[K]>, i32) {
  %zero = constant() {value = 0} : i32
  %one = constant() {value = 1} : i32
  %ones = constant() {value = -1} : i32
  %a = add(%x, %zero) : tensor<i32[K]>
  %b = mul(%a, %one) : tensor<i32[K]>
  %c = and(%b, %ones) : tensor<i32[K]>
  %d = shl(%c, %zero) : tensor<i32[K]>
  %e = xor(%d, %s) : tensor<i32[K]>
  %f = cast(%e) {to = i8} : tensor<i8[K]>
  %g = sub(%s, %s) : i32
  %h = mul(%s, %zero) : i32
  %k = add(%g, %h) : i32
  %three = constant() {value = 3} : i32
  %m = mul(%three, %three) : i32
  %r = add(%k, %m) : i32
  return(%f, %r)
}
"""

# float arithmetic that must not be simplified (x+0.0, x*1.0, x-x)
FLOAT_NO_IDENTITIES = """func @float_keep(%x: tensor<f32[K]>, %s: f32) -> (tensor<f32[K]>, f32) {
  %zero = constant() {value = 0.0} : f32
  %one = constant() {value = 1.0} : f32
  %a = add(%x, %zero) : tensor<f32[K]>
  %b = mul(%a, %one) : tensor<f32[K]>
  %c = min(%b, %b) : tensor<f32[K]>
  %d = sub(%s, %s) : f32
  %e = mul(%d, %zero) : f32
  %big = constant() {value = 3.4028234663852886e+38} : f32
  %inf = add(%big, %big) : f32
  %f = add(%e, %inf) : f32
  return(%c, %f)
}
"""

# bit tricks: |x| through the sign bit, and a bitcast round trip
BITS = """func @bits(%x: tensor<f32[K]>) -> (tensor<f32[K]>, tensor<f32[K]>) {
  %mask = constant() {value = 2147483647} : u32
  %u = bitcast(%x) {to = u32} : tensor<u32[K]>
  %m = and(%u, %mask) : tensor<u32[K]>
  %a = bitcast(%m) {to = f32} : tensor<f32[K]>
  %v = bitcast(%x) {to = i32} : tensor<i32[K]>
  %back = bitcast(%v) {to = f32} : tensor<f32[K]>
  %nn = neg(%back) : tensor<f32[K]>
  %n2 = neg(%nn) : tensor<f32[K]>
  return(%a, %n2)
}
"""

# a carried scalar sum, an if with scalar results, and a user assert (check)
CONTROL = """func @control(%x: tensor<f32[K]>, %t: f32) -> (f32, f32) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %k = dim(%x) {axis = 0} : index
  %ok = cmp(%c0, %k) {pred = "le"} : bool
  check(%ok) {message = "empty is fine"}
  %zero = constant() {value = -0.0} : f32
  %acc = for(%c0, %k, %c1, %zero) ({
  ^(%i: index, %a: f32):
    %v = load(%x, %i) : f32
    %a2 = add(%a, %v) : f32
    yield(%a2)
  }) : f32
  %big = cmp(%acc, %t) {pred = "gt"} : bool
  %r = if(%big) ({
  ^():
    %d = sub(%acc, %t) : f32
    yield(%d)
  }, {
  ^():
    %e = neg(%acc) : f32
    yield(%e)
  }) : f32
  return(%acc, %r)
}
"""

# loads and stores at indices that cannot be proven in range get checks
UNPROVEN_INDEX = """func @unproven(%x: tensor<f32[K]>, %i: index, %y: buffer<f32[4]>) -> (f32) {
  %v = load(%x, %i) : f32
  %c2 = constant() {value = 2} : index
  %j = add(%i, %c2) : index
  store(%v, %y, %j)
  %c1 = constant() {value = 1} : index
  %e = subview(%x, %i, %j, %c1) {axes = "r"} : tensor<f32[?]>
  %n = neg(%e) : tensor<f32[?]>
  %d = reduce(%n) {kind = "add"} : tensor<f32[]>
  %s = load(%d) : f32
  %two = mul(%x, %v) : tensor<f32[K]>
  %w = load(%two, %i) : f32
  %r = add(%s, %w) : f32
  return(%r)
}
"""

# the quantized GEMM: the quantize depends on the row, so it stays in the row loop
GEMM = """func @q4k_gemm(%w: tensor<u8[N,G,144]>, %x: tensor<f32[M,G,256]>, %y: buffer<f32[M,N]>) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %m_rows = dim(%x) {axis = 0} : index
  %n_rows = dim(%w) {axis = 0} : index
  for(%c0, %m_rows, %c1) ({
  ^(%m: index):
    %xm = subview(%x, %m) {axes = "i::"} : tensor<f32[G,256]>
    %xq = quantize(%xm) {format = #q8_k} : tensor<u8[G,292]>
    for(%c0, %n_rows, %c1) ({
    ^(%n: index):
      %wn = subview(%w, %n) {axes = "i::"} : tensor<u8[G,144]>
      %r = quantized_dot(%wn, %xq) {acc_dtype = f32, lhs_format = #q4_k, order = "seq", rhs_format = #q8_k} : tensor<f32[]>
      %s = load(%r) : f32
      store(%s, %y, %m, %n)
      yield()
    })
    yield()
  })
  return()
}
"""

# a temporary inside a loop body: its buffer is allocated once around the loop
LOOP_TEMP = """func @loop_temp(%m: tensor<f32[M,K]>, %x: tensor<f32[K]>, %y: buffer<f32[M]>) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %rows = dim(%m) {axis = 0} : index
  for(%c0, %rows, %c1) ({
  ^(%i: index):
    %row = subview(%m, %i) {axes = "i:"} : tensor<f32[K]>
    %p = mul(%row, %x) : tensor<f32[K]>
    %s = reduce(%p) {kind = "add", order = "tree"} : tensor<f32[]>
    %d = dot(%p, %p) {order = "chunk<2>"} : tensor<f32[]>
    %a = load(%s) : f32
    %b = load(%d) : f32
    %c = add(%a, %b) : f32
    store(%c, %y, %i)
    yield()
  })
  return()
}
"""

# half precision: f16 chain into a seq dot, rank-0 arithmetic on dot results
HALF = """func @half(%a: tensor<f16[K]>, %b: tensor<f16[K]>) -> (f16, tensor<f16[]>) {
  %s = mul(%a, %b) : tensor<f16[K]>
  %t = sub(%s, %a) : tensor<f16[K]>
  %d = dot(%t, %b) : tensor<f16[]>
  %e = dot(%a, %b) : tensor<f16[]>
  %r = add(%d, %e) : tensor<f16[]>
  %v = load(%r) : f16
  return(%v, %e)
}
"""

# constant trip counts: a one-trip loop is inlined, a zero-trip loop removed
CONST_LOOPS = """func @const_loops(%x: tensor<f32[4]>, %y: buffer<f32[4]>) -> (f32) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %c3 = constant() {value = 3} : index
  %init = constant() {value = -0.0} : f32
  %once = for(%c0, %c1, %c1, %init) ({
  ^(%i: index, %a: f32):
    %v = load(%x, %i) : f32
    %a2 = add(%a, %v) : f32
    yield(%a2)
  }) : f32
  %never = for(%c3, %c1, %c1, %once) ({
  ^(%i: index, %a: f32):
    store(%a, %y, %i)
    yield(%a)
  }) : f32
  for(%c0, %c3, %c1) ({
  ^(%i: index):
    %u = load(%x, %i) : f32
    store(%u, %y, %c3)
    yield()
  })
  return(%never)
}
"""

# a 2-D elementwise chain copied into a view of a buffer
VIEW_STORE = """func @view_store(%a: tensor<f32[M,K]>, %b: tensor<f32[M,K]>, %y: buffer<f32[M,K,2]>) {
  %c1 = constant() {value = 1} : index
  %d = sub(%a, %b) : tensor<f32[M,K]>
  %q = mul(%d, %d) : tensor<f32[M,K]>
  %dst = subview(%y, %c1) {axes = "::i"} : buffer<f32[M,K]>
  copy(%q, %dst)
  return()
}
"""

# an update that reads one view of a buffer and writes an overlapping one: not in place
OVERLAP_UPDATE = """func @overlap_update(%y: buffer<f32[6]>, %z: buffer<f32[6]>) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %c4 = constant() {value = 4} : index
  %c5 = constant() {value = 5} : index
  %a = subview(%y, %c0, %c4, %c1) {axes = "r"} : buffer<f32[4]>
  %b = subview(%y, %c1, %c5, %c1) {axes = "r"} : buffer<f32[4]>
  %one = constant() {value = 1.0} : f32
  %t = add(%a, %one) : tensor<f32[4]>
  copy(%t, %b)
  %u = mul(%z, %z) : tensor<f32[6]>
  copy(%u, %z)
  return()
}
"""

# a quantize invariant in both loops of a nest; the rows are summed in a carried value
NESTED_INVARIANT = """func @nested_invariant(%w: tensor<u8[N,G,144]>, %x: tensor<f32[G,256]>, %y: buffer<f32[M,N]>) -> (f32) {
  %c0 = constant() {value = 0} : index
  %c1 = constant() {value = 1} : index
  %m_rows = dim(%y) {axis = 0} : index
  %n_rows = dim(%w) {axis = 0} : index
  %init = constant() {value = -0.0} : f32
  %total = for(%c0, %m_rows, %c1, %init) ({
  ^(%m: index, %acc: f32):
    %row = for(%c0, %n_rows, %c1, %acc) ({
    ^(%n: index, %a: f32):
      %xq = quantize(%x) {format = #q8_k} : tensor<u8[G,292]>
      %wn = subview(%w, %n) {axes = "i::"} : tensor<u8[G,144]>
      %r = quantized_dot(%wn, %xq) {acc_dtype = f32, lhs_format = #q4_k, rhs_format = #q8_k} : tensor<f32[]>
      %s = load(%r) : f32
      store(%s, %y, %m, %n)
      %a2 = add(%a, %s) : f32
      yield(%a2)
    }) : f32
    yield(%row)
  }) : f32
  return(%total)
}
"""

KERNELS = {
    "gemv": GEMV, "gemv_inner": GEMV_INNER, "gemv_inner_static": GEMV_INNER_STATIC,
    "two_dots": TWO_DOTS, "scaled_quantize": SCALED_QUANTIZE, "decode_dot": DECODE_DOT,
    "decode_dot_tree": DECODE_DOT_TREE, "matmul_f32": MATMUL_F32, "axpy": AXPY,
    "row_sums": ROW_SUMS, "row_max": ROW_MAX, "sequential_temps": SEQUENTIAL_TEMPS,
    "load_after_store": LOAD_AFTER_STORE, "shift_copy": SHIFT_COPY,
    "int_identities": INT_IDENTITIES, "float_keep": FLOAT_NO_IDENTITIES, "bits": BITS,
    "control": CONTROL, "unproven": UNPROVEN_INDEX, "gemm": GEMM, "loop_temp": LOOP_TEMP,
    "half": HALF, "const_loops": CONST_LOOPS, "view_store": VIEW_STORE,
    "overlap_update": OVERLAP_UPDATE, "nested_invariant": NESTED_INVARIANT,
}
