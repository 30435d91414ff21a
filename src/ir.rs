//! The stencil IR: plain data that every front end produces and every
//! analysis, planner and back end consumes.
//!
//! Dimensions are stored outermost first (C order): `dims[0]` is the slowest
//! varying index and the axis along which out-of-core schedules cut the grid.
//! The directive `loop dim(d)` numbers them the other way round, `dim(1)`
//! being the innermost; [`Grid::position_of_dim`] converts.

use std::ops::Range;

/// A byte range in the translated source file.
pub type Span = Range<usize>;

/// Widest halo, per side and dimension, that a `halo` clause may declare.
pub const MAX_HALO: i64 = 64;

/// One annotated program: the source text and its pipelined time loops.
#[derive(Debug, Clone)]
pub struct Program {
    /// Path of the input file, as given on the command line (for messages).
    pub path: String,
    /// Complete source text; everything outside the spans below is copied verbatim.
    pub source: String,
    /// Span of the `#pragma tpace init` line (without its newline), if present.
    pub init: Option<Span>,
    /// The pipelined time loops, in source order (at least one).
    pub pipelines: Vec<Pipeline>,
    /// The file's preprocessor lines (all but `#pragma`) and its file-scope type
    /// declarations (`typedef`, `struct`, `union`, `enum`), in order, with those
    /// of the program's own headers in place of the `#include` lines that bring
    /// them in: what a device file of its own may need to compile the sweeps'
    /// bodies (it takes only what they use, see `lower::declarations`).
    pub declarations: Vec<Declaration>,
    /// The functions of the file that sweeps call, directly or through each
    /// other, in source order: they run on the device too.
    pub device_functions: Vec<DeviceFunction>,
    /// Declarations of the file-scope constant scalars those functions read
    /// (`static const double dt = 0.1;`), in source order.
    pub device_constants: Vec<Span>,
    /// The functions of the file whose loop nests are sweeps of a pipeline
    /// (called from its time loop), in source order.
    pub sweep_functions: Vec<SweepFunction>,
    /// The program's `main`, if this file defines it: where a translation for
    /// several processes (`--mpi`) starts MPI.
    pub main: Option<MainFunction>,
    /// Names of the macros the program defines itself (in the file, in the headers it
    /// includes with quotes, or on the command line): generated code that the user's
    /// macros could rewrite is compiled with these set aside.
    pub user_macros: Vec<String>,
    /// Every macro defined at the end of the file as the C preprocessor saw it
    /// (the headers' and the command line's too; only the file's own lines
    /// when no preprocessor ran): what the model evaluates `size` extents with.
    pub macros: Vec<Macro>,
}

/// A preprocessor line or a file-scope type declaration of the program, from
/// the file itself or from one of its own headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declaration {
    /// Where it stands in the file: its own place, or for a header's, the place
    /// of the file's `#include` line that brings the header in.
    pub at: usize,
    /// Its text as written (a preprocessor line as one logical line).
    pub text: String,
    /// What it is.
    pub kind: DeclarationKind,
    /// The header it comes from (`None`: the file itself).
    pub header: Option<std::path::PathBuf>,
}

/// What a [`Declaration`] is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeclarationKind {
    /// `#if`, `#ifdef`, `#ifndef`: opens a conditional group.
    Open,
    /// `#elif`, `#elifdef`, `#elifndef`, `#else`.
    Branch,
    /// `#endif`.
    Close,
    /// `#define NAME ...`.
    Define(String),
    /// `#undef NAME`.
    Undef(String),
    /// `#include` of a header that is not the program's own (a system header,
    /// or one that was not found).
    Include,
    /// Another preprocessor line (`#error`, `#warning`, `#line`).
    Other,
    /// A type declaration (`typedef`, `struct`, `union`, `enum`) and the names
    /// it declares: typedef names, tags, enumerators.
    Type(Vec<String>),
}

impl Declaration {
    /// Whether it is a preprocessor line.
    pub fn is_directive(&self) -> bool {
        !matches!(self.kind, DeclarationKind::Type(_))
    }
}

/// A function of the file that a sweep calls (`static inline double sq(double)`):
/// a sweep's body becomes a kernel, so the function runs on the device too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceFunction {
    /// Its name.
    pub name: String,
    /// Its first declaration (a prototype or the definition), where an OpenACC
    /// `routine` directive must go.
    pub first: Span,
    /// Its definition.
    pub definition: Span,
}

/// A function of the file that holds sweeps (loop nests marked with their
/// dimensions) and that a time loop calls: each call is those sweeps of the step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepFunction {
    /// Its name.
    pub name: String,
    /// Its definition.
    pub definition: Span,
    /// The directive lines in it (`#pragma tpace loop dim(d)`), which the
    /// translation turns into comments.
    pub directives: Vec<Span>,
}

/// A `#define`, as the C preprocessor listed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Macro {
    /// Its name.
    pub name: String,
    /// Parameter names of a function-like macro; `None` for an object-like one.
    pub params: Option<Vec<String>>,
    /// The replacement text.
    pub body: String,
}

/// The function `main`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MainFunction {
    /// The whole definition.
    pub span: Span,
    /// The byte right after the `{` that opens its body.
    pub body: usize,
    /// Its parameters' names, `(argc, argv)`, when it takes them.
    pub args: Option<(String, String)>,
}

/// The time loop annotated with `pipeline`, and everything the directive says about it.
#[derive(Debug, Clone)]
pub struct Pipeline {
    /// Span of the directive line that makes the loop a pipeline (`#pragma tpace
    /// pipeline ...`, or the stencil dialect's `data` line).
    pub pragma: Span,
    /// The dialect's other lines for this pipeline outside its time loop (the
    /// stencil dialect's `begin`, `step`, `dimension` and `end`): the translation
    /// comments them out with `pragma`.
    pub directives: Vec<Span>,
    /// Span of the whole time `for` statement (header and body).
    pub stmt: Span,
    /// Span of the function definition that contains the time loop (kernels of
    /// targets that need file-scope functions go right before it).
    pub function: Span,
    /// Line:col of the time loop, for the generated code's comments and reports.
    pub location: String,
    /// The time loop's counter and trip count.
    pub time: TimeLoop,
    /// Index ranges of the grid along each dimension (the `size` clause).
    pub grid: Grid,
    /// Declared halo per dimension, outermost first (the `halo` clause).
    pub halo: Vec<Halo>,
    /// Arrays listed in `targetinout` and `targetin`, in clause order.
    pub arrays: Vec<Array>,
    /// Statements of one time step, in program order.
    pub body: Vec<Sweep>,
    /// Statements of the time loop that are not sweeps (resets, counters, prints), in
    /// program order; they run on the host when the time loop is replayed there.
    pub host: Vec<HostStatement>,
    /// Reductions inside sweeps (`gosa += ss * ss`), in sweep order.
    pub reductions: Vec<Reduction>,
    /// Whether the `async` clause asked for pipelined (asynchronous) execution.
    pub asynchronous: bool,
    /// The functions (indices into [`Program::device_functions`]) its sweeps call.
    pub device_functions: Vec<usize>,
    /// Pointers of listed arrays exchanged at the end of every step, if any
    /// (`float *t = a; a = b; b = t;`).
    pub rotation: Option<Rotation>,
}

/// Pointers of listed arrays exchanged at the end of every step through a
/// temporary of their type: double buffering by a pointer swap, or a
/// three-level scheme's `t = u0; u0 = u1; u1 = u2; u2 = t;`. The storage does
/// not move; what each pointer names does. At step `t` (0-based) array `a`'s
/// pointer names the storage array `after(t, a)`'s pointer named at the start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rotation {
    /// Per listed array, the listed array whose storage its pointer names after
    /// one step (itself for an array not rotated).
    pub takes: Vec<usize>,
    /// The statements that exchange them (host statements: the host replay of
    /// the time loop runs them, so the pointers end as the loop leaves them).
    pub statements: Vec<Span>,
}

impl Rotation {
    /// The storage array `a`'s pointer names after `steps` steps.
    pub fn after(&self, steps: usize, a: usize) -> usize {
        let mut at = a;
        for _ in 0..steps % self.cycle(a).max(1) {
            at = self.takes[at];
        }
        at
    }

    /// Steps after which array `a`'s pointer names its own storage again.
    pub fn cycle(&self, a: usize) -> usize {
        let mut at = self.takes[a];
        let mut n = 1;
        while at != a && n <= self.takes.len() {
            at = self.takes[at];
            n += 1;
        }
        n
    }

    /// Steps after which every pointer names its own storage again.
    pub fn period(&self) -> usize {
        let gcd = |mut a: usize, mut b: usize| {
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a
        };
        (0..self.takes.len()).fold(1, |p, a| {
            let c = self.cycle(a);
            p / gcd(p, c) * c
        })
    }

    /// Whether array `a` is exchanged with others.
    pub fn moves(&self, a: usize) -> bool {
        self.takes[a] != a
    }
}

/// A statement of the time loop that is not a sweep: it runs on the host.
#[derive(Debug, Clone)]
pub struct HostStatement {
    /// The whole statement, copied verbatim into the host replay of the time loop.
    pub span: Span,
    /// Index into [`Pipeline::body`] of the sweep it precedes (`body.len()`: after the last).
    pub before: usize,
}

/// The operator a reduction combines its terms with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    /// `s += e`, `s = s + e`, `s = e + s`.
    Sum,
    /// `m = fmax(m, e)`, `fmaxf`, `m = m > e ? m : e` and its mirror images.
    Max,
    /// `m = fmin(m, e)`, `fminf`, `m = m < e ? m : e` and its mirror images.
    Min,
}

impl ReduceOp {
    /// Name in messages and the generated comments.
    pub fn word(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
        }
    }
}

/// A variable declared outside a sweep that the sweep only accumulates into: each
/// grid point adds one term per update statement (a sum, a maximum, a minimum).
#[derive(Debug, Clone)]
pub struct Reduction {
    /// The accumulator's name.
    pub var: String,
    /// Its element type (`float` or `double`): the type the device accumulates in.
    pub elem: ElemType,
    /// How terms combine.
    pub op: ReduceOp,
    /// Index into [`Pipeline::body`] of the sweep that reduces.
    pub sweep: usize,
    /// The first update statement in the sweep body.
    pub span: Span,
}

/// How the time loop is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeForm {
    /// `for (v = start; v < end; v++)`.
    For,
    /// `while (v < end) { ... v++; }`: the counter is set before the loop.
    While,
    /// `do { ... } while (++v < end);` or `do { ... v++; } while (v < end);`:
    /// the body runs at least once.
    DoWhile,
}

/// The time loop: its counter and trip count, whichever way it is written.
#[derive(Debug, Clone)]
pub struct TimeLoop {
    /// How the loop is written.
    pub form: TimeForm,
    /// Name of the counter variable.
    pub var: String,
    /// Type text when the counter is declared in the `for` header (`int n = 0`).
    pub declared_type: Option<String>,
    /// C expression of the first value. For a `while` or `do` loop, the counter
    /// itself: its value when the loop starts.
    pub start: String,
    /// C expression of the bound.
    pub end: String,
    /// Whether the bound is inclusive (`<=`).
    pub inclusive: bool,
    /// The counter's C type, from the header or its declaration (`long` if unknown).
    pub var_type: String,
    /// A step count the directives give (the stencil dialect's `step(t:MAX)`): what
    /// `tpace plan` plans for when the loop's bound is a run-time value.
    pub steps_hint: Option<String>,
    /// The statement of a `while` or `do` body that advances the counter (`step++;`):
    /// one of [`Pipeline::host`], the only one that may write the counter. `None`
    /// for a `for` loop and for `do { ... } while (++v < end)`.
    pub advance: Option<Span>,
}

impl TimeLoop {
    /// C expression for the number of time steps (a `do` loop runs at least one).
    pub fn trip_count(&self) -> String {
        let span = if self.inclusive {
            format!("(long)(({}) - ({}) + 1)", self.end, self.start)
        } else {
            format!("(long)(({}) - ({}))", self.end, self.start)
        };
        match self.form {
            TimeForm::DoWhile => format!("({span} > 1L ? {span} : 1L)"),
            TimeForm::For | TimeForm::While => span,
        }
    }

    /// C expression for the counter's value at 0-based step `step`, where the
    /// pipeline's inputs `tp_in` are in scope: for a `for` loop the header's first
    /// value plus `step`; for a `while` or `do` loop, whose counter is its own
    /// first value and changes as the host replays the loop, the value saved when
    /// the pipeline started (`tp_in.tp_t0`).
    pub fn value_at(&self, step: &str) -> String {
        match self.form {
            TimeForm::For => format!("({}) + {step}", self.start),
            TimeForm::While | TimeForm::DoWhile => {
                format!("({})(tp_in.tp_t0 + {step})", self.var_type)
            }
        }
    }
}

/// The index space of every listed array.
#[derive(Debug, Clone)]
pub struct Grid {
    /// Per dimension, outermost first: first index and extent, as C expressions.
    pub dims: Vec<Extent>,
}

impl Grid {
    /// Number of spatial dimensions.
    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// Position in `dims` of the directive's `dim(d)` (1 = innermost).
    pub fn position_of_dim(&self, d: usize) -> Option<usize> {
        (d >= 1 && d <= self.rank()).then(|| self.rank() - d)
    }
}

/// One dimension of the `size` clause: indices `lo .. lo + n`.
#[derive(Debug, Clone)]
pub struct Extent {
    /// First index, a C expression.
    pub lo: String,
    /// Number of indices, a C expression.
    pub n: String,
}

/// Declared stencil reach along one dimension: reads may go `minus` below and `plus` above.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Halo {
    /// Largest offset towards lower indices.
    pub minus: i64,
    /// Largest offset towards higher indices.
    pub plus: i64,
}

/// C element type of an array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElemType {
    /// `float`
    Float,
    /// `double`
    Double,
}

impl ElemType {
    /// The C spelling.
    pub fn c_name(self) -> &'static str {
        match self {
            ElemType::Float => "float",
            ElemType::Double => "double",
        }
    }

    /// Bytes per element.
    pub fn bytes(self) -> u64 {
        match self {
            ElemType::Float => 4,
            ElemType::Double => 8,
        }
    }
}

/// How the user's program declares an array, which decides how it is subscripted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `T a[X][Y]`: one subscript per dimension.
    Static,
    /// `T (*a)[Y] = malloc(...)`: one subscript per dimension.
    PointerToArray,
    /// `T *a`: one linearised subscript, row-major over the `size` extents.
    Flat,
}

/// Data movement class of a listed array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// `targetinout`: read and written by the stencil.
    InOut,
    /// `targetin`: only read.
    In,
}

impl Intent {
    /// The clause that lists an array of this intent, for messages.
    pub fn word(self) -> &'static str {
        match self {
            Intent::InOut => "targetinout",
            Intent::In => "targetin",
        }
    }
}

/// A run-time condition the host program checks before a pipeline starts: the
/// array's memory is laid out the way its accesses were read (a row of a
/// declared shape as long as the `size` clause's inner extents, a flat array's
/// strides the row-major strides of the grid).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutCheck {
    /// A C expression, true when the layout is as expected (in the pipeline's scope).
    pub holds: String,
    /// What is wrong when it does not hold, in words.
    pub otherwise: String,
}

/// An array listed in the `pipeline` directive.
#[derive(Debug, Clone)]
pub struct Array {
    /// Name as written in the program: an identifier (`a`) or a member
    /// expression (`p->m`, `s.u`).
    pub name: String,
    /// C expression (in the pipeline's scope) for the address of the array's
    /// first grid element, the one at every dimension's `lo` index.
    pub host_base: String,
    /// What the host program checks about the array's layout before the pipeline.
    pub checks: Vec<LayoutCheck>,
    /// Element type from the declaration.
    pub elem: ElemType,
    /// Declaration form.
    pub layout: Layout,
    /// Clause it was listed in.
    pub intent: Intent,
    /// Where it is named in the directive.
    pub span: Span,
    /// `Some(c)` for one component of an array declared with a leading component
    /// dimension beyond `size` (`float a[4][X][Y][Z]`, accessed `a[c][i][j][k]`
    /// with a constant `c`): the front end lists each component a sweep uses as an
    /// array of its own, analysed, cut, moved, dumped and compared like any other.
    pub component: Option<u32>,
}

impl Array {
    /// Name for messages and dumps: `a`, or `a[0]` for a component.
    pub fn display_name(&self) -> String {
        match self.component {
            Some(c) => format!("{}[{c}]", self.name),
            None => self.name.clone(),
        }
    }

    /// A C identifier fragment unique among the listed arrays: `a`, `a_0`, or
    /// `p_m` for the member expression `p->m`.
    pub fn ident(&self) -> String {
        let mut id = String::new();
        for c in self.name.chars() {
            let keep = c == '_' || c.is_ascii_alphanumeric();
            if keep {
                id.push(c);
            } else if !id.ends_with('_') {
                id.push('_');
            }
        }
        let id = id.trim_end_matches('_').to_string();
        match self.component {
            Some(c) => format!("{id}_{c}"),
            None => id,
        }
    }
}

/// One spatial loop nest inside the time loop.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// Span of the outermost `for` statement of the nest.
    pub span: Span,
    /// The loops, outermost first as written.
    pub loops: Vec<SweepLoop>,
    /// Span of the innermost loop's body (copied into the kernel with accesses rewritten).
    pub body: Span,
    /// Every listed-array access in the body.
    pub accesses: Vec<Access>,
    /// Floating-point operations per grid point (`+ - * /` in the body).
    pub flops: u32,
    /// Variables the body reads that are declared outside it, in order of first use.
    pub scalars: Vec<Scalar>,
    /// Reads of unlisted arrays at subscripts that depend only on the time counter
    /// and loop-invariant scalars (`fict[t]`): evaluated on the host once per step
    /// and handed to the kernel by value.
    pub step_values: Vec<StepValue>,
    /// The function call of the time loop the nest is written in, when it is in
    /// a function the loop calls rather than in the loop itself.
    pub call: Option<SweepCall>,
}

/// A call of a sweep function ([`Program::sweep_functions`]) in the time loop:
/// the loop nests of that function are sweeps of the step. Their text is the
/// function's, so the names in it are the function's (its parameters, its
/// locals); what the IR says about them in the pipeline's scope (loop bounds,
/// scalars' values, layout checks) is in the caller's words, each parameter
/// replaced by the argument the call passes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepCall {
    /// The function called.
    pub function: String,
    /// The call statement in the time loop.
    pub span: Span,
}

/// A per-step value: an element of an unlisted array that every point of a
/// sweep reads at the same subscript within one time step (FDTD's `fict[t]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepValue {
    /// The expression as written, evaluated on the host at each step.
    pub text: String,
    /// Where it stands in the sweep body (replaced by [`StepValue::local`]).
    pub span: Span,
    /// Its C type, from the array's declaration (`double fict[N]`, `double *fict`).
    pub ty: String,
    /// The name that carries it into the kernel (`tp_step_1`): a kernel argument
    /// in CUDA, a firstprivate `const` local in OpenACC.
    pub local: String,
}

/// A variable declared outside a sweep and used inside it (a coefficient, a size).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scalar {
    /// Its name.
    pub name: String,
    /// Its C type if it is a plain scalar (`float`, `int`, ...); `None` for pointers,
    /// arrays and other variables a kernel argument can not carry by value.
    pub ty: Option<String>,
    /// Its first use in the sweep body.
    pub span: Span,
    /// How the body uses it.
    pub role: ScalarRole,
    /// A C expression in the pipeline's scope for its value: the name itself,
    /// or, for a parameter of a sweep function ([`Sweep::call`]), the argument
    /// the call passes.
    pub value: String,
}

/// How a sweep body uses a variable declared outside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarRole {
    /// Only read: a coefficient, a size.
    Read,
    /// Assigned at each point before it is read there (a per-point temporary).
    PerPoint,
    /// Carried from one point to the next in a form tpace can not translate (a
    /// counter, `s = s * e`): its result depends on the visiting order.
    Carried,
    /// Only accumulated into, in a form [`Pipeline::reductions`] describes.
    Reduction,
}

impl Sweep {
    /// The loop that iterates over grid position `pos` (0 = outermost dimension).
    pub fn loop_for(&self, pos: usize) -> Option<&SweepLoop> {
        self.loops.iter().find(|l| l.pos == pos)
    }
}

/// One `for` loop of a sweep, `for (var = lo; var < hi; var++)`.
#[derive(Debug, Clone)]
pub struct SweepLoop {
    /// Grid position of the dimension it iterates (0 = outermost).
    pub pos: usize,
    /// Index variable.
    pub var: String,
    /// Type text when declared in the header (`int x = 1`).
    pub declared_type: Option<String>,
    /// The index variable's C type, from the header or its declaration (`long` if unknown).
    pub var_type: String,
    /// First index, a C expression.
    pub lo: String,
    /// One past the last index, a C expression (`<=` bounds are turned into `+ 1`).
    pub hi: String,
    /// Span of the `for (...)` header up to the body (empty for a fixed dimension).
    pub header: Span,
    /// Whether the loop is not in the program but stands for a dimension the
    /// sweep does not iterate (a lower-dimensional sweep such as FDTD's source
    /// row `ey[0][j]`): `lo` is the one index every access fixes there (up to
    /// constant offsets), `hi` is `lo + 1`, and `var` is a name tpace made up.
    pub fixed: bool,
}

/// Whether an access reads or writes its array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessKind {
    /// Value is read.
    Read,
    /// Value is assigned.
    Write,
}

/// One subscripted reference to a listed array.
#[derive(Debug, Clone)]
pub struct Access {
    /// Index into [`Pipeline::arrays`].
    pub array: usize,
    /// Constant offset from the loop index, per grid position (outermost first); in
    /// a fixed dimension, from the index the sweep fixes (see [`SweepLoop::fixed`]).
    pub offsets: Vec<i64>,
    /// Read or write.
    pub kind: AccessKind,
    /// The whole subscript expression (`a[x-1][y]`), replaced in generated kernels.
    pub span: Span,
    /// Whether the access happens at every point of the sweep's box: its statement
    /// is a top-level expression statement of the innermost loop body and no `?:`,
    /// `&&` or `||` stands between it and that statement. Conservative: `false`
    /// whenever tpace can not tell (e.g. under an `if`).
    pub unconditional: bool,
    /// The subscripts as written, when they go through index variables that the
    /// sweep body computes at each point (`tIn[w]` after `c = x + y * nx;` and
    /// `w = (x == 0) ? c : c - 1;`): kernels keep the user's index code and
    /// address the chunk buffer with these. `offsets` is then one element they
    /// can reach; the sweep holds one access (same span) per reachable element.
    pub kept: Option<Subscript>,
}

/// Subscripts a kernel keeps as the user wrote them (see [`Access::kept`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subscript {
    /// One index into a flat array (`T *a`), numbered as the program numbers
    /// it: element (lo + c) of the grid at `sum c_p * stride_p`, with the
    /// `size` clause's row-major strides.
    Flat(String),
    /// One index per grid dimension, outermost first (component index left out).
    PerDim(Vec<String>),
}
