"""The verifier table: invalid IR texts, each with the error it must produce."""
import pytest

import ninfer_ir as I

GEMV_HEAD = "func @f(%w: tensor<u8[N,G,144]>, %x: tensor<f32[G,256]>, %y: buffer<f32[N]>) {\n"


def q(body, params="%x: tensor<f32[G,256]>", ret=""):
    return f"func @f({params}){ret} {{\n{body}\n  return()\n}}\n"


def dot(lhs_t, rhs_t, attrs="acc_dtype = f32, lhs_format = #q4_k, rhs_format = #q8_k",
        res="tensor<f32[]>"):
    return q(f"  %r = quantized_dot(%a, %b) {{{attrs}}} : {res}",
             params=f"%a: {lhs_t}, %b: {rhs_t}")


CASES = [
    # --- quantize (spec §1) ---
    ("quantize dtype", q("  %q = quantize(%x) {format = #q8_k} : tensor<u8[G,292]>",
                         "%x: tensor<f16[G,256]>"), I.VerifyError, "values must have dtype f32"),
    ("quantize rank 3", q("  %q = quantize(%x) {format = #q8_k} : tensor<u8[G,292]>",
                          "%x: tensor<f32[N,G,256]>"), I.VerifyError, "must be rank 2"),
    ("quantize rank 1", q("  %q = quantize(%x) {format = #q8_k} : tensor<u8[G,292]>",
                          "%x: tensor<f32[256]>"), I.VerifyError, "must be rank 2"),
    ("quantize trailing dim", q("  %q = quantize(%x) {format = #q8_k} : tensor<u8[G,292]>",
                                "%x: tensor<f32[G,128]>"), I.VerifyError, "trailing dim 256"),
    ("quantize result trailing", q("  %q = quantize(%x) {format = #q8_k} : tensor<u8[G,290]>"),
     I.VerifyError, "trailing dim 292"),
    ("quantize result G", q("  %q = quantize(%x) {format = #q8_k} : tensor<u8[H,292]>"),
     I.VerifyError, "must equal the input's G"),
    ("quantize result dtype", q("  %q = quantize(%x) {format = #q8_k} : tensor<i8[G,292]>"),
     I.VerifyError, "result must have dtype u8"),
    ("quantize wrong member", q("  %q = quantize(%x) {format = #q4_k} : tensor<u8[G,292]>"),
     I.VerifyError, "'format' must be a quantize target (#q8_k, #q8_0), got #q4_k"),
    ("quantize dtype as format", q("  %q = quantize(%x) {format = u8} : tensor<u8[G,292]>"),
     I.VerifyError, "must be a quant schema (I.quant.*), got the dtype u8"),
    ("quantize string as format", q('  %q = quantize(%x) {format = "q8_k"} : tensor<u8[G,292]>'),
     I.VerifyError, "must be a quant schema"),
    ("quantize missing format", q("  %q = quantize(%x) : tensor<u8[G,292]>"),
     I.VerifyError, "missing attribute 'format'"),
    ("quantize unknown schema", q("  %q = quantize(%x) {format = #q7_k} : tensor<u8[G,292]>"),
     I.ParseError, "unknown quant schema or format #q7_k"),
    ("quantize persistent format", q("  %q = quantize(%x) {format = #q8_g32_fp16} : tensor<u8[G,292]>"),
     I.VerifyError, "must be a quant schema (I.quant.*), got the format q8_g32_fp16"),
    ("quantize into buffer result", q("  %q = quantize(%x) {format = #q8_k} : buffer<u8[G,292]>"),
     I.VerifyError, "result must be a tensor"),
    # --- quantized_dot (spec §1) ---
    ("dot batched lhs", dot("tensor<u8[N,G,144]>", "tensor<u8[G,292]>"), I.VerifyError,
     "lhs must be rank 2 [G,144] (no batch axes)"),
    ("dot lhs dtype", dot("tensor<i8[G,144]>", "tensor<u8[G,292]>"), I.VerifyError,
     "lhs must have dtype u8"),
    ("dot lhs trailing", dot("tensor<u8[G,128]>", "tensor<u8[G,292]>"), I.VerifyError,
     "lhs must have trailing dim 144"),
    ("dot rhs trailing", dot("tensor<u8[G,144]>", "tensor<u8[G,144]>"), I.VerifyError,
     "rhs must have trailing dim 292"),
    ("dot G mismatch symbols", dot("tensor<u8[G,144]>", "tensor<u8[H,292]>"), I.VerifyError,
     "same G, got G and H"),
    ("dot G mismatch static", dot("tensor<u8[3,144]>", "tensor<u8[4,292]>"), I.VerifyError,
     "same G, got 3 and 4"),
    ("dot G unknown", dot("tensor<u8[?,144]>", "tensor<u8[?,292]>"), I.VerifyError,
     "unknown record count G (?)"),
    ("dot swapped formats", dot("tensor<u8[G,144]>", "tensor<u8[G,292]>",
                                "acc_dtype = f32, lhs_format = #q8_k, rhs_format = #q4_k"),
     I.VerifyError, "must be a pair of the table (q4_k x q8_k, q4_0 x q8_0"),
    ("dot acc f64", dot("tensor<u8[G,144]>", "tensor<u8[G,292]>",
                        "acc_dtype = f64, lhs_format = #q4_k, rhs_format = #q8_k"),
     I.VerifyError, "acc_dtype must be f32, got f64"),
    ("dot format as acc", dot("tensor<u8[G,144]>", "tensor<u8[G,292]>",
                              "acc_dtype = #q8_k, lhs_format = #q4_k, rhs_format = #q8_k"),
     I.VerifyError, "'acc_dtype' must be a dtype, got the quant schema #q8_k"),
    ("dot result scalar", dot("tensor<u8[G,144]>", "tensor<u8[G,292]>", res="f32"),
     I.VerifyError, "do not match the inferred (tensor<f32[]>)"),
    ("dot bad order", dot("tensor<u8[G,144]>", "tensor<u8[G,292]>",
                          'acc_dtype = f32, lhs_format = #q4_k, order = "shuffle", rhs_format = #q8_k'),
     I.VerifyError, "bad summation order"),
    # --- memory and views ---
    ("store into tensor", q("  %c = constant() {value = 0} : index\n  %v = constant() {value = 1.0} : f32\n"
                            "  store(%v, %t, %c)", "%t: tensor<f32[4]>"),
     I.VerifyError, "cannot store into the read-only tensor<f32[4]>"),
    ("store dtype", q("  %c = constant() {value = 0} : index\n  %v = constant() {value = 1} : i32\n"
                      "  store(%v, %t, %c)", "%t: buffer<f32[4]>"),
     I.VerifyError, "stored value is i32 but the buffer holds f32"),
    ("load index count", q("  %c = constant() {value = 0} : index\n  %v = load(%t, %c) : f32",
                           "%t: tensor<f32[4,4]>"), I.VerifyError, "expects 3 operand(s)"),
    ("load index type", q("  %c = constant() {value = 0} : i32\n  %v = load(%t, %c) : f32",
                          "%t: tensor<f32[4]>"), I.VerifyError, "must be of type index, got i32"),
    ("subview axes", q("  %c = constant() {value = 0} : index\n"
                       "  %v = subview(%t, %c) {axes = \"i\"} : tensor<f32[4]>",
                       "%t: tensor<f32[4,4]>"), I.VerifyError, "axes 'i' must give one of"),
    ("subview of tensor as buffer", q("  %c = constant() {value = 0} : index\n"
                                      "  %v = subview(%t, %c) {axes = \"i:\"} : buffer<f32[4]>",
                                      "%t: tensor<f32[4,4]>"), I.VerifyError, "must be one too"),
    ("copy into tensor", q("  copy(%a, %b)", "%a: tensor<f32[4]>, %b: tensor<f32[4]>"),
     I.VerifyError, "cannot store into the read-only"),
    ("dim axis", q("  %d = dim(%x) {axis = 2} : index"), I.VerifyError, "axis 2 out of range"),
    ("alloc sizes", q("  %b = alloc() : buffer<f32[G]>"), I.VerifyError, "expects 1 operand(s)"),
    # --- elementwise and casts ---
    ("add dtype mismatch", q("  %a = constant() {value = 1} : i32\n  %b = constant() {value = 1.0} : f32\n"
                             "  %c = add(%a, %b) : i32"), I.VerifyError, "operand types differ: i32 vs f32"),
    ("shift float", q("  %a = constant() {value = 1.0} : f32\n  %c = shl(%a, %a) : f32"),
     I.VerifyError, "needs integer operands, got f32"),
    ("and float", q("  %a = constant() {value = 1.0} : f32\n  %c = and(%a, %a) : f32"),
     I.VerifyError, "needs integer or bool operands"),
    ("cmp result type", q("  %a = constant() {value = 1} : i32\n  %c = cmp(%a, %a) {pred = \"lt\"} : i32"),
     I.VerifyError, "do not match the inferred (bool)"),
    ("cmp predicate", q("  %a = constant() {value = 1} : i32\n  %c = cmp(%a, %a) {pred = \"lts\"} : bool"),
     I.VerifyError, "unknown predicate 'lts'"),
    ("bitcast width", q("  %a = constant() {value = 1} : i32\n  %c = bitcast(%a) {to = f16} : f16"),
     I.VerifyError, "bitcast needs equal widths"),
    ("cast format as dtype", q("  %a = constant() {value = 1} : i32\n  %c = cast(%a) {to = #q8_k} : f32"),
     I.VerifyError, "'to' must be a dtype, got the quant schema #q8_k"),
    ("constant range", q("  %a = constant() {value = 300} : u8"), I.VerifyError, "300 does not fit u8"),
    ("constant kind", q("  %a = constant() {value = 1.5} : i32"), I.VerifyError, "needs an integer"),
    ("tensor shapes", q("  %c = add(%a, %b) : tensor<f32[4]>", "%a: tensor<f32[4]>, %b: tensor<f32[5]>"),
     I.VerifyError, "operand shapes differ"),
    ("dot lengths", q("  %d = dot(%a, %b) : tensor<f32[]>", "%a: tensor<f32[K]>, %b: tensor<f32[L]>"),
     I.VerifyError, "not provably equal"),
    ("bf16 arithmetic", q("  %c = add(%a, %a) : bf16", "%a: bf16"), I.VerifyError,
     "bf16 values are only cast or bitcast"),
    ("decode format", q("  %k = dim(%p) {axis = 0} : index\n"
                        "  %w = decode(%p, %s, %k) {format = #q8_k} : tensor<f32[K]>",
                        "%p: tensor<u8[P]>, %s: tensor<f16[S]>"),
     I.VerifyError, "must be a registered format (I.formats.get(...)), got the quant schema #q8_k"),
    ("decode geometry", q("  %k = constant() {value = 100} : index\n"
                          "  %w = decode(%p, %s, %k) {format = #q4_g64_fp16} : tensor<f32[100]>",
                          "%p: tensor<u8[49]>, %s: tensor<f16[2]>"),
     I.VerifyError, "100 4-bit codes pack into 50 bytes"),
    ("reduce kind", q("  %d = reduce(%a) {kind = \"avg\"} : tensor<f32[]>", "%a: tensor<f32[K]>"),
     I.VerifyError, "unknown reduction 'avg'"),
    # --- control flow and structure ---
    ("yield arity", q("  %c0 = constant() {value = 0} : index\n  %z = constant() {value = 0.0} : f32\n"
                      "  %r = for(%c0, %c0, %c0, %z) ({\n  ^(%i: index, %a: f32):\n    yield()\n  }) : f32"),
     I.VerifyError, "yield gives 0 value(s), expected 1"),
    ("yield type", q("  %c0 = constant() {value = 0} : index\n  %z = constant() {value = 0.0} : f32\n"
                     "  %r = for(%c0, %c0, %c0, %z) ({\n  ^(%i: index, %a: f32):\n    yield(%i)\n  }) : f32"),
     I.VerifyError, "yield gives index, expected f32"),
    ("for carried type", q("  %c0 = constant() {value = 0} : index\n  %z = constant() {value = 0.0} : f32\n"
                           "  %r = for(%c0, %c0, %c0, %z) ({\n  ^(%i: index, %a: f64):\n    yield(%a)\n  }) : f32"),
     I.VerifyError, "carried value has type f32 but the body argument is f64"),
    ("parallel carried", q("  %c0 = constant() {value = 0} : index\n  %z = constant() {value = 0.0} : f32\n"
                           "  %r = for(%c0, %c0, %c0, %z) {parallel = true} ({\n  ^(%i: index, %a: f32):\n"
                           "    yield(%a)\n  }) : f32"), I.VerifyError, "cannot carry values"),
    ("for bound type", q("  %c0 = constant() {value = 0} : i32\n  for(%c0, %c0, %c0) ({\n  ^(%i: index):\n"
                         "    yield()\n  })"), I.VerifyError, "lower bound must be of type index"),
    ("if condition", q("  %c = constant() {value = 1} : i32\n  if(%c) ({\n  ^():\n    yield()\n  }, {\n  ^():\n"
                       "    yield()\n  })"), I.VerifyError, "condition must be a bool scalar"),
    ("if missing yield", q("  %c = constant() {value = true} : bool\n  if(%c) ({\n  ^():\n  }, {\n  ^():\n"
                           "    yield()\n  })"), I.VerifyError, "region must end with yield"),
    ("use before definition", q("  %a = add(%b, %b) : f32\n  %b = constant() {value = 1.0} : f32"),
     I.ParseError, "use of undefined value %b"),
    ("use outside region", q("  %c0 = constant() {value = 0} : index\n  for(%c0, %c0, %c0) ({\n  ^(%i: index):\n"
                             "    %v = constant() {value = 1.0} : f32\n    yield()\n  })\n"
                             "  %w = neg(%v) : f32"), I.ParseError, "use of undefined value %v"),
    ("redefinition", q("  %a = constant() {value = 1.0} : f32\n  %a = constant() {value = 2.0} : f32"),
     I.ParseError, "redefinition of %a"),
    ("return type", "func @f(%a: f32) -> (i32) {\n  return(%a)\n}\n", I.VerifyError,
     "return gives (f32) but @f returns (i32)"),
    ("missing return", "func @f(%a: f32) {\n  %b = neg(%a) : f32\n}\n", I.VerifyError, "must end with return"),
    ("yield in func", "func @f() {\n  yield()\n  return()\n}\n", I.VerifyError, "must be the last op"),
    ("return in loop", q("  %c0 = constant() {value = 0} : index\n  for(%c0, %c0, %c0) ({\n  ^(%i: index):\n"
                         "    return()\n  })"), I.VerifyError, "region must end with yield"),
    ("duplicate function", "func @f() {\n  return()\n}\nfunc @f() {\n  return()\n}\n", I.VerifyError,
     "defined twice"),
    ("unknown op", q("  %a = frobnicate() : f32"), I.ParseError, "unknown op 'frobnicate'"),
    ("unknown type", q("  %a = constant() {value = 1} : i128"), I.ParseError, "unknown type 'i128'"),
    ("result count", q("  %a, %b = constant() {value = 1} : i32"), I.ParseError, "names 2 result(s)"),
    ("syntax", "func @f( {\n}", I.ParseError, "1:10: unexpected input"),
]


@pytest.mark.parametrize("name,text,err,needle", CASES, ids=[c[0] for c in CASES])
def test_invalid_ir(name, text, err, needle):
    with pytest.raises(err) as info:
        I.parse(text)
    assert needle in str(info.value)


def test_table_is_large_enough():
    assert len(CASES) >= 30


def test_verify_error_names_and_prints_the_op():
    with pytest.raises(I.VerifyError) as info:
        I.parse(dot("tensor<u8[N,G,144]>", "tensor<u8[G,292]>"))
    text = str(info.value)
    assert text.startswith("'quantized_dot':")
    assert "quantized_dot(%a, %b)" in text


def test_parse_error_has_line_and_column():
    with pytest.raises(I.ParseError) as info:
        I.parse("func @f() {\n  %a = constant() {value = 1} : i32\n  %b = add(%a %a) : i32\n  return()\n}\n")
    e = info.value
    assert (e.line, e.col) == (3, 15)
    assert "3:15" in str(e)
