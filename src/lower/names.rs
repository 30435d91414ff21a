//! The C names of what tpace adds for one pipeline. Every one starts with
//! `tpace_` or `tp_`, so that none is a name the user's program or macros take.

use crate::ir::{StepValue, Sweep};

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
