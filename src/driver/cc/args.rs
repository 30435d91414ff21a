//! A C compiler's command line, as build systems give it to `tpace cc`: tpace's
//! own options (`--target`, `--mpi`, ...) picked out, the rest sorted into
//! what each step needs (preprocessor, compiler, linker, dependency files) in
//! the order it was given.

use crate::back::Target;
use std::path::PathBuf;

/// What the command is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Compile and link (no `-c`).
    Link,
    /// `-c`: compile each source into an object.
    Compile,
    /// `-S`, `-E`, `-M` or `-MM` without `-MD`, a query (`--version`,
    /// `-dumpversion`, `-print-...`) or no input at all: the C compiler answers,
    /// given the command line as it is.
    Ask,
}

/// One thing on the link line, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkItem {
    /// A C source file, compiled first (its object takes its place).
    Source(PathBuf),
    /// An object, archive, shared library or another file the linker takes.
    File(PathBuf),
    /// `-l NAME`, `-L DIR`, `-Wl,...`, `-Xlinker X` and other flags the link needs, as given.
    Flag(Vec<String>),
}

/// The dependency-file flags (`-MD`, `-MMD`, `-MF`, `-MT`, `-MQ`, `-MP`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deps {
    /// `-MD` or `-MMD`, if given (`-MMD`: without system headers).
    pub write: Option<&'static str>,
    /// `-MF FILE`.
    pub file: Option<PathBuf>,
    /// `-MT` / `-MQ` targets, as given (flag and value).
    pub targets: Vec<(String, String)>,
    /// `-MP`.
    pub phony: bool,
}

/// A parsed `tpace cc` command line.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// `--target` (default openacc).
    pub target: Target,
    /// `--mpi`: translate for several MPI processes and build with Open MPI's wrappers.
    pub mpi: bool,
    /// `--emulate`: CUDA translations built by the C++ compiler for the CPU emulation.
    pub emulate: bool,
    /// `--machine` (default the bundled default profile).
    pub machine: String,
    /// `--cuda-arch` (default: `native` where a GPU answers, else `sm_90`).
    pub cuda_arch: Option<String>,
    /// `--keep DIR`: keep the translated sources there.
    pub keep: Option<PathBuf>,
    /// `--show-commands`: print every command run, on standard error.
    pub show: bool,
    /// What to do.
    pub mode: Mode,
    /// `-o FILE`.
    pub output: Option<PathBuf>,
    /// The link line: sources, objects and link flags, in order.
    pub link: Vec<LinkItem>,
    /// Preprocessor flags, in order (`-D`, `-U`, `-I`, `-iquote`, `-isystem`,
    /// `-idirafter`, `-include`, `-imacros`), each with its value.
    pub preprocessor: Vec<Vec<String>>,
    /// `-D` values (`NAME` or `NAME=VALUE`), for the front end.
    pub defines: Vec<String>,
    /// `-I` folders, for the front end.
    pub include_dirs: Vec<PathBuf>,
    /// `-std=...`.
    pub std: Option<String>,
    /// `-O...` and `-g...` flags.
    pub optimize: Vec<String>,
    /// `-W...` warning flags (not `-Wl,`/`-Wp,`/`-Wa,`), and `-w`, `-pedantic`.
    pub warnings: Vec<String>,
    /// Every other flag, with its value where it takes one: for the C
    /// compiler, and for the link when the command links.
    pub other: Vec<Vec<String>>,
    /// Flags for compiling only (`-x LANG`, `--param`, `-Xassembler`, `-aux-info`).
    pub compile_only: Vec<Vec<String>>,
    /// The dependency-file flags.
    pub deps: Deps,
    /// The compiler's command line as given, tpace's options left out.
    pub compiler_args: Vec<String>,
}

/// Flags of the C compiler whose value is the next word when not joined.
const SEPARATE_VALUE: &[&str] = &[
    "-o", "-I", "-D", "-U", "-L", "-l", "-MF", "-MT", "-MQ", "-x",
];

/// Flags whose value is always the next word.
const NEXT_WORD: &[&str] = &[
    "-include",
    "-imacros",
    "-isystem",
    "-iquote",
    "-idirafter",
    "-iprefix",
    "-iwithprefix",
    "-isysroot",
    "-Xlinker",
    "-Xpreprocessor",
    "-Xassembler",
    "--param",
    "-aux-info",
];

/// The help of `tpace cc`.
pub const HELP: &str = "\
tpace cc: a C compiler driver for build systems

  make CC='tpace cc --target cuda'
  CC='tpace cc --target openacc' cmake -S . -B build     (or -DCMAKE_C_COMPILER=tpace -DCMAKE_C_COMPILER_ARG1='cc --target openacc')

Takes a C compiler's command line. Each C source that holds #pragma tpace or #pragma
stencil lines is translated (with the line's -I, -D and -U) and its translation compiled;
every other file goes to the C compiler untouched. -c gives one object per source, as a
C compiler does (a CUDA translation's kernels and host program combined into it); without
-c the objects are linked with what the target needs.

tpace's options (anywhere on the line):
  --target openacc|cuda|opencl   the translation's target (default openacc)
  --mpi                          translate for several MPI processes; build with mpicc
                                 (CUDA: nvcc -ccbin mpicxx)
  --emulate                      CUDA: build the kernels with the C++ compiler for the CPU
                                 emulation (no GPU, no nvcc; for tests)
  --machine NAME|FILE.toml       machine profile the default plans are for (default h100)
  --cuda-arch ARCH               nvcc's -arch (default native where nvidia-smi lists a GPU,
                                 else sm_90)
  --keep DIR                     keep each translation in DIR (NAME.c, or NAME.cu and
                                 NAME.host.c)
  --show-commands                print every command run on standard error
  --help                         this text

The C compiler's flags: -c -o -I -D -U -O* -g* -std= -W* -w -l -L -Wl, and -MD -MMD -MF
-MT -MQ -MP (a translated file's dependencies are its own source's and headers'); -E, -S,
-M, -MM and queries (--version, -dumpversion, -print-*) go to the C compiler as they are;
any other flag goes to every compiler and linker called (to nvcc through -Xcompiler).

Tools: the C compiler is $TPACE_CC (default gcc; not $CC, which a build names tpace by),
the C++ compiler $TPACE_CXX (default g++), nvcc $NVCC (default nvcc), Open MPI's wrappers
$MPICC and $MPICXX (default mpicc, mpicxx).
  openacc: $TPACE_CC -fopenacc, linked with -fopenacc -lm
  cuda:    nvcc -arch=ARCH --fmad=false for the kernels, $TPACE_CC for the host program,
           linked by nvcc (--emulate: $TPACE_CXX, linked by it)
  opencl:  $TPACE_CC, linked with -lOpenCL -lm
A translation needs C11 with POSIX: a -std= older than C11, or a strict one, is raised to
the GNU dialect of C11 (or of the standard given) for the files tpace translates.
Bit for bit: translated files are built with -ffp-contract=off (nvcc --fmad=false).
";

/// Parse `tpace cc`'s arguments (those after `cc`).
pub fn parse(args: &[String]) -> Result<Invocation, String> {
    let mut inv = Invocation {
        target: Target::Openacc,
        mpi: false,
        emulate: false,
        machine: crate::model::cmodel::DEFAULT_MACHINE.to_string(),
        cuda_arch: None,
        keep: None,
        show: false,
        mode: Mode::Link,
        output: None,
        link: Vec::new(),
        preprocessor: Vec::new(),
        defines: Vec::new(),
        include_dirs: Vec::new(),
        std: None,
        optimize: Vec::new(),
        warnings: Vec::new(),
        other: Vec::new(),
        compile_only: Vec::new(),
        deps: Deps::default(),
        compiler_args: Vec::new(),
    };
    let mut ask = false;
    let mut compile_only = false;
    let mut deps_only = false;
    let mut i = 0;
    let value_of = |i: &mut usize, flag: &str| -> Result<String, String> {
        *i += 1;
        args.get(*i)
            .cloned()
            .ok_or_else(|| format!("`{flag}` needs a value"))
    };
    while i < args.len() {
        let arg = args[i].as_str();
        // tpace's own options, as `--name value` or `--name=value`.
        let (name, joined) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (arg, None),
        };
        let tpace_value = |i: &mut usize| match &joined {
            Some(v) => Ok(v.clone()),
            None => value_of(i, name),
        };
        match name {
            "--target" => {
                let v = tpace_value(&mut i)?;
                inv.target = match v.as_str() {
                    "openacc" => Target::Openacc,
                    "cuda" => Target::Cuda,
                    "opencl" => Target::Opencl,
                    _ => {
                        return Err(format!(
                            "unknown --target `{v}`: give openacc, cuda or opencl"
                        ));
                    }
                };
                i += 1;
                continue;
            }
            "--machine" => {
                inv.machine = tpace_value(&mut i)?;
                i += 1;
                continue;
            }
            "--cuda-arch" => {
                inv.cuda_arch = Some(tpace_value(&mut i)?);
                i += 1;
                continue;
            }
            "--keep" => {
                inv.keep = Some(PathBuf::from(tpace_value(&mut i)?));
                i += 1;
                continue;
            }
            "--mpi" | "--emulate" | "--show-commands" if joined.is_none() => {
                match name {
                    "--mpi" => inv.mpi = true,
                    "--emulate" => inv.emulate = true,
                    _ => inv.show = true,
                }
                i += 1;
                continue;
            }
            _ => {}
        }
        // The compiler's own: every word kept for the C compiler as given.
        let start = i;
        let take = |i: &mut usize, flag: &str| -> Result<(String, Vec<String>), String> {
            // The value of a flag, joined (`-DN=1`) or the next word (`-D N=1`).
            if arg.len() > flag.len() {
                Ok((arg[flag.len()..].to_string(), vec![arg.to_string()]))
            } else {
                let v = value_of(i, flag)?;
                Ok((v.clone(), vec![arg.to_string(), v]))
            }
        };
        let separate = SEPARATE_VALUE
            .iter()
            .filter(|f| arg.starts_with(**f))
            .max_by_key(|f| f.len());
        if let Some(&flag) = separate {
            let (value, words) = take(&mut i, flag)?;
            match flag {
                "-o" => inv.output = Some(PathBuf::from(value)),
                "-I" => {
                    inv.include_dirs.push(PathBuf::from(&value));
                    inv.preprocessor.push(words);
                }
                "-D" => {
                    inv.defines.push(value);
                    inv.preprocessor.push(words);
                }
                "-U" => inv.preprocessor.push(words),
                "-L" | "-l" => inv.link.push(LinkItem::Flag(words)),
                "-MF" => inv.deps.file = Some(PathBuf::from(value)),
                "-MT" | "-MQ" => inv.deps.targets.push((flag.to_string(), value)),
                _ => inv.compile_only.push(words),
            }
        } else if NEXT_WORD.contains(&arg) {
            let v = value_of(&mut i, arg)?;
            let words = vec![arg.to_string(), v];
            match arg {
                "-include" | "-imacros" | "-isystem" | "-iquote" | "-idirafter" | "-iprefix"
                | "-iwithprefix" | "-isysroot" | "-Xpreprocessor" => inv.preprocessor.push(words),
                "-Xlinker" => inv.link.push(LinkItem::Flag(words)),
                _ => inv.compile_only.push(words),
            }
        } else if arg == "-c" {
            compile_only = true;
        } else if matches!(arg, "-E" | "-S") || is_query(arg) {
            ask = true;
        } else if matches!(arg, "-M" | "-MM") {
            deps_only = true;
        } else if matches!(arg, "-MD" | "-MMD") {
            inv.deps.write = Some(if arg == "-MD" { "-MD" } else { "-MMD" });
        } else if arg == "-MP" {
            inv.deps.phony = true;
        } else if let Some(std) = arg.strip_prefix("-std=") {
            inv.std = Some(std.to_string());
        } else if arg.starts_with("-O") || arg.starts_with("-g") {
            inv.optimize.push(arg.to_string());
        } else if arg.starts_with("-Wl,") {
            inv.link.push(LinkItem::Flag(vec![arg.to_string()]));
        } else if (arg.starts_with("-W") && !arg.starts_with("-Wp,") && !arg.starts_with("-Wa,"))
            || matches!(arg, "-w" | "-pedantic" | "-pedantic-errors")
        {
            inv.warnings.push(arg.to_string());
        } else if arg.starts_with('-') && arg.len() > 1 {
            inv.other.push(vec![arg.to_string()]);
        } else {
            let path = PathBuf::from(arg);
            inv.link.push(if is_c_source(&path) {
                LinkItem::Source(path)
            } else {
                LinkItem::File(path)
            });
        }
        inv.compiler_args.extend(args[start..=i].iter().cloned());
        i += 1;
    }
    let no_input = !inv
        .link
        .iter()
        .any(|l| matches!(l, LinkItem::Source(_) | LinkItem::File(_)));
    inv.mode = if ask || no_input || (deps_only && inv.deps.write.is_none()) {
        Mode::Ask
    } else if compile_only {
        Mode::Compile
    } else {
        Mode::Link
    };
    if deps_only && inv.deps.write.is_some() {
        // `-M -MD`: gcc writes the dependencies only; so does the C compiler here.
        inv.mode = Mode::Ask;
    }
    if inv.emulate && inv.target != Target::Cuda {
        return Err("--emulate builds CUDA translations for the CPU: add --target cuda".into());
    }
    Ok(inv)
}

/// A query the C compiler answers without compiling.
fn is_query(arg: &str) -> bool {
    arg == "--version"
        || arg == "--help"
        || arg == "-###"
        || arg.starts_with("-dump")
        || arg.starts_with("-print-")
        || arg.starts_with("--print-")
}

/// Whether a file is a C source by its name.
fn is_c_source(path: &std::path::Path) -> bool {
    path.extension().is_some_and(|e| e == "c")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn a_compile_line_as_cmake_writes_it() {
        let inv = parse(&words(
            "--target cuda -DNDEBUG -I inc -Iother -O3 -g -std=gnu99 -Wall -fPIC -MD -MT obj/a.c.o -MF obj/a.c.o.d -o obj/a.c.o -c src/a.c",
        ))
        .unwrap();
        assert_eq!(inv.target, Target::Cuda);
        assert_eq!(inv.mode, Mode::Compile);
        assert_eq!(inv.output, Some(PathBuf::from("obj/a.c.o")));
        assert_eq!(inv.defines, ["NDEBUG"]);
        assert_eq!(
            inv.include_dirs,
            [PathBuf::from("inc"), PathBuf::from("other")]
        );
        assert_eq!(inv.std.as_deref(), Some("gnu99"));
        assert_eq!(inv.optimize, ["-O3", "-g"]);
        assert_eq!(inv.warnings, ["-Wall"]);
        assert_eq!(inv.other, [vec!["-fPIC".to_string()]]);
        assert_eq!(inv.deps.write, Some("-MD"));
        assert_eq!(inv.deps.file, Some(PathBuf::from("obj/a.c.o.d")));
        assert_eq!(
            inv.deps.targets,
            [("-MT".to_string(), "obj/a.c.o".to_string())]
        );
        assert_eq!(inv.link, [LinkItem::Source(PathBuf::from("src/a.c"))]);
        // tpace's options are not the compiler's.
        assert_eq!(inv.compiler_args[0], "-DNDEBUG");
        assert!(!inv.compiler_args.iter().any(|a| a.contains("cuda")));
    }

    #[test]
    fn a_link_line_keeps_its_order() {
        let inv = parse(&words(
            "a.o -L lib -lfoo b.o libx.a -Wl,-rpath,/x -Xlinker -z -o prog --target=opencl --mpi",
        ))
        .unwrap();
        assert_eq!(inv.mode, Mode::Link);
        assert_eq!(inv.target, Target::Opencl);
        assert!(inv.mpi);
        let flag = |w: &[&str]| LinkItem::Flag(w.iter().map(|s| s.to_string()).collect());
        assert_eq!(
            inv.link,
            [
                LinkItem::File("a.o".into()),
                flag(&["-L", "lib"]),
                flag(&["-lfoo"]),
                LinkItem::File("b.o".into()),
                LinkItem::File("libx.a".into()),
                flag(&["-Wl,-rpath,/x"]),
                flag(&["-Xlinker", "-z"]),
            ]
        );
    }

    #[test]
    fn questions_go_to_the_c_compiler() {
        for line in [
            "--version",
            "-E a.c",
            "-dumpversion",
            "-M a.c",
            "-S a.c",
            "-print-search-dirs",
            "",
        ] {
            assert_eq!(parse(&words(line)).unwrap().mode, Mode::Ask, "{line}");
        }
        assert_eq!(parse(&words("-MMD -c a.c")).unwrap().mode, Mode::Compile);
    }

    #[test]
    fn errors_in_words() {
        assert!(
            parse(&words("--target fortran a.c"))
                .unwrap_err()
                .contains("unknown --target `fortran`")
        );
        assert!(
            parse(&words("-c a.c -o"))
                .unwrap_err()
                .contains("`-o` needs a value")
        );
        assert!(
            parse(&words("--emulate a.c"))
                .unwrap_err()
                .contains("--target cuda")
        );
    }
}
