//! The C names of what tpace adds for one pipeline. Every one starts with
//! `tpace_` or `tp_`, so that none is a name the user's program or macros take.

use crate::ir::{Pipeline, Scalar, StepValue, Sweep};
use crate::text::{identifiers, is_cxx_only_keyword};

/// Names for pipeline number `index` (0-based) of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    prefix: String,
}

impl Names {
    /// The names of pipeline `index` (0-based; printed 1-based).
    pub fn new(index: usize) -> Names {
        Names {
            prefix: format!("tpace_p{}", index + 1),
        }
    }

    /// The struct of what the pipeline reads from the user's function.
    pub fn inputs(&self) -> String {
        format!("{}_in", self.prefix)
    }

    /// The function that runs the pipeline.
    pub fn run(&self) -> String {
        format!("{}_run", self.prefix)
    }

    /// The function that allocates the per-step values' arrays.
    pub fn alloc(&self) -> String {
        format!("{}_alloc", self.prefix)
    }

    /// The function that frees what the pipeline handed back (reductions' per-step
    /// results, per-step values).
    pub fn free(&self) -> String {
        format!("{}_free", self.prefix)
    }

    /// The performance model's figures for the pipeline.
    pub fn model(&self) -> String {
        format!("{}_model", self.prefix)
    }

    /// The launcher of sweep `s` (0-based).
    pub fn launcher(&self, s: usize) -> String {
        format!("{}_sweep{}", self.prefix, s + 1)
    }

    /// The launcher of the fused kernel.
    pub fn fused_launcher(&self) -> String {
        format!("{}_fused", self.prefix)
    }

    /// The target's function that chooses the steps one kernel advances (and
    /// whatever else the target decides per run, such as OpenCL's work-group
    /// shape) when the pipeline starts (`tpace_shape::steps_per_kernel`).
    pub fn steps(&self) -> String {
        format!("{}_steps", self.prefix)
    }

    /// A target's configuration of the pipeline's kernels (OpenCL: its work-group
    /// figures and choice).
    pub fn config(&self) -> String {
        format!("{}_config", self.prefix)
    }

    /// A device kernel of sweep `s` (targets whose kernels are functions of their own).
    pub fn kernel(&self, s: usize) -> String {
        format!("{}_sweep{}_kernel", self.prefix, s + 1)
    }

    /// The fused kernel of sweep `s`.
    pub fn fused_kernel(&self, s: usize) -> String {
        format!("{}_sweep{}_fused", self.prefix, s + 1)
    }
}

/// The inputs field that carries per-step value `v` of sweep `s`: one value per step.
pub fn step_value_field(s: usize, v: &StepValue) -> String {
    format!("tp_sweep{}_{}", s + 1, v.local.trim_start_matches("tp_"))
}

/// The inputs field that carries reduction `i`'s per-step results.
pub fn reduction_field(i: usize) -> String {
    format!("tp_reduced{i}")
}

/// The per-step values of sweep `s` with their inputs fields.
pub fn step_values(s: usize, sweep: &Sweep) -> impl Iterator<Item = (&StepValue, String)> {
    sweep
        .step_values
        .iter()
        .map(move |v| (v, step_value_field(s, v)))
}

/// The inputs field that carries scalar `sc` of a sweep of `p`: its name (or
/// `tp_kw_NAME` where it is a C++ keyword, since the struct is also C++) where its
/// value is the variable of that name; for a sweep function's parameter that the
/// call binds to another expression, `tp_argN_NAME`, numbered over the pipeline's
/// distinct (name, value) pairs of that kind.
pub fn scalar_field(p: &Pipeline, sc: &Scalar) -> String {
    if sc.value == sc.name {
        return cxx_name(&sc.name);
    }
    let mut bound: Vec<(&str, &str)> = Vec::new();
    for o in p.body.iter().flat_map(|s| &s.scalars) {
        if o.value != o.name && !bound.contains(&(o.name.as_str(), o.value.as_str())) {
            bound.push((&o.name, &o.value));
        }
    }
    let n = bound
        .iter()
        .position(|b| *b == (sc.name.as_str(), sc.value.as_str()))
        .map_or(0, |i| i + 1);
    format!("tp_arg{n}_{}", sc.name)
}

/// A variable's name where C++ compiles it: `tp_kw_NAME` for a C++ keyword
/// (`new`, `class`, `this` may name a C variable), the name itself otherwise.
pub fn cxx_name(name: &str) -> String {
    if is_cxx_only_keyword(name) {
        format!("tp_kw_{name}")
    } else {
        name.to_string()
    }
}

/// The words `<iso646.h>` defines as the operators they are in C++ (`and`, `or`):
/// never renamed in text, where they may be those operators.
pub const ISO646: [&str; 11] = [
    "and", "and_eq", "bitand", "bitor", "compl", "not", "not_eq", "or", "or_eq", "xor", "xor_eq",
];

/// The names a kernel of `sweep` would take from the user's C that are C++
/// keywords: its scalars, loop indices and the time counter where C++ reserves
/// their names, and any other C++-only keyword the body mentions (a variable it
/// declares itself), but for `and`, `or`, `not` and the other words `<iso646.h>`
/// defines as the operators they are in C++.
pub fn cxx_keyword_names(p: &Pipeline, sweep: &Sweep, source: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let variables = sweep
        .scalars
        .iter()
        .map(|s| s.name.as_str())
        .chain(sweep.loops.iter().map(|l| l.var.as_str()))
        .chain([p.time.var.as_str()]);
    let body = identifiers(&source[sweep.body.clone()])
        .into_iter()
        .filter(|w| !ISO646.contains(w));
    for n in variables.chain(body) {
        if is_cxx_only_keyword(n) && !out.iter().any(|o| o == n) {
            out.push(n.to_string());
        }
    }
    out
}
