//! The compilers and linkers `tpace cc` calls, and how it calls them.

use super::args::Invocation;
use crate::back::Target;
use std::path::Path;
use std::process::Command;

/// The tools, from the environment.
#[derive(Debug, Clone)]
pub struct Tools {
    /// The C compiler and its own flags (`$TPACE_CC`, else `gcc`).
    pub cc: Vec<String>,
    /// The C++ compiler for the CPU emulation (`$TPACE_CXX`, else `g++`).
    pub cxx: Vec<String>,
    /// nvcc (`$NVCC`, else `nvcc`).
    pub nvcc: String,
    /// Open MPI's C and C++ wrappers (`$MPICC`, `$MPICXX`, else `mpicc`, `mpicxx`).
    pub mpicc: String,
    /// See [`Tools::mpicc`].
    pub mpicxx: String,
}

impl Tools {
    /// The tools the environment names.
    pub fn from_env() -> Tools {
        let var = |name: &str, default: &str| {
            std::env::var(name)
                .ok()
                .filter(|v| !v.trim().is_empty())
                .unwrap_or_else(|| default.to_string())
        };
        let words = |v: String| v.split_whitespace().map(String::from).collect();
        Tools {
            cc: words(var("TPACE_CC", "gcc")),
            cxx: words(var("TPACE_CXX", "g++")),
            nvcc: var("NVCC", "nvcc"),
            mpicc: var("MPICC", "mpicc"),
            mpicxx: var("MPICXX", "mpicxx"),
        }
    }

    /// The C compiler as one string (for the front end's preprocessor run).
    pub fn cc_line(&self) -> String {
        self.cc.join(" ")
    }

    /// Whether the C compiler is NVIDIA's `nvc` (its own OpenACC and FMA flags).
    fn nvc(&self) -> bool {
        self.cc.first().is_some_and(|c| c.contains("nvc"))
    }

    /// The C compiler (Open MPI's wrapper with `--mpi`).
    pub fn c_compiler(&self, inv: &Invocation) -> Command {
        if inv.mpi {
            Command::new(&self.mpicc)
        } else {
            command(&self.cc)
        }
    }

    /// The C compiler for what it is asked as it was asked (`-E`, `--version`,
    /// a file without directives).
    pub fn untouched(&self, inv: &Invocation) -> Command {
        let mut c = self.c_compiler(inv);
        c.args(&inv.compiler_args);
        c
    }

    /// Compile a plain C source into `object`, with the command line's flags.
    pub fn compile_plain(&self, inv: &Invocation, source: &Path, object: &Path) -> Command {
        let mut c = self.c_compiler(inv);
        c.args(inv.preprocessor.iter().flatten());
        c.args(inv.std.iter().map(|s| format!("-std={s}")));
        c.args(&inv.optimize).args(&inv.warnings);
        c.args(inv.other.iter().flatten());
        c.args(inv.compile_only.iter().flatten());
        c.args(inv.deps.write);
        if let Some(f) = &inv.deps.file {
            c.arg("-MF").arg(f);
        }
        for (flag, target) in &inv.deps.targets {
            c.arg(flag).arg(target);
        }
        if inv.deps.phony {
            c.arg("-MP");
        }
        c.arg("-c").arg(source).arg("-o").arg(object);
        c
    }

    /// Compile a translation's C file (the OpenACC or OpenCL program, or CUDA's
    /// host program) into `object`. `source_dir`: the folder of the user's
    /// source, where its quoted includes are found first.
    pub fn compile_translated_c(
        &self,
        inv: &Invocation,
        file: &Path,
        source_dir: &Path,
        object: &Path,
    ) -> Command {
        let mut c = self.c_compiler(inv);
        c.args(inv.preprocessor.iter().flatten());
        c.arg("-iquote").arg(source_dir);
        c.arg(format!("-std={}", translation_std(inv.std.as_deref())));
        c.args(&inv.optimize).args(&inv.warnings);
        c.args(inv.other.iter().flatten());
        c.args(inv.compile_only.iter().flatten());
        if self.nvc() {
            c.arg("-Mnofma");
        } else {
            c.arg("-ffp-contract=off");
        }
        if inv.target == Target::Openacc {
            c.arg(if self.nvc() { "-acc" } else { "-fopenacc" });
        }
        c.arg("-c").arg(file).arg("-o").arg(object);
        c
    }

    /// Compile a CUDA translation's kernel file into `object`: with nvcc, or
    /// for the CPU emulation (`--emulate`) with the C++ compiler.
    pub fn compile_kernels(&self, inv: &Invocation, cu: &Path, object: &Path) -> Command {
        if inv.emulate {
            let mut c = if inv.mpi {
                Command::new(&self.mpicxx)
            } else {
                command(&self.cxx)
            };
            c.args(inv.preprocessor.iter().flatten());
            c.args(&inv.optimize);
            c.args(inv.other.iter().flatten());
            c.args(["-std=c++17", "-ffp-contract=off", "-x", "c++", "-c"]);
            c.arg(cu).arg("-x").arg("none").arg("-o").arg(object);
            return c;
        }
        let mut c = self.nvcc(inv);
        for words in &inv.preprocessor {
            match words[0].get(..2) {
                Some("-D" | "-U" | "-I") => {
                    c.args(words);
                }
                // What nvcc has no option for goes to its host compiler.
                _ => {
                    c.arg("-Xcompiler").arg(words.join(","));
                }
            }
        }
        c.args(&inv.optimize);
        for words in &inv.other {
            c.arg("-Xcompiler").arg(words.join(","));
        }
        c.arg("-c").arg(cu).arg("-o").arg(object);
        c
    }

    /// nvcc with tpace's flags (the host compiler Open MPI's with `--mpi`).
    fn nvcc(&self, inv: &Invocation) -> Command {
        let mut c = Command::new(&self.nvcc);
        if inv.mpi {
            c.args(["-ccbin", &self.mpicxx]);
        }
        c.arg(format!("-arch={}", cuda_arch(inv)));
        c.arg("--fmad=false");
        c
    }

    /// Join the objects of one translation (CUDA's kernels and host program)
    /// into one relocatable object.
    pub fn combine(&self, parts: &[&Path], object: &Path) -> Command {
        let mut c = command(&self.cc);
        c.args(["-r", "-nostdlib"])
            .args(parts)
            .arg("-o")
            .arg(object);
        c
    }

    /// The dependency file of a translated source: the C preprocessor's
    /// `-M`/`-MM` over the user's source itself, for `object`.
    pub fn dependencies(
        &self,
        inv: &Invocation,
        source: &Path,
        object: &Path,
        file: &Path,
    ) -> Command {
        let mut c = self.c_compiler(inv);
        c.args(inv.preprocessor.iter().flatten());
        c.args(inv.std.iter().map(|s| format!("-std={s}")));
        c.arg(if inv.deps.write == Some("-MMD") {
            "-MM"
        } else {
            "-M"
        });
        c.arg("-MF").arg(file);
        if inv.deps.targets.is_empty() {
            c.arg("-MT").arg(object);
        }
        for (flag, target) in &inv.deps.targets {
            c.arg(flag).arg(target);
        }
        if inv.deps.phony {
            c.arg("-MP");
        }
        c.arg(source);
        c
    }

    /// The link of `items` (objects, archives and link flags, in order) into
    /// `output`, with what the target's programs need.
    pub fn link(&self, inv: &Invocation, items: &[Vec<String>], output: &Path) -> Command {
        let mut c = match inv.target {
            Target::Cuda if !inv.emulate => {
                let mut c = self.nvcc(inv);
                c.args(&inv.optimize);
                for words in &inv.other {
                    c.arg("-Xcompiler").arg(words.join(","));
                }
                for item in items {
                    match item[0].strip_prefix("-Wl,") {
                        Some(list) => c.arg("-Xlinker").arg(list),
                        None => c.args(item),
                    };
                }
                c
            }
            _ => {
                let mut c = if inv.target == Target::Cuda {
                    if inv.mpi {
                        Command::new(&self.mpicxx)
                    } else {
                        command(&self.cxx)
                    }
                } else {
                    self.c_compiler(inv)
                };
                c.args(&inv.optimize);
                c.args(inv.other.iter().flatten());
                c.args(items.iter().flatten());
                c
            }
        };
        c.arg("-o").arg(output);
        match inv.target {
            Target::Openacc => {
                c.arg(if self.nvc() { "-acc" } else { "-fopenacc" });
            }
            Target::Opencl => {
                c.arg("-lOpenCL");
            }
            Target::Cuda => {}
        }
        c.arg("-lm");
        c
    }
}

/// The global symbols an object defines, with their kinds (`nm -g
/// --defined-only`: `T` code, `D` data, `W` weak...; `$NM`, else nm).
pub fn global_symbols(object: &Path) -> Result<Vec<(String, char)>, crate::driver::Failure> {
    let nm = std::env::var("NM").unwrap_or_else(|_| "nm".into());
    let out = Command::new(&nm)
        .args(["-g", "--defined-only", "--format=posix"])
        .arg(object)
        .output()
        .map_err(|e| {
            crate::driver::Failure(format!(
                "tpace cc: error: cannot run `{nm}`: {e}\n  help: install binutils, or name it with NM\n"
            ))
        })?;
    if !out.status.success() {
        return Err(crate::driver::Failure(format!(
            "tpace cc: error: `{nm}` failed on {}: {}\n",
            object.display(),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let name = words.next()?.to_string();
            let kind = words.next()?.chars().next()?;
            Some((name, kind))
        })
        .collect())
}

/// `objcopy` making the symbols listed in `list` local (`$OBJCOPY`, else objcopy).
pub fn localize(object: &Path, list: &Path, output: &Path) -> Command {
    let mut c = Command::new(std::env::var("OBJCOPY").unwrap_or_else(|_| "objcopy".into()));
    c.arg(format!("--localize-symbols={}", list.display()))
        .arg(object)
        .arg(output);
    c
}

/// A command from a program and its own flags.
fn command(words: &[String]) -> Command {
    let mut c = Command::new(words.first().map_or("cc", String::as_str));
    c.args(&words[1.min(words.len())..]);
    c
}

/// nvcc's architecture: `--cuda-arch`, else `native` where a GPU answers
/// `nvidia-smi -L`, else `sm_90`.
fn cuda_arch(inv: &Invocation) -> String {
    if let Some(arch) = &inv.cuda_arch {
        return arch.clone();
    }
    let gpu = Command::new("nvidia-smi")
        .arg("-L")
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains("GPU"));
    if gpu { "native" } else { "sm_90" }.to_string()
}

/// The C standard a translation is compiled as: the one given if it is a GNU
/// dialect of C11 or later, else the GNU dialect of C11 or of the standard
/// given (the runtime needs C11 and POSIX).
pub fn translation_std(given: Option<&str>) -> String {
    let Some(given) = given else {
        return "gnu11".into();
    };
    let version = given
        .trim_start_matches("gnu")
        .trim_start_matches("c")
        .trim_start_matches("iso9899:");
    match version {
        "11" | "1x" | "2011" => "gnu11".into(),
        "17" | "18" | "2017" | "2018" => "gnu17".into(),
        "2x" | "23" | "2y" => format!("gnu{version}"),
        _ => "gnu11".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standards_for_a_translation() {
        assert_eq!(translation_std(None), "gnu11");
        assert_eq!(translation_std(Some("c99")), "gnu11");
        assert_eq!(translation_std(Some("gnu89")), "gnu11");
        assert_eq!(translation_std(Some("c11")), "gnu11");
        assert_eq!(translation_std(Some("iso9899:2017")), "gnu17");
        assert_eq!(translation_std(Some("gnu17")), "gnu17");
        assert_eq!(translation_std(Some("c2x")), "gnu2x");
        assert_eq!(translation_std(Some("gnu23")), "gnu23");
    }
}
