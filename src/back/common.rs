//! Printing helpers shared by every back end.

use crate::ir::{Array, Layout, Program, Span};

/// The C runtime every build embeds, the reference included: clock and array dump.
pub const BASE_RUNTIME: &str = include_str!("runtime/base.h");

/// The target-independent part of the out-of-core runtime: parameters, chunk
/// arithmetic, the schedule executor, the memory budget and the report.
pub const SCHEDULE_RUNTIME: &str = include_str!("runtime/schedule.h");

/// The performance model in C (predictor and search), before the schedule part,
/// which asks it for the plan at start-up.
pub const MODEL_RUNTIME: &str = include_str!("runtime/model.h");

/// The machine a program is planned for: the profile's name and the C
/// definition of `tpace_program_model` (see `model::cmodel::program_model`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedFor {
    /// Machine profile name, for the file's header.
    pub machine: String,
    /// `static const tpace_model tpace_program_model = {...};` with a comment.
    pub constants: String,
}

/// Replace spans of `source` (non-overlapping, any order) with new text.
pub fn splice(source: &str, mut edits: Vec<(Span, String)>) -> String {
    edits.sort_by_key(|(s, _)| s.start);
    let mut out = String::with_capacity(source.len() + 1024);
    let mut at = 0;
    for (span, text) in edits {
        debug_assert!(span.start >= at, "overlapping edits");
        out.push_str(&source[at..span.start]);
        out.push_str(&text);
        at = span.end;
    }
    out.push_str(&source[at..]);
    out
}

/// Leading whitespace of the line that contains byte `at`.
pub fn indent_at(source: &str, at: usize) -> String {
    let line_start = source[..at].rfind('\n').map_or(0, |i| i + 1);
    source[line_start..]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect()
}

/// Indent every non-empty line of `text` by `indent`, except the first.
pub fn indent_rest(text: &str, indent: &str) -> String {
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        if i > 0 {
            out.push('\n');
            if !line.is_empty() {
                out.push_str(indent);
            }
        }
        out.push_str(line);
    }
    out
}

/// C expression for the address of the array's first grid element (all `lo` indices).
pub fn host_base(program: &Program, array: &Array) -> String {
    match array.layout {
        Layout::Flat => format!("(void *)({})", array.name),
        Layout::Static | Layout::PointerToArray => {
            let subs: String = program
                .pipeline
                .grid
                .dims
                .iter()
                .map(|d| format!("[{}]", d.lo))
                .collect();
            format!("(void *)&{}{subs}", array.display_name())
        }
    }
}

/// C expression for the elements in one plane (product of the inner extents).
pub fn plane_elements(program: &Program) -> String {
    let dims = &program.pipeline.grid.dims;
    if dims.len() == 1 {
        return "(size_t)1".to_string();
    }
    dims[1..]
        .iter()
        .map(|d| format!("(size_t)({})", d.n))
        .collect::<Vec<_>>()
        .join(" * ")
}

/// C `long` initialisers for a list of extent expressions: `(long)(a), (long)(b)`.
fn long_list<'a>(values: impl IntoIterator<Item = &'a str>) -> String {
    values
        .into_iter()
        .map(|v| format!("(long)({v})"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Statements that append every listed array to `$TPACE_DUMP` (for `tpace run`).
pub fn dump_block(program: &Program, indent: &str) -> String {
    let mut out = format!(
        "{indent}/* tpace: write the final arrays to the file named by TPACE_DUMP, if set (used by `tpace run`). */\n"
    );
    let dims = &program.pipeline.grid.dims;
    let los = long_list(dims.iter().map(|d| d.lo.as_str()));
    let ns = long_list(dims.iter().map(|d| d.n.as_str()));
    for a in &program.pipeline.arrays {
        out.push_str(&format!(
            "{indent}tpace_dump(\"{name}\", {base}, sizeof({ty}), {rank}, (const long[]){{{los}}}, (const long[]){{{ns}}});\n",
            name = a.display_name(),
            base = host_base(program, a),
            ty = a.elem.c_name(),
            rank = dims.len(),
        ));
    }
    out.push_str(&super::reduce::dump_values(program, indent));
    out
}

/// The statement that leaves the time counter where the sequential loop leaves it.
pub fn final_counter(program: &Program) -> Option<String> {
    let t = &program.pipeline.time;
    if t.declared_type.is_some() {
        return None;
    }
    Some(format!(
        "{var} = ({start}) + ({steps} > 0 ? {steps} : 0); (void)&{var};",
        var = t.var,
        start = t.start,
        steps = t.trip_count()
    ))
}

/// `#define`s for the inner extents and `TPACE_AT(i0, ..)`: the element of a chunk
/// buffer whose first plane is grid plane `tp_base` (the same in every target).
pub fn index_macros(program: &Program) -> String {
    let rank = program.pipeline.grid.rank();
    let mut w = String::new();
    for (pos, d) in program.pipeline.grid.dims.iter().enumerate().skip(1) {
        w.push_str(&format!("#define TPACE_LO{pos} ({})\n", d.lo));
        w.push_str(&format!("#define TPACE_N{pos} ({})\n", d.n));
    }
    let params: Vec<String> = (0..rank).map(|i| format!("i{i}")).collect();
    let mut index = "((long)(i0) - tp_base)".to_string();
    for pos in 1..rank {
        index = format!("({index} * (long)TPACE_N{pos} + ((long)(i{pos}) - (long)TPACE_LO{pos}))");
    }
    w.push_str(&format!(
        "/* Element (i0, ..) of a chunk buffer whose first plane is grid plane tp_base. */\n\
         #define TPACE_AT({}) {index}\n",
        params.join(", ")
    ));
    w
}

/// `#undef`s matching [`index_macros`].
pub fn index_macros_end(program: &Program) -> String {
    let mut w = String::from("#undef TPACE_AT\n");
    for pos in 1..program.pipeline.grid.rank() {
        w.push_str(&format!("#undef TPACE_LO{pos}\n#undef TPACE_N{pos}\n"));
    }
    w
}

/// Statements that fill `tpace_shape tp_shape` and `tpace_array tp_arrays[]`, start
/// the executor `tp`, and check that declared row lengths match the `size` clause
/// (at 4 spaces of indent). `fusion` is the plan's fusion when the target prints
/// fused kernels (`None`: every kernel advances one step).
pub fn executor_setup(
    program: &Program,
    plan: &crate::plan::Plan,
    fusion: Option<&crate::plan::Fusion>,
) -> String {
    use crate::plan::Transfer;
    let p = &program.pipeline;
    let mut w = String::new();
    w.push_str("    /* The listed arrays: host memory, element size, and how each moves. */\n");
    w.push_str(&format!(
        "    tpace_array tp_arrays[{}];\n    memset(tp_arrays, 0, sizeof tp_arrays);\n",
        p.arrays.len()
    ));
    for (i, (a, t)) in p.arrays.iter().zip(&plan.transfers).enumerate() {
        let why = match t {
            Transfer::UpDown => "read and written",
            Transfer::Up => "only read",
            Transfer::LastBlock => "pure temporary: moved in the last block only",
            Transfer::Folded => {
                "the copy's temporary: never on the device, its final values come from the copy's destination"
            }
            Transfer::Unused => "not used by any sweep",
        };
        w.push_str(&format!(
            "    tp_arrays[{i}].name = \"{name}\"; tp_arrays[{i}].host = {base}; \
             tp_arrays[{i}].elem = sizeof({ty}); tp_arrays[{i}].transfer = {t}; /* {why} */\n",
            name = a.display_name(),
            base = host_base(program, a),
            ty = a.elem.c_name(),
            t = t.c_name(),
        ));
    }
    if let Some(swap) = plan.swap {
        w.push_str(&format!(
            "    tp_arrays[{}].swap = 1; /* the copy into it runs as a buffer swap */\n",
            swap.dst
        ));
        w.push_str(&fold_setup(program, swap));
    }
    if let Some(f) = fusion {
        w.push_str(&format!(
            "    tp_arrays[{}].fused = 1; /* fused kernels advance it several steps at a time */\n",
            f.array
        ));
    }
    let (fuse_max, fuse_default) =
        fusion.map_or((1, 1), |f| (crate::plan::MAX_FUSED_STEPS, f.default_steps));
    let skew = &plan.skew;
    let fields = [
        ("where", format!("\"{}\"", p.location), "the time loop"),
        (
            "lo",
            format!("(long)({})", p.grid.dims[0].lo),
            "first plane of the cut axis",
        ),
        (
            "n",
            format!("(long)({})", p.grid.dims[0].n),
            "planes along the cut axis",
        ),
        ("plane", plane_elements(program), "elements per plane"),
        ("rank", p.grid.rank().to_string(), "dimensions"),
        ("dim_lo", "tp_dim_lo".into(), ""),
        ("dim_n", "tp_dim_n".into(), ""),
        (
            "reach_lo",
            plan.step_reach.minus.to_string(),
            "mm: planes a step reads below",
        ),
        (
            "reach_hi",
            plan.step_reach.plus.to_string(),
            "mm: planes a step reads above",
        ),
        (
            "skew",
            skew.per_step.to_string(),
            "mmtb: planes the windows move down per step",
        ),
        (
            "below",
            skew.below().to_string(),
            "mmtb: planes below its window a chunk reads at step 0",
        ),
        (
            "above",
            skew.above().to_string(),
            "mmtb: planes above a chunk read before any write",
        ),
        ("steps", p.time.trip_count(), "time steps"),
        (
            "default_k",
            plan.defaults.k.to_string(),
            "defaults without TPACE_* or a memory budget",
        ),
        ("default_chunks", plan.defaults.chunks.to_string(), ""),
        ("default_streams", plan.defaults.streams.to_string(), ""),
        (
            "fuse_max",
            fuse_max.to_string(),
            "most steps one kernel may advance (TPACE_FUSE)",
        ),
        (
            "fuse_default",
            fuse_default.to_string(),
            "steps per kernel by default",
        ),
        (
            "model",
            "&tpace_program_model".into(),
            "the performance model that chooses the plan",
        ),
    ];
    w.push_str(
        "    /* The grid and the stencil's reach along the cut axis (outermost dimension). */\n",
    );
    let dims = &p.grid.dims;
    w.push_str(&format!(
        "    const long tp_dim_lo[{rank}] = {{{}}}, tp_dim_n[{rank}] = {{{}}}; /* per dimension, outermost first */\n",
        long_list(dims.iter().map(|d| d.lo.as_str())),
        long_list(dims.iter().map(|d| d.n.as_str())),
        rank = dims.len()
    ));
    w.push_str("    tpace_shape tp_shape;\n    memset(&tp_shape, 0, sizeof tp_shape);\n");
    for (field, value, why) in fields {
        let comment = if why.is_empty() {
            String::new()
        } else {
            format!(" /* {why} */")
        };
        w.push_str(&format!("    tp_shape.{field} = {value};{comment}\n"));
    }
    // Arrays declared with their shape must match the size clause's inner extents.
    let rank = p.grid.rank();
    for a in &p.arrays {
        if a.layout != Layout::Flat && rank > 1 {
            w.push_str(&format!(
                "    if (sizeof({name}[0]) != {plane} * sizeof({ty})) {{\n\
                 \x20       fprintf(stderr, \"tpace: %s: array `{name}` has rows of another length than the size clause's inner extents\\n\", tp_shape.where);\n\
                 \x20       exit(2);\n\
                 \x20   }}\n",
                name = a.display_name(),
                plane = plane_elements(program),
                ty = a.elem.c_name(),
            ));
        }
    }
    if p.reductions.is_empty() {
        w.push_str(&format!(
            "    tpace_rt tp;\n    tpace_begin(&tp, &tp_shape, tp_arrays, {});\n",
            p.arrays.len()
        ));
    } else {
        w.push_str(&super::reduce::setup(program));
        w.push_str(&format!(
            "    tpace_rt tp;\n    tpace_begin_reducing(&tp, &tp_shape, tp_arrays, {}, tp_reds, {});\n",
            p.arrays.len(),
            p.reductions.len()
        ));
    }
    w
}

/// Declarations that tell the runtime where a swap's folded temporary gets its
/// final values: the copy's destination and the copy's box (its loop bounds).
fn fold_setup(program: &Program, swap: crate::plan::Swap) -> String {
    let p = &program.pipeline;
    let copy = &p.body[swap.copy];
    let bound = |hi: bool| -> String {
        long_list((0..p.grid.rank()).map(|pos| {
            let l = copy
                .loop_for(pos)
                .expect("a copy sweep has a loop per dimension");
            if hi { l.hi.as_str() } else { l.lo.as_str() }
        }))
    };
    format!(
        "    /* {tmp} ends equal to {dst} on the copy's box: [tp_fold_lo[d], tp_fold_hi[d]) in dimension d. */\n\
         \x20   const long tp_fold_lo[{rank}] = {{{lo}}}, tp_fold_hi[{rank}] = {{{hi}}};\n\
         \x20   tp_arrays[{t}].fold_of = {d}; tp_arrays[{t}].fold_lo = tp_fold_lo; tp_arrays[{t}].fold_hi = tp_fold_hi;\n",
        tmp = p.arrays[swap.tmp].display_name(),
        dst = p.arrays[swap.dst].display_name(),
        rank = p.grid.rank(),
        lo = bound(false),
        hi = bound(true),
        t = swap.tmp,
        d = swap.dst,
    )
}

/// Largest window trail of any sweep (the executor's `max_tau`).
pub fn max_tau(plan: &crate::plan::Plan) -> i64 {
    plan.skew.sweep.iter().copied().max().unwrap_or(0)
}

/// The time loop's counter at step `tp_i` of the chunk's block, if sweeps use it.
pub fn time_counter(program: &Program) -> Option<String> {
    let var = &program.pipeline.time.var;
    let used = program
        .pipeline
        .body
        .iter()
        .any(|s| mentions(&program.source[s.body.clone()], var));
    used.then(|| {
        let t = &program.pipeline.time;
        let ty = t
            .declared_type
            .as_deref()
            .map(|t| format!("{t} "))
            .unwrap_or_default();
        format!("{ty}{var} = ({}) + tp_ch.t + tp_i;", t.start)
    })
}

/// The sweep body's text without its per-step values (which the host evaluates),
/// to ask what the kernel itself uses.
pub fn kernel_text(program: &Program, sweep: &crate::ir::Sweep) -> String {
    let edits = sweep
        .step_values
        .iter()
        .map(|v| (v.span.clone(), String::new()))
        .collect();
    splice(&program.source[..sweep.body.end], edits)[sweep.body.start..].to_string()
}

/// One-line description of a sweep for the generated comments.
pub fn sweep_summary(program: &Program, facts: &crate::analysis::Facts, s: usize) -> String {
    let p = &program.pipeline;
    let f = &facts.sweeps[s];
    let (line, _) = crate::diag::line_col(&program.source, p.body[s].span.start);
    let names = |set: &std::collections::BTreeSet<usize>| {
        set.iter()
            .map(|a| p.arrays[*a].display_name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let what = match f.copy {
        Some((d, r)) => format!(
            "copies {} into {}",
            p.arrays[r].display_name(),
            p.arrays[d].display_name()
        ),
        None => {
            // What it reads: arrays, then per-step values (`fict[t]`).
            let mut from: Vec<String> = f
                .reads
                .iter()
                .map(|a| p.arrays[*a].display_name())
                .collect();
            from.extend(p.body[s].step_values.iter().map(|v| v.text.clone()));
            if from.is_empty() {
                format!("writes {}", names(&f.writes))
            } else {
                format!("writes {} from {}", names(&f.writes), from.join(", "))
            }
        }
    };
    format!("Sweep {n} (line {line}) {what}", n = s + 1)
}

/// The innermost body of a sweep, verbatim except that listed arrays index the
/// chunk buffers, `tp_<name>[index(offsets)]`, without its outer braces.
pub fn rewritten_body(
    program: &Program,
    sweep: &crate::ir::Sweep,
    index: &dyn Fn(&[i64]) -> String,
) -> String {
    let p = &program.pipeline;
    rewritten_body_with(program, sweep, &|acc| {
        format!(
            "{}[{}]",
            dev_name(&p.arrays[acc.array].ident()),
            index(&acc.offsets)
        )
    })
}

/// The innermost body of a sweep, verbatim except that every listed-array access
/// is replaced by `access(acc)` and per-step values by their locals, without its
/// outer braces.
pub fn rewritten_body_with(
    program: &Program,
    sweep: &crate::ir::Sweep,
    access: &dyn Fn(&crate::ir::Access) -> String,
) -> String {
    let mut seen = std::collections::BTreeSet::new();
    let mut edits = Vec::new();
    for acc in &sweep.accesses {
        if !seen.insert(acc.span.start) {
            continue;
        }
        edits.push((
            acc.span.start - sweep.body.start..acc.span.end - sweep.body.start,
            access(acc),
        ));
    }
    // Per-step values arrive by value, evaluated on the host.
    for v in &sweep.step_values {
        edits.push((
            v.span.start - sweep.body.start..v.span.end - sweep.body.start,
            v.local.clone(),
        ));
    }
    let body = &program.source[sweep.body.clone()];
    let text = splice(body, edits);
    let trimmed = text.trim();
    let inner = trimmed
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .unwrap_or(trimmed);
    inner.trim().to_string()
}

/// `TPACE_AT(x - 1, y)`: the element at `offsets` from the sweep's loop indices.
pub fn index_by_macro(sweep: &crate::ir::Sweep, offsets: &[i64]) -> String {
    let subs: Vec<String> = offsets
        .iter()
        .enumerate()
        .map(|(pos, off)| {
            let var = &sweep.loop_for(pos).expect("one loop per dimension").var;
            match off {
                0 => var.clone(),
                o if *o > 0 => format!("{var} + {o}"),
                o => format!("{var} - {}", -o),
            }
        })
        .collect();
    format!("TPACE_AT({})", subs.join(", "))
}

/// Name of the C variable that points at an array's chunk buffer.
pub fn dev_name(name: &str) -> String {
    format!("tp_{name}")
}

/// Replace the `init` and `pipeline` pragmas by comments and the time loop by
/// `block`, copying everything else verbatim.
pub fn splice_pipeline(program: &Program, block: &str) -> String {
    splice(&program.source, splice_pipeline_edits(program, block))
}

/// The edits of [`splice_pipeline`], for back ends that add edits of their own.
pub fn splice_pipeline_edits(program: &Program, block: &str) -> Vec<(Span, String)> {
    let p = &program.pipeline;
    let src = &program.source;
    let mut edits = Vec::new();
    if let Some(init) = &program.init {
        let line = src[init.clone()].trim_end();
        edits.push((
            init.start..init.start + line.len(),
            "/* tpace init: device buffers are set up where the pipelined loop starts */"
                .to_string(),
        ));
    }
    let directive = src[p.pragma.clone()]
        .trim_start_matches('#')
        .replace("*/", "* /");
    edits.push((p.pragma.clone(), format!("/* {directive} */")));
    let indent = indent_at(src, p.stmt.start);
    edits.push((p.stmt.clone(), indent_rest(block, &indent)));
    edits
}

/// Statements that leave the spatial loop indices declared outside the loops
/// where the sequential sweeps leave them (`x = max(lo, hi)` after a loop that
/// ran, in sweep order), so that code after the loop sees the same values.
pub fn final_loop_vars(program: &Program) -> Option<String> {
    let p = &program.pipeline;
    let mut stmts = Vec::new();
    let mut names = Vec::new();
    for sweep in &p.body {
        let mut ran: Vec<String> = Vec::new();
        for l in sweep.loops.iter().filter(|l| l.declared_type.is_none()) {
            let value = format!("TPACE_MAX(({}), ({}))", l.lo, l.hi);
            if ran.is_empty() {
                stmts.push(format!("{} = {value};", l.var));
            } else {
                stmts.push(format!("if ({}) {} = {value};", ran.join(" && "), l.var));
            }
            ran.push(format!("({}) < ({})", l.lo, l.hi));
            if !names.contains(&l.var) {
                names.push(l.var.clone());
            }
        }
    }
    if stmts.is_empty() {
        return None;
    }
    let voids: String = names.iter().map(|n| format!(" (void)&{n};")).collect();
    Some(format!(
        "if ({steps} > 0) {{ {} }}{voids}",
        stmts.join(" "),
        steps = p.time.trip_count()
    ))
}

/// The executor's chunk loop, the same for every target: per chunk its buffers,
/// per step the time counter and (with a swap) which buffer is which, then the
/// sweeps as `sweep(s)` prints them (at 12 spaces of indent). `chunk_decls` are
/// the target's own per-chunk declarations (at 8 spaces).
pub fn chunk_loop(
    program: &Program,
    plan: &crate::plan::Plan,
    chunk_decls: &str,
    sweep: &dyn Fn(usize) -> String,
    fused_launch: Option<&str>,
) -> String {
    use crate::plan::Transfer;
    let p = &program.pipeline;
    let swap = plan.swap;
    let swapped = |a: usize| swap.is_some_and(|s| s.dst == a || s.tmp == a);
    let mut w = String::new();
    w.push_str("    /* Chunk by chunk, block by block: the executor moves the data, the kernels below compute. */\n");
    w.push_str("    tpace_chunk tp_ch;\n");
    w.push_str(&format!(
        "    while (tpace_next(&tp, &tp_ch, /* max_tau */ {})) {{\n",
        max_tau(plan)
    ));
    w.push_str("        const long tp_base = tp_ch.base;\n");
    w.push_str(chunk_decls);
    for (i, (a, t)) in p.arrays.iter().zip(&plan.transfers).enumerate() {
        if *t != Transfer::Unused && !swapped(i) {
            w.push_str(&format!(
                "        {ty} *{dev} = ({ty} *)tp_arrays[{i}].slot[tp_ch.slot];\n",
                ty = a.elem.c_name(),
                dev = dev_name(&a.ident())
            ));
        }
    }
    w.push_str(
        "        /* The block's steps on this chunk, each sweep on its window; where the target\n\
                \x20        * fuses steps, tp_len steps at a time. */\n",
    );
    w.push_str("        for (int tp_i = 0, tp_len = 1; tp_i < tp_ch.kb; tp_i += tp_len) {\n");
    w.push_str("            long tp_from, tp_to;\n");
    w.push_str("            tp_len = tpace_group_steps(&tp.plan, &tp_ch, tp_i);\n");
    if let Some(counter) = time_counter(program) {
        w.push_str(&format!("            {counter}\n"));
    }
    if let Some(s) = swap {
        let (dst, tmp) = (&p.arrays[s.dst], &p.arrays[s.tmp]);
        w.push_str(&format!(
            "            /* The copy {tmp} -> {dst} runs as a swap: {dst} has two buffers that trade roles every\n\
             \x20            * step, sweep {w} writes the next one instead of {tmp}, and the copy is skipped ({tmp}\n\
             \x20            * gets its final values from {dst}'s buffers after the last step). */\n\
             \x20           {ty} *{dd} = ({ty} *)tpace_swap_buffer(&tp, &tp_ch, {di}, tp_i);\n\
             \x20           {tty} *{td} = ({tty} *)tpace_swap_buffer(&tp, &tp_ch, {di}, tp_i + tp_len);\n",
            dst = dst.display_name(),
            tmp = tmp.display_name(),
            w = s.writer + 1,
            ty = dst.elem.c_name(),
            tty = tmp.elem.c_name(),
            dd = dev_name(&dst.ident()),
            td = dev_name(&tmp.ident()),
            di = s.dst,
        ));
    }
    let mut pad = "";
    if let Some(launch) = fused_launch {
        w.push_str("            if (tp_len > 1) {\n");
        w.push_str(launch);
        w.push_str("            } else {\n");
        pad = "    ";
    }
    let mut steps = String::new();
    // The copy a swap replaces is not run at all.
    for s in (0..p.body.len()).filter(|s| swap.is_none_or(|x| x.copy != *s)) {
        steps.push_str(&sweep(s));
    }
    w.push_str(&indented(&steps, pad));
    if fused_launch.is_some() {
        w.push_str("            }\n");
    }
    w.push_str("        }\n    }\n");
    w
}

/// `text` with `pad` before every non-empty line.
pub fn indented(text: &str, pad: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if !line.is_empty() {
            out.push_str(pad);
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

pub use crate::front::cst::mentions;

/// What follows the pipeline block in every target: the time counter and the
/// spatial indices end where the sequential loops leave them, then the dump.
pub fn after_pipeline(program: &Program) -> String {
    let mut w = String::new();
    if let Some(counter) = final_counter(program) {
        w.push_str(&format!(
            "{counter} /* the counter ends where the sequential loop leaves it */\n"
        ));
    }
    if let Some(indices) = final_loop_vars(program) {
        w.push_str(&format!(
            "/* ... and so do the spatial loop indices */\n{indices}\n"
        ));
    }
    // Per-point temporaries live in the kernels now; keep the host's copy "used".
    let mut temps: Vec<&str> = Vec::new();
    for sweep in &program.pipeline.body {
        for sc in &sweep.scalars {
            if sc.role == crate::ir::ScalarRole::PerPoint && !temps.contains(&sc.name.as_str()) {
                temps.push(&sc.name);
            }
        }
    }
    if !temps.is_empty() {
        let voids: String = temps.iter().map(|t| format!("(void)&{t}; ")).collect();
        w.push_str(&format!(
            "{} /* per-point temporaries of the sweeps */\n",
            voids.trim_end()
        ));
    }
    w.push_str(&dump_block(program, ""));
    w
}

/// The comment naming sweep `s` and the call that gives its window for this
/// step, at 12 spaces of indent (the same in every target).
pub fn window_call(
    program: &Program,
    facts: &crate::analysis::Facts,
    plan: &crate::plan::Plan,
    s: usize,
) -> String {
    let extra = plan.sweep_extra[s];
    format!(
        "            /* {}, on the planes of this step's window. */\n\
         \x20           tpace_window(&tp.plan, &tp_ch, tp_i, /* extra */ {}, {}, /* tau */ {}, &tp_from, &tp_to);\n",
        sweep_summary(program, facts, s),
        extra.minus,
        extra.plus,
        plan.skew.sweep[s]
    )
}
