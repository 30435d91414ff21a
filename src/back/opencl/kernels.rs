//! The OpenCL C of one-step kernels: one work item per point of the box the
//! executor gives a launch, in work groups of the pipeline's shape, and the
//! prelude every program's kernels share. User text is marked for the host
//! preprocessor ([`super::source::host`]).

use super::source::{ScalarType, host, scalar_type};
use crate::back::kernel::{
    MaybeUnused, acc_name, accumulators, body_with, dev_name, identity, index_declaration,
    kept_index, needs_origin, point_begin, point_end, reductions_of, sweep_arrays, sweep_summary,
    uses_offsets, uses_time,
};
use crate::ir::{ElemType, Program, ReduceOp, ScalarRole, Sweep};
use crate::lower::{LoweredPipeline, inputs, names};
use crate::plan::Unit;
use std::fmt::Write;

/// What a kernel of sweep `s` reads by value: (its type, its name in the
/// kernel, the launcher's C expression for the value): scalars, per-step values
/// and the time counter.
pub fn by_value(lp: &LoweredPipeline<'_>, s: usize) -> Vec<(ScalarType, String, String)> {
    let unit = lp.unit;
    let sweep = &unit.pipeline.body[s];
    let mut out: Vec<(ScalarType, String, String)> = inputs::passed(sweep)
        .map(|sc| {
            (
                scalar_type(sc.ty.as_deref().unwrap_or("long")),
                sc.name.clone(),
                format!("tp_in->{}", names::scalar_field(unit.pipeline, sc)),
            )
        })
        .collect();
    for (v, field) in names::step_values(s, sweep) {
        out.push((
            scalar_type(&v.ty),
            v.local.clone(),
            format!("tp_in->{field}[tp_l->tp_step]"),
        ));
    }
    if uses_time(unit, sweep) {
        let t = &unit.pipeline.time;
        out.push((
            scalar_type(&t.var_type),
            t.var.clone(),
            "tp_in->tp_t0 + tp_l->tp_step".to_string(),
        ));
    }
    out
}

/// Declarations of the sweep's per-point temporaries, in OpenCL types.
pub fn per_point(sweep: &Sweep, pad: &str) -> String {
    let mut w = String::new();
    for sc in sweep
        .scalars
        .iter()
        .filter(|s| s.role == ScalarRole::PerPoint)
    {
        if let Some(ty) = &sc.ty {
            let _ = writeln!(
                w,
                "{pad}{} {}; /* written at each point before use */",
                scalar_type(ty).device,
                cl_name(&sc.name)
            );
        }
    }
    w
}

/// The user's loop index of grid position `pos` at value `value`, where `body`
/// mentions it.
pub fn loop_var(
    program: &Program,
    sweep: &Sweep,
    pos: usize,
    body: &str,
    value: &str,
    pad: &str,
) -> String {
    let l = sweep.loop_for(pos).expect("one loop per dimension");
    let ty = scalar_type(&l.var_type).device;
    let var = cl_name(&l.var);
    index_declaration(program, body, (&ty, &var, value), MaybeUnused::VoidCast)
        .map_or(String::new(), |line| format!("{pad}{line}\n"))
}

/// The kernel of sweep `s`: a work item per point of its box.
pub fn kernel(lp: &LoweredPipeline<'_>, s: usize) -> String {
    let unit = lp.unit;
    let p = unit.pipeline;
    let sweep = &p.body[s];
    let rank = p.grid.rank();
    let (used, written) = sweep_arrays(unit, s);
    let mut args: Vec<String> = Vec::new();
    for a in &used {
        let arr = &p.arrays[*a];
        let constness = if written.contains(a) { "" } else { "const " };
        let dev = dev_name(&arr.ident());
        args.push(format!(
            "__global {constness}{} *{dev}, long {dev}_at",
            arr.elem.c_name()
        ));
    }
    args.push("long tp_base".into());
    if needs_origin(sweep) {
        args.push("long tp_origin".into());
    }
    for pos in 1..rank {
        args.push(format!("long tp_lo{pos}, long tp_n{pos}"));
    }
    for pos in 0..rank {
        args.push(format!("long tp_from{pos}, long tp_to{pos}"));
    }
    for (ty, name, _) in by_value(lp, s) {
        args.push(format!("{} {}", ty.device, cl_name(&name)));
    }
    let reductions = reductions_of(unit, s);
    for (i, r) in &reductions {
        let ty = r.elem.c_name();
        args.push(format!(
            "__global {ty} *tp_red{i}, long tp_red{i}_at, __local {ty} *tp_scratch{i}"
        ));
    }
    if !reductions.is_empty() {
        args.push("long tp_cnt_lo, long tp_cnt_hi".into());
    }
    let mut w = String::new();
    let _ = writeln!(
        w,
        "\n/* {}: one work item a point. */\n__kernel void {}({})\n{{",
        sweep_summary(unit, s),
        lp.names.kernel(s),
        args.join(", ")
    );
    for a in &used {
        let dev = dev_name(&p.arrays[*a].ident());
        let _ = writeln!(w, "    {dev} += {dev}_at;");
    }
    for (i, _) in &reductions {
        let _ = writeln!(w, "    tp_red{i} += tp_red{i}_at;");
    }
    // Element strides of the chunk buffer: the innermost dimension is contiguous.
    // (None where every access keeps the user's subscripts.)
    let offsets = uses_offsets(sweep);
    for pos in (0..rank.saturating_sub(1)).rev().filter(|_| offsets) {
        let stride = if pos + 2 == rank {
            format!("tp_n{}", pos + 1)
        } else {
            format!("tp_s{} * tp_n{}", pos + 1, pos + 1)
        };
        let _ = writeln!(w, "    const long tp_s{pos} = {stride};");
    }
    w.push_str(&accumulators(unit, s, "    ", "this work item"));
    for pos in 0..rank {
        let _ = writeln!(
            w,
            "    const long tp_i{pos} = tp_from{pos} + (long)get_global_id({});",
            rank - 1 - pos
        );
    }
    let inside: Vec<String> = (0..rank)
        .map(|pos| format!("tp_i{pos} < tp_to{pos}"))
        .collect();
    let _ = writeln!(
        w,
        "    if ({}) {{ /* work items past the box do nothing (but reach the barriers) */",
        inside.join(" && ")
    );
    let mut e = "(tp_i0 - tp_base)".to_string();
    for pos in 1..rank {
        e = format!("({e}) * tp_n{pos} + (tp_i{pos} - tp_lo{pos})");
    }
    if offsets {
        let _ = writeln!(w, "        const long tp_e = {e};");
    }
    // Every access is the point's own element plus a constant number of strides.
    let index = |offsets: &[i64]| {
        let mut e = "tp_e".to_string();
        for (pos, o) in offsets.iter().enumerate() {
            let unit = if pos + 1 == rank {
                String::new()
            } else {
                format!("tp_s{pos}")
            };
            let term = match (o.abs(), unit.is_empty()) {
                (0, _) => continue,
                (m, true) => m.to_string(),
                (1, false) => unit,
                (m, false) => format!("{m} * {unit}"),
            };
            e.push_str(if *o < 0 { " - " } else { " + " });
            e.push_str(&term);
        }
        e
    };
    let body = body_with(unit.program, sweep, &|acc| {
        let at = match &acc.kept {
            Some(kept) => kept_index(kept),
            None => index(&acc.offsets),
        };
        format!("{}[{at}]", dev_name(&p.arrays[acc.array].ident()))
    });
    let pad = "        ";
    for pos in 0..rank {
        w.push_str(&loop_var(
            unit.program,
            sweep,
            pos,
            &body,
            &format!("tp_i{pos}"),
            pad,
        ));
    }
    w.push_str(&per_point(sweep, pad));
    w.push_str(&c_math(&point_begin(unit, s, pad)));
    let _ = writeln!(w, "{pad}{}", host(&c_math(&body)));
    if !reductions.is_empty() {
        w.push_str(&c_math(&point_end(
            unit,
            s,
            "tp_i0",
            "tp_cnt_lo",
            "tp_cnt_hi",
            pad,
        )));
    }
    w.push_str("    }\n");
    for (i, r) in &reductions {
        let _ = writeln!(
            w,
            "    tpace_group_reduce_{suffix}({acc}, {id}, {op}, tp_scratch{i}, tp_red{i}); /* every work item gets here */",
            suffix = suffix(r.elem),
            acc = acc_name(*i),
            id = identity(r),
            op = op_code(r.op),
        );
    }
    w.push_str("}\n");
    w
}

fn suffix(e: ElemType) -> &'static str {
    match e {
        ElemType::Float => "f",
        ElemType::Double => "d",
    }
}

fn op_code(op: ReduceOp) -> u32 {
    match op {
        ReduceOp::Sum => 0,
        ReduceOp::Max => 1,
        ReduceOp::Min => 2,
    }
}

/// C's math functions take and return `double` (the `f` ones `float`); OpenCL's
/// are overloaded on their argument's type. A sweep's calls are renamed
/// `tpace_c_NAME` ([`c_math`]), macros that give them C's meaning: `sqrt(x)` of
/// a float computes in double, as the sequential program does. (OpenCL
/// implementations may define the built-in names as macros themselves, so the
/// built-ins keep theirs.)
const C_MATH: &[(&str, usize)] = &[
    ("acos", 1),
    ("acosh", 1),
    ("asin", 1),
    ("asinh", 1),
    ("atan", 1),
    ("atanh", 1),
    ("cbrt", 1),
    ("ceil", 1),
    ("cos", 1),
    ("cosh", 1),
    ("erf", 1),
    ("erfc", 1),
    ("exp", 1),
    ("exp2", 1),
    ("expm1", 1),
    ("fabs", 1),
    ("floor", 1),
    ("lgamma", 1),
    ("log", 1),
    ("log10", 1),
    ("log1p", 1),
    ("log2", 1),
    ("rint", 1),
    ("round", 1),
    ("sin", 1),
    ("sinh", 1),
    ("sqrt", 1),
    ("tan", 1),
    ("tanh", 1),
    ("tgamma", 1),
    ("trunc", 1),
    ("atan2", 2),
    ("copysign", 2),
    ("fdim", 2),
    ("fmax", 2),
    ("fmin", 2),
    ("fmod", 2),
    ("hypot", 2),
    ("pow", 2),
    ("fma", 3),
];

/// What every program's kernels begin with: no contraction of `a * b + c`
/// (C's meaning, bit for bit), double precision and 64-bit atomics where the
/// device has them, C's math functions, the reductions' helpers, and the
/// fused kernels' argument struct.
pub fn prelude(any_double_reduction: bool, fuse_max: u32) -> String {
    let mut w = String::from(
        "/* tpace: OpenCL C kernels (generated). */\n\
         #pragma OPENCL FP_CONTRACT OFF\n\
         #ifdef cl_khr_fp64\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#endif\n\
         #ifdef cl_khr_int64_base_atomics\n#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n#endif\n\
         #ifndef HUGE_VAL\n#define HUGE_VAL INFINITY\n#endif\n\
         #define TPACE_MAX(a, b) ((a) > (b) ? (a) : (b))\n\
         #define TPACE_MIN(a, b) ((a) < (b) ? (a) : (b))\n\
         /* C's math functions, as a sweep calls them: double in, double out (the f-suffixed ones float). */\n",
    );
    for (f, n) in C_MATH {
        let params: Vec<String> = (0..*n)
            .map(|i| format!("tp_{}", (b'a' + i as u8) as char))
            .collect();
        let dbl: Vec<String> = params.iter().map(|p| format!("(double)({p})")).collect();
        let flt: Vec<String> = params.iter().map(|p| format!("(float)({p})")).collect();
        let _ = writeln!(
            w,
            "#define tpace_c_{f}({ps}) {f}({d})\n#define tpace_c_{f}f({ps}) {f}({fl})",
            ps = params.join(", "),
            d = dbl.join(", "),
            fl = flt.join(", ")
        );
    }
    w.push_str(
        "/* Reductions: a work group combines its items' terms in local memory, then adds them into\n \
         * the step's slot with a compare-and-swap loop (op 0 sum, 1 max, 2 min). */\n\
         float tpace_combine_f(float a, float b, int op) { return op == 0 ? a + b : op == 1 ? TPACE_MAX(a, b) : TPACE_MIN(a, b); }\n\
         void tpace_atomic_f(volatile __global float *slot, float v, int op)\n{\n    \
         volatile __global int *word = (volatile __global int *)slot;\n    \
         int old = *word, assumed;\n    \
         do {\n        assumed = old;\n        \
         const float next = tpace_combine_f(as_float(assumed), v, op);\n        \
         if (as_int(next) == assumed)\n            return;\n        \
         old = atomic_cmpxchg(word, assumed, as_int(next));\n    \
         } while (old != assumed);\n}\n",
    );
    let group = |ty: &str, sfx: &str| {
        format!(
            "void tpace_group_reduce_{sfx}({ty} v, {ty} identity, int op, __local {ty} *scratch, __global {ty} *slot)\n{{\n    \
             const int n = (int)(get_local_size(0) * get_local_size(1) * get_local_size(2));\n    \
             const int id = (int)(get_local_id(0) + get_local_size(0) * (get_local_id(1) + get_local_size(1) * get_local_id(2)));\n    \
             int span = 1;\n    \
             while (span < n)\n        span *= 2;\n    \
             scratch[id] = v;\n    \
             barrier(CLK_LOCAL_MEM_FENCE);\n    \
             for (int s = span / 2; s > 0; s /= 2) {{\n        \
             if (id < s && id + s < n)\n            scratch[id] = tpace_combine_{sfx}(scratch[id], scratch[id + s], op);\n        \
             barrier(CLK_LOCAL_MEM_FENCE);\n    }}\n    \
             if (id == 0)\n        tpace_atomic_{sfx}(slot, scratch[0], op);\n    \
             (void)identity;\n}}\n"
        )
    };
    w.push_str(&group("float", "f"));
    if any_double_reduction {
        w.push_str(
            "#ifndef cl_khr_int64_base_atomics\n\
             #error \"tpace: this program reduces doubles on the device, which needs 64-bit atomics (cl_khr_int64_base_atomics); this OpenCL device has none\"\n\
             #endif\n\
             double tpace_combine_d(double a, double b, int op) { return op == 0 ? a + b : op == 1 ? TPACE_MAX(a, b) : TPACE_MIN(a, b); }\n\
             void tpace_atomic_d(volatile __global double *slot, double v, int op)\n{\n    \
             volatile __global long *word = (volatile __global long *)slot;\n    \
             long old = *word, assumed;\n    \
             do {\n        assumed = old;\n        \
             const double next = tpace_combine_d(as_double(assumed), v, op);\n        \
             if (as_long(next) == assumed)\n            return;\n        \
             old = atom_cmpxchg(word, assumed, as_long(next));\n    \
             } while (old != assumed);\n}\n",
        );
        w.push_str(&group("double", "d"));
    }
    let _ = writeln!(
        w,
        "/* What a fused (tiled) kernel needs to know about its group of steps (tpace_cl_fuse on the host). */\n\
         typedef struct tpace_cl_fuse {{\n    \
         long base, rows_lo, rows_hi, box_lo, box_hi, seg_lo, seg_hi, level0, skew, strip_rows, edge_in, edge_out;\n    \
         long steps, has_sin, has_sout, unused;\n    \
         long wlo[{fuse_max}], whi[{fuse_max}];\n}} tpace_cl_fuse;"
    );
    w
}

/// Words OpenCL C reserves that C leaves free for variables (address spaces,
/// access qualifiers, its own types): a user's variable of such a name is
/// `tp_kw_NAME` in a kernel ([`cl_name`]).
const CL_RESERVED: &[&str] = &[
    "global",
    "local",
    "constant",
    "private",
    "kernel",
    "read_only",
    "write_only",
    "read_write",
    "uniform",
    "pipe",
    "half",
    "uchar",
    "ushort",
    "uint",
    "ulong",
    "image1d_t",
    "image1d_array_t",
    "image1d_buffer_t",
    "image2d_t",
    "image2d_array_t",
    "image3d_t",
    "sampler_t",
    "event_t",
    "complex",
    "imaginary",
    "quad",
];

/// Whether OpenCL C reserves `name` (the words above, and vector types such as `float4`).
fn cl_reserved(name: &str) -> bool {
    if CL_RESERVED.contains(&name) {
        return true;
    }
    let scalar = [
        "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float", "double",
        "half",
    ];
    scalar.iter().any(|s| {
        name.strip_prefix(s)
            .is_some_and(|n| ["2", "3", "4", "8", "16"].contains(&n))
    })
}

/// A user's variable name as a kernel has it: `tp_kw_NAME` where OpenCL C
/// reserves the name (`private`, `local`, `half`), the name itself otherwise.
pub fn cl_name(name: &str) -> String {
    if cl_reserved(name) {
        format!("tp_kw_{name}")
    } else {
        name.to_string()
    }
}

/// User text for a kernel: calls of C's math functions renamed `tpace_c_NAME`
/// (see [`C_MATH`]), words OpenCL C reserves renamed as [`cl_name`] does;
/// string and character literals are left alone.
pub fn c_math(body: &str) -> String {
    let known = |name: &str| {
        let base = name
            .strip_suffix('f')
            .filter(|b| C_MATH.iter().any(|(f, _)| f == b));
        C_MATH.iter().any(|(f, _)| *f == name) || base.is_some()
    };
    let bytes = body.as_bytes();
    let mut out = String::with_capacity(body.len() + 32);
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'"' || c == b'\'' {
            // A literal, escapes included, copied whole.
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != c {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(bytes.len());
            out.push_str(&body[i..end]);
            i = end;
        } else if c == b'_' || c.is_ascii_alphabetic() {
            let mut j = i;
            while j < bytes.len() && (bytes[j] == b'_' || bytes[j].is_ascii_alphanumeric()) {
                j += 1;
            }
            let word = &body[i..j];
            let called = body[j..].trim_start().starts_with('(');
            if called && known(word) {
                out.push_str("tpace_c_");
            }
            out.push_str(&cl_name(word));
            i = j;
        } else if c.is_ascii_digit() {
            // A number, suffixes included (1.0f is not a call of f).
            let mut j = i;
            while j < bytes.len()
                && (bytes[j] == b'.' || bytes[j] == b'_' || bytes[j].is_ascii_alphanumeric())
            {
                j += 1;
            }
            out.push_str(&body[i..j]);
            i = j;
        } else {
            let ch = body[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// Whether any pipeline of the program reduces doubles.
pub fn reduces_doubles<'a>(units: impl Iterator<Item = Unit<'a>>) -> bool {
    units
        .flat_map(|u| u.pipeline.reductions.iter())
        .any(|r| r.elem == ElemType::Double)
}

#[cfg(test)]
mod tests {
    use super::c_math;

    #[test]
    fn math_calls_get_c_meaning() {
        assert_eq!(
            c_math("a = sqrt (b) + fmaxf(c, 1.0f) * expo(x) + \"sqrt(\";"),
            "a = tpace_c_sqrt (b) + tpace_c_fmaxf(c, 1.0f) * expo(x) + \"sqrt(\";"
        );
        assert_eq!(c_math("s = fabs(x) + sqrt;"), "s = tpace_c_fabs(x) + sqrt;");
        assert_eq!(
            c_math("const double private = local + half * float4;"),
            "const double tp_kw_private = tp_kw_local + tp_kw_half * tp_kw_float4;"
        );
    }
}
