//! `remat-opt`: the mlir-opt-style driver (README.md, "Using it").
//!
//! The only place in remat-opt that does I/O: it reads the input (MLIR, graph JSON or a DTR log, a file
//! or stdin), plans with the remat pass library (or, under `--sweep`, plans at every budget
//! with every strategy and prints the table), and writes the output only once everything
//! succeeded (atomically for `-o` and every other file), so a failure never leaves a partial
//! file.

mod progress;

use clap::{Arg, ArgAction, ArgMatches, CommandFactory, FromArgMatches, Parser, ValueEnum};
use progress::Progress;
use remat_graph::json;
use remat_graph::{Graph, NodeId};
use remat_mlir::{crash, MlirError, RematContext};
use remat_pass::option_table::{described, Flag};
use remat_pass::{plan_function, OptionSpec, RematOptions, Report, OPTIONS};
use remat_planners::sweep::{self, SweepTable};
use remat_planners::Planner;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Emit {
    /// The rewritten module.
    Mlir,
    /// The function's graph as networkx node-link JSON.
    GraphJson,
    /// The plan as node ids of the graph JSON.
    ScheduleJson,
    /// The kernels' PTX (with `--lower=gpu`).
    Ptx,
    /// A shared library of the lowered step with its kernels embedded, for `remat-gpu-run`
    /// (with `--lower=gpu`; needs `-o`).
    Library,
}

/// remat-opt's own flags. The pass options (`--remat`, `--budget`, …) are added to these from
/// their one declaration, [`OPTIONS`], by [`command`].
#[derive(Parser, Debug)]
#[command(
    name = "remat-opt",
    version,
    about = "Plan which activations to keep or recompute in an MLIR training step, and rewrite it to the plan."
)]
struct Cli {
    /// Input file: MLIR (linalg-on-tensors or StableHLO), graph JSON or a DTR operator log (JSON lines); `-` for stdin.
    #[arg(default_value = "-")]
    input: String,
    /// Output file (default, or `-`: stdout). Written only if everything succeeds.
    #[arg(short = 'o', value_name = "OUTPUT")]
    output: Option<PathBuf>,
    /// Print a memory report (to stderr).
    #[arg(long)]
    report: bool,
    /// Write the report as JSON to FILE.
    #[arg(long = "report-json", value_name = "FILE")]
    report_json: Option<PathBuf>,
    /// Draw the memory timeline of the input order and of the plan (SVG) to FILE.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// What to write.
    #[arg(long, value_enum, default_value = "mlir")]
    emit: Emit,
    /// Plan the function at each budget (percentages of the input order's peak; default
    /// 100,90,…,20) with every strategy but auto, and print the table instead of the module.
    #[arg(long, value_name = "P1,P2,…", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    sweep: Option<String>,
    /// The strategies to sweep, comma-separated (default: all but auto; implies --sweep).
    #[arg(long = "sweep-strategies", value_name = "S1,S2,…")]
    sweep_strategies: Option<String>,
    /// Also write the sweep as CSV to FILE (implies --sweep).
    #[arg(long = "sweep-csv", value_name = "FILE")]
    sweep_csv: Option<PathBuf>,
    /// Also write the sweep's Pareto plot (peak vs recompute overhead) as SVG to FILE
    /// (implies --sweep).
    #[arg(long = "sweep-svg", value_name = "FILE")]
    sweep_svg: Option<PathBuf>,
    /// Run a textual pass pipeline instead (e.g. `builtin.module(func.func(remat{strategy=greedy}))`).
    #[arg(long = "pass-pipeline", value_name = "PIPELINE")]
    pass_pipeline: Option<String>,
    /// Split the input at `// -----` lines and process each part on its own.
    #[arg(long = "split-input-file")]
    split_input_file: bool,
    /// Lower the rewritten module to the LLVM dialect for a target (`cpu` or `gpu`), with every
    /// buffer freed right after its last use (see `--print-lowering-pipeline`).
    #[arg(long, value_name = "TARGET")]
    lower: Option<String>,
    /// Legalize StableHLO ops to linalg on tensors before planning (as jaxlib's
    /// `stablehlo-legalize-to-linalg` does; `while`, `scatter` and `optimization_barrier` stay), so
    /// the plan is made on, and the output is, the program that runs. Default without
    /// `--pass-pipeline`: on, and a step with an op it cannot legalize is planned as StableHLO
    /// with a warning; `=true` makes that an error (as `--lower` does); `=false` keeps
    /// StableHLO (the plan then counts StableHLO's buffers, not the lowered program's).
    #[arg(long = "legalize-stablehlo", value_name = "BOOL", num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    legalize_stablehlo: Option<bool>,
    /// The NVIDIA architecture the kernels are compiled for (`--lower=gpu`).
    #[arg(long = "gpu-chip", value_name = "SM", default_value = "sm_90")]
    gpu_chip: String,
    /// Kernel format for `--lower=gpu`: `ptx` (loaded by the driver's JIT) or `cubin` (needs
    /// ptxas); default cubin when a CUDA toolkit with ptxas is found (and not `--emit=ptx`),
    /// else ptx.
    #[arg(long = "gpu-format", value_name = "FORMAT")]
    gpu_format: Option<String>,
    /// CUDA toolkit directory (libdevice, ptxas) for `--lower=gpu`; default `$REMAT_CUDA_PATH`,
    /// the one tools/setup.sh unpacks, `$CUDA_HOME`, `/usr/local/cuda`.
    #[arg(long = "cuda-path", value_name = "DIR")]
    cuda_path: Option<PathBuf>,
    /// Print the lowering pipeline for `--lower`'s target (default cpu) and exit.
    #[arg(long = "print-lowering-pipeline")]
    print_lowering_pipeline: bool,
    /// The pass options given on the command line, as (pipeline name, value), in
    /// declaration order; filled by [`parse_command_line`].
    #[arg(skip)]
    pass_options: Vec<(&'static str, String)>,
}

/// What `--sweep` asks for.
struct SweepRequest {
    /// Budgets in percent of the input order's peak.
    percents: Vec<f64>,
    /// The strategies compared.
    strategies: Vec<&'static dyn Planner>,
}

/// What one input (one part with `--split-input-file`) produced.
struct Processed {
    /// What to write: the module, a JSON document, the sweep table, PTX or a library.
    output: Vec<u8>,
    /// The plan's report, when one function was planned.
    report: Option<Report>,
    /// The sweep, with the function's name, under `--sweep`.
    sweep: Option<(String, SweepTable)>,
}

/// A failure: diagnostics already formatted `file:line:col: error: …`.
struct Failure(Vec<String>);

impl From<MlirError> for Failure {
    fn from(e: MlirError) -> Self {
        Failure(vec![e.to_string()])
    }
}

fn error(location: &str, message: impl std::fmt::Display) -> Failure {
    Failure(vec![format!("{location}: error: {message}")])
}

fn main() -> ExitCode {
    crash::install("remat-opt");
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("REMAT_LOG"))
        .with_writer(std::io::stderr)
        .init();
    let cli = match parse_command_line() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { ExitCode::from(2) } else { ExitCode::SUCCESS };
        }
    };
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure(lines)) => {
            for line in lines {
                eprintln!("{line}");
            }
            ExitCode::FAILURE
        }
    }
}

/// The command line: remat-opt's own flags, then one per pass option of [`OPTIONS`].
fn command() -> clap::Command {
    const HEADING: &str = "Pass options (remat{name=value} in a pipeline; docs/pass-options.md)";
    OPTIONS.iter().fold(Cli::command(), |command, spec| command.arg(pass_option(spec).help_heading(HEADING)))
}

/// The flag of one pass option. Values are strings here: [`RematOptions::set`] parses them,
/// as it does a pipeline's, so both report a bad value in the same words.
fn pass_option(spec: &'static OptionSpec) -> Arg {
    match spec.flag {
        Flag::Value(flag) => {
            let arg = Arg::new(spec.name).long(flag).value_name(spec.value_name).num_args(1).help(described(spec));
            if spec.name == "strategy" {
                let strategies: Vec<String> =
                    remat_planners::STRATEGIES.iter().map(|p| format!("  {:<10} {}", p.name(), p.summary())).collect();
                arg.long_help(format!("{}\n\nStrategies:\n{}", described(spec), strategies.join("\n")))
            } else {
                arg
            }
        }
        Flag::Switch { flag, value } => Arg::new(spec.name).long(flag).action(ArgAction::SetTrue).help(format!(
            "Sets {}={value}. {}",
            spec.name,
            described(spec)
        )),
    }
}

fn parse_command_line() -> Result<Cli, clap::Error> {
    cli_from_matches(&command().try_get_matches()?)
}

/// [`Cli`] with the pass options given, in declaration order.
fn cli_from_matches(matches: &ArgMatches) -> Result<Cli, clap::Error> {
    let mut cli = Cli::from_arg_matches(matches)?;
    for spec in OPTIONS {
        match spec.flag {
            Flag::Value(_) => {
                if let Some(value) = matches.get_one::<String>(spec.name) {
                    cli.pass_options.push((spec.name, value.clone()));
                }
            }
            Flag::Switch { value, .. } => {
                if matches.get_flag(spec.name) {
                    cli.pass_options.push((spec.name, value.to_string()));
                }
            }
        }
    }
    Ok(cli)
}

impl Cli {
    /// Whether the pass option `name` was given.
    fn given(&self, name: &str) -> bool {
        self.pass_options.iter().any(|(n, _)| *n == name)
    }
}

fn lowering_target(cli: &Cli) -> Result<Option<remat_lower::Target>, Failure> {
    fn fail(e: impl std::fmt::Display) -> Failure {
        Failure(vec![format!("error: {e}")])
    }
    let target = cli.lower.as_deref().map(|t| t.parse::<remat_lower::Target>()).transpose().map_err(fail)?;
    let gpu_flags = cli.gpu_format.is_some() || cli.cuda_path.is_some() || cli.gpu_chip != "sm_90";
    match target {
        Some(remat_lower::Target::Gpu(_)) => {
            let toolkit = cli.cuda_path.clone().or_else(remat_lower::find_cuda_toolkit);
            let format = match &cli.gpu_format {
                Some(f) => f.parse().map_err(fail)?,
                None if cli.emit != Emit::Ptx && toolkit.as_deref().is_some_and(remat_lower::gpu_target::has_ptxas) => {
                    remat_lower::GpuFormat::Cubin
                }
                None => remat_lower::GpuFormat::Ptx,
            };
            let options = remat_lower::GpuOptions { chip: cli.gpu_chip.clone(), format, toolkit };
            remat_lower::gpu_target::validate(&options).map_err(fail)?;
            Ok(Some(remat_lower::Target::Gpu(options)))
        }
        _ if gpu_flags => Err(fail("--gpu-chip, --gpu-format and --cuda-path go with --lower=gpu")),
        other => Ok(other),
    }
}

/// Lowers `module` when `--lower` asks for it, then renders what `--emit` asks for.
fn lower_and_emit(
    cli: &Cli,
    function: Option<&str>,
    context: &RematContext,
    module: &mut melior::ir::Module,
) -> Result<Vec<u8>, Failure> {
    let target = lowering_target(cli)?;
    crash::stage("lowering the module");
    let mut signature = None;
    if let Some(target) = &target {
        if cli.emit == Emit::Library {
            let function =
                remat_mlir::select_function_name(module, function).map_err(|e| Failure(vec![e.to_string()]))?;
            signature =
                Some(remat_lower::signature(module, &function).map_err(|e| Failure(vec![format!("error: {e}")]))?);
        }
        remat_lower::lower_to_llvm(context, module, target).map_err(|ds| {
            let mut lines: Vec<String> = ds.iter().map(ToString::to_string).collect();
            let name = if matches!(target, remat_lower::Target::Cpu) { "the CPU" } else { "the GPU" };
            lines.push(format!("error: lowering to {name} failed"));
            Failure(lines)
        })?;
    }
    match cli.emit {
        Emit::Ptx => remat_lower::gpu_target::ptx_listing(module)
            .map(String::into_bytes)
            .map_err(|e| Failure(vec![format!("error: {e}")])),
        Emit::Library => {
            let signature = signature.expect("--emit=library is checked to come with --lower=gpu");
            remat_lower::library::shared_library(module, &signature).map_err(|e| Failure(vec![format!("error: {e}")]))
        }
        _ => {
            // As mlir-opt prints: the operation, then a newline.
            let mut text = module.as_operation().to_string();
            text.push('\n');
            Ok(text.into_bytes())
        }
    }
}

fn run(cli: &Cli) -> Result<(), Failure> {
    if cli.print_lowering_pipeline {
        let target = lowering_target(cli)?.unwrap_or(remat_lower::Target::Cpu);
        println!("{}", remat_lower::pipeline(&target));
        return Ok(());
    }
    let target = lowering_target(cli)?;
    if target.is_some() && matches!(cli.emit, Emit::GraphJson | Emit::ScheduleJson) {
        return Err(Failure(vec![
            "error: --lower writes a module; it cannot be combined with --emit=graph-json or --emit=schedule-json"
                .into(),
        ]));
    }
    if matches!(cli.emit, Emit::Ptx | Emit::Library) && !matches!(target, Some(remat_lower::Target::Gpu(_))) {
        return Err(Failure(vec!["error: --emit=ptx and --emit=library need --lower=gpu".into()]));
    }
    if cli.emit == Emit::Library && (cli.output.is_none() || cli.split_input_file) {
        return Err(Failure(vec!["error: --emit=library writes one shared library: it needs -o FILE and cannot be combined with --split-input-file".into()]));
    }
    let source_name = if cli.input == "-" { "<stdin>".to_string() } else { cli.input.clone() };
    let text = read_input(&cli.input).map_err(|e| error(&source_name, e))?;
    let options = remat_options(cli).map_err(|e| Failure(vec![format!("error: {e}")]))?;
    let sweep = sweep_request(cli).map_err(|e| Failure(vec![format!("error: {e}")]))?;
    if let Some(path) = &options.schedule {
        remat_pass::read_given_schedule(path, &options).map_err(|e| Failure(vec![format!("error: {e}")]))?;
    }

    let chunks: Vec<(usize, &str)> = if cli.split_input_file { split_input(&text) } else { vec![(0, text.as_str())] };
    let mut outputs = Vec::new();
    let mut reports = Vec::new();
    let mut sweeps = Vec::new();
    let mut failures = Vec::new();
    for (line_offset, chunk) in chunks {
        match process(cli, &options, sweep.as_ref(), chunk, &source_name, line_offset) {
            Ok(processed) => {
                outputs.push(processed.output);
                reports.extend(processed.report);
                sweeps.extend(processed.sweep);
            }
            Err(Failure(lines)) => failures.extend(lines.into_iter().map(|l| name_source(l, &source_name))),
        }
    }
    if !failures.is_empty() {
        return Err(Failure(failures));
    }
    // The first planned function's sweep goes to the CSV and SVG files.
    if let Some((function, table)) = sweeps.first() {
        if let Some(path) = &cli.sweep_csv {
            write_atomically(path, table.to_csv().as_bytes()).map_err(|e| error(&path.display().to_string(), e))?;
        }
        if let Some(path) = &cli.sweep_svg {
            write_atomically(path, table.to_svg(function).as_bytes())
                .map_err(|e| error(&path.display().to_string(), e))?;
        }
    }
    if cli.report {
        let mut stderr = std::io::stderr().lock();
        for r in &reports {
            let _ = write!(stderr, "{}", r.to_table(false));
        }
    }
    if let Some(path) = &cli.report_json {
        let docs: Vec<serde_json::Value> = reports.iter().map(|r| r.to_json(false)).collect();
        let doc = if docs.len() == 1 { docs.into_iter().next().unwrap() } else { serde_json::Value::Array(docs) };
        let mut text = serde_json::to_string_pretty(&doc).expect("JSON values serialize");
        text.push('\n');
        write_atomically(path, text.as_bytes()).map_err(|e| error(&path.display().to_string(), e))?;
    }
    if let Some(path) = &cli.plot {
        // Like the sweep files, the chart shows the first planned function.
        let report = reports.first().ok_or_else(|| error(&source_name, "--plot: no function was planned"))?;
        write_atomically(path, report.timeline_svg().as_bytes()).map_err(|e| error(&path.display().to_string(), e))?;
    }
    let output = outputs.join("// -----\n".as_bytes());
    match cli.output.as_deref().filter(|path| *path != Path::new("-")) {
        Some(path) => write_atomically(path, &output).map_err(|e| error(&path.display().to_string(), e)),
        None => std::io::stdout().write_all(&output).map_err(|e| error("<stdout>", e)),
    }
}

/// MLIR names a buffer parsed from memory "-"; names the real source instead.
/// Legalizes the module's StableHLO ops in place (nothing changes when it fails).
fn legalize(module: &melior::ir::Module, source_name: &str) -> Result<(), Failure> {
    crash::stage("legalizing StableHLO");
    remat_lower::legalize_stablehlo(module).map_err(|e| Failure(vec![name_source(e.to_string(), source_name)]))?;
    Ok(())
}

fn name_source(line: String, source_name: &str) -> String {
    match line.strip_prefix("-:") {
        Some(rest) => format!("{source_name}:{rest}"),
        None => line,
    }
}

fn remat_options(cli: &Cli) -> Result<RematOptions, remat_pass::OptionError> {
    RematOptions::from_pairs(cli.pass_options.iter().map(|(name, value)| (*name, value.as_str())))
}

/// `--sweep` and its companions: `None` without any of them; an error for a bad percentage or
/// strategy, or for a flag that asks for something else than the table.
fn sweep_request(cli: &Cli) -> Result<Option<SweepRequest>, String> {
    if cli.sweep.is_none() && cli.sweep_strategies.is_none() && cli.sweep_csv.is_none() && cli.sweep_svg.is_none() {
        return Ok(None);
    }
    let conflicts = [
        ("--budget", cli.given("budget")),
        ("--schedule", cli.given("schedule")),
        ("--emit", cli.emit != Emit::Mlir),
        ("--lower", cli.lower.is_some()),
        ("--pass-pipeline", cli.pass_pipeline.is_some()),
        ("--report", cli.report),
        ("--report-json", cli.report_json.is_some()),
        ("--plot", cli.plot.is_some()),
    ];
    if let Some((flag, _)) = conflicts.iter().find(|(_, given)| *given) {
        return Err(format!("--sweep plans at its own budgets and prints a table; it cannot be combined with {flag}"));
    }
    let percents = match cli.sweep.as_deref().map(str::trim) {
        None | Some("") => sweep::DEFAULT_PERCENTS.to_vec(),
        Some(list) => list
            .split(',')
            .map(|p| {
                let number = p.trim().trim_end_matches('%').trim();
                match number.parse::<f64>() {
                    Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
                    _ => Err(format!(
                        "invalid --sweep percentage '{}' (expected positive percentages such as 100,80,60)",
                        p.trim()
                    )),
                }
            })
            .collect::<Result<Vec<f64>, String>>()?,
    };
    let strategies = match cli.sweep_strategies.as_deref() {
        None => sweep::default_strategies(),
        Some(list) => list
            .split(',')
            .map(|name| {
                let name = name.trim();
                remat_planners::strategy(name).ok_or_else(|| {
                    format!(
                        "unknown strategy '{name}' in --sweep-strategies (available: {})",
                        remat_planners::strategy_names()
                    )
                })
            })
            .collect::<Result<Vec<_>, String>>()?,
    };
    Ok(Some(SweepRequest { percents, strategies }))
}

fn read_input(input: &str) -> Result<String, String> {
    let mut bytes = Vec::new();
    let result = if input == "-" {
        std::io::stdin().read_to_end(&mut bytes).map(|_| ())
    } else {
        std::fs::File::open(input).and_then(|mut f| f.read_to_end(&mut bytes).map(|_| ()))
    };
    result.map_err(|e| format!("could not read input: {e}"))?;
    String::from_utf8(bytes).map_err(|e| format!("input is not UTF-8 (byte {})", e.utf8_error().valid_up_to()))
}

/// Parts of the input between `// -----` lines, with the line each part starts at.
fn split_input(text: &str) -> Vec<(usize, &str)> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut start_line = 0;
    let mut offset = 0;
    for (line, l) in text.split_inclusive('\n').enumerate() {
        if l.trim_end() == "// -----" {
            parts.push((start_line, &text[start..offset]));
            start = offset + l.len();
            start_line = line + 1;
        }
        offset += l.len();
    }
    parts.push((start_line, &text[start..]));
    parts
}

/// Graph JSON may open with `//` comment lines (lit RUN lines); they are blanked, keeping
/// line numbers, before the JSON parser sees them.
fn blank_line_comments(text: &str) -> String {
    text.split_inclusive('\n')
        .map(|l| {
            if l.trim_start().starts_with("//") {
                if l.ends_with('\n') {
                    "\n"
                } else {
                    ""
                }
            } else {
                l
            }
        })
        .collect()
}

fn looks_like_json(text: &str) -> bool {
    blank_line_comments(text).trim_start().starts_with('{')
}

/// Plans one input (one part with `--split-input-file`), or sweeps it under `--sweep`.
fn process(
    cli: &Cli,
    options: &RematOptions,
    sweep: Option<&SweepRequest>,
    text: &str,
    source_name: &str,
    line_offset: usize,
) -> Result<Processed, Failure> {
    // --time-limit counts from here: reading and importing the input (fusion rounds, unrolling)
    // come out of it, planning gets what remains. A sweep gives each plan its own.
    let mut timed = options.clone();
    if sweep.is_none() {
        timed.planner.deadline = remat_planners::Deadline::after(options.planner.time_limit);
    }
    let options = &timed;
    if looks_like_json(text) {
        return process_graph_json(cli, options, sweep, text, source_name, line_offset);
    }
    let context = RematContext::new();
    // Pad so that diagnostics in a split part point at lines of the whole file.
    let padded = format!("{}{text}", "\n".repeat(line_offset));
    crash::stage("parsing and verifying the input");
    let mut module =
        context.parse(&padded, source_name).map_err(|ds| Failure(ds.iter().map(ToString::to_string).collect()))?;
    let lowered = cli.lower.is_some() && cli.pass_pipeline.is_none();
    match cli.legalize_stablehlo {
        Some(true) => legalize(&module, source_name)?,
        None if lowered => legalize(&module, source_name)?,
        None if cli.pass_pipeline.is_none() => {
            if let Err(Failure(lines)) = legalize(&module, source_name) {
                for line in lines {
                    eprintln!("{}", line.replacen(": error: ", ": warning: ", 1));
                }
                eprintln!(
                    "{source_name}: warning: StableHLO is planned as it is (buffers of StableHLO ops, not of the program that runs); --legalize-stablehlo makes this an error"
                );
            }
        }
        _ => {}
    }
    if let Some(pipeline) = &cli.pass_pipeline {
        crash::stage("running the pass pipeline");
        remat_pass::register_remat_pass();
        remat_lower::register_lowering_passes();
        let manager = melior::pass::PassManager::new(context.context());
        melior::utility::parse_pass_pipeline(manager.as_operation_pass_manager(), pipeline).map_err(|e| {
            let mut lines: Vec<String> = context.take_diagnostics().iter().map(ToString::to_string).collect();
            lines.extend(pipeline_parse_error(pipeline, &e));
            Failure(lines)
        })?;
        if manager.run(&mut module).is_err() {
            let mut lines: Vec<String> = context.take_diagnostics().iter().map(ToString::to_string).collect();
            if lines.is_empty() {
                lines.push("error: the pass pipeline failed".into());
            }
            return Err(Failure(lines));
        }
        let output = lower_and_emit(cli, options.function.as_deref(), &context, &mut module)?;
        return Ok(Processed { output, report: None, sweep: None });
    }
    crash::stage("importing the function");
    let imported = remat_mlir::import(&module, options.function.as_deref(), &options.import_options())?;
    for warning in &imported.warnings {
        match &warning.location {
            Some(loc) => eprintln!("{}: warning: {}", name_source(loc.clone(), source_name), warning.message),
            None => eprintln!("{source_name}: warning: {}", warning.message),
        }
    }
    let location = imported.location().unwrap_or_else(|| source_name.to_string());
    if let Some(request) = sweep {
        // The sweep plans what would run: the fused step.
        let (imported, _) = remat_pass::fuse(imported, options).map_err(|e| error(&location, e))?;
        return run_sweep(request, options, &imported.name, &imported.graph, &imported.order)
            .map_err(|e| error(&location, e));
    }
    crash::stage("fusing and planning");
    let progress = Progress::start(
        format!("planning {} with {}", imported.name, options.strategy),
        Some(options.planner.time_limit),
    );
    let planned = plan_function(imported, options).map_err(|e| error(&location, e))?;
    drop(progress);
    crash::stage("rewriting the module");
    let out = match cli.emit {
        Emit::GraphJson => graph_json(&planned.imported.graph, &planned.imported.name).into_bytes(),
        Emit::ScheduleJson => json::write_schedule(
            &planned.imported.name,
            &options.strategy,
            &planned.plan.schedule,
            &planned.plan.details.transfers,
        )
        .into_bytes(),
        Emit::Mlir | Emit::Ptx | Emit::Library => {
            remat_mlir::apply_plan(&planned.imported, &planned.plan.schedule, &planned.plan.details.transfers)
                .map_err(|e| error(&location, e))?;
            context.verify(&module).map_err(|ds| {
                let mut lines: Vec<String> = ds.iter().map(ToString::to_string).collect();
                lines.push(format!("{location}: error: internal error: the rewritten module does not verify"));
                Failure(lines)
            })?;
            lower_and_emit(cli, options.function.as_deref(), &context, &mut module)?
        }
    };
    Ok(Processed { output: out, report: Some(planned.report), sweep: None })
}

/// MLIR's reasons for rejecting a pipeline, as remat-opt's diagnostics: the first reason is
/// the error (`unknown strategy 'magic' (…)`), the rest and the pipeline itself are notes.
fn pipeline_parse_error(pipeline: &str, error: &melior::Error) -> Vec<String> {
    let text = match error {
        melior::Error::ParsePassPipeline(message) => message.clone(),
        other => other.to_string(),
    };
    let mut reasons = text.lines().filter(|l| !l.trim().is_empty() && l.trim() != "failed to parse pass pipeline:");
    let mut lines = vec![format!("error: {}", reasons.next().map(str::trim).unwrap_or("invalid pass pipeline"))];
    // MLIR's parser quotes the pipeline with a caret under the fault: keep those lines as they are.
    lines.extend(reasons.map(|r| if r.starts_with("failed to add") { format!("note: {r}") } else { r.to_string() }));
    lines.push(format!("note: in the pass pipeline '{pipeline}'"));
    lines
}

/// Sweeps one function: the table to print, and the sweep for the CSV and SVG files.
fn run_sweep(
    request: &SweepRequest,
    options: &RematOptions,
    function: &str,
    graph: &Graph,
    order: &[NodeId],
) -> Result<Processed, String> {
    let progress = Progress::start(format!("sweeping {function}"), None);
    let mut table = sweep::sweep(graph, order, &request.percents, &request.strategies, &options.planner)
        .map_err(|e| e.to_string())?;
    if options.certify {
        table.certify(graph, order, options.planner.time_limit);
    }
    drop(progress);
    Ok(Processed {
        output: table.to_table(function, false).into_bytes(),
        report: None,
        sweep: Some((function.to_string(), table)),
    })
}

fn graph_json(graph: &Graph, function: &str) -> String {
    json::write_graph(graph, &[("function", serde_json::json!(function))])
}

fn process_graph_json(
    cli: &Cli,
    options: &RematOptions,
    sweep: Option<&SweepRequest>,
    text: &str,
    source_name: &str,
    line_offset: usize,
) -> Result<Processed, Failure> {
    let text = &blank_line_comments(text);
    let stem = || {
        Path::new(source_name).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "graph".into())
    };
    // A DTR operator log (App. C.6) carries its own program order; graph JSON does not.
    let (graph, order, function) = if remat_graph::looks_like_dtr_log(text) {
        let (graph, order) = remat_graph::read_dtr_log(text)
            .map_err(|e| error(&format!("{source_name}:{}:1", e.line + line_offset), &e.kind))?;
        (graph, order, stem())
    } else {
        let graph = json::read_graph(text).map_err(|e| match e.line_col {
            Some((line, col)) => error(&format!("{source_name}:{}:{col}", line + line_offset), &e.message),
            None => error(source_name, &e.message),
        })?;
        let function = serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(|v| v.pointer("/graph/function").and_then(|f| f.as_str().map(str::to_string)))
            .unwrap_or_else(stem);
        let order: Vec<NodeId> = graph.topological_schedule();
        (graph, order, function)
    };
    if let Some(request) = sweep {
        return run_sweep(request, options, &function, &graph, &order).map_err(|e| error(source_name, e));
    }
    // Checked before planning, which can take long on large graphs.
    if matches!(cli.emit, Emit::Mlir | Emit::Ptx | Emit::Library) {
        return Err(error(
            source_name,
            "a graph JSON or DTR log input has no IR to rewrite; use --emit=schedule-json or --emit=graph-json",
        ));
    }
    crash::stage("planning");
    let progress =
        Progress::start(format!("planning {function} with {}", options.strategy), Some(options.planner.time_limit));
    let (plan, report) =
        remat_pass::plan_graph(&function, &graph, &order, options).map_err(|e| error(source_name, e))?;
    drop(progress);
    let out = if matches!(cli.emit, Emit::GraphJson) {
        graph_json(&graph, &function).into_bytes()
    } else {
        json::write_schedule(&function, &report.strategy, &plan.schedule, &plan.details.transfers).into_bytes()
    };
    Ok(Processed { output: out, report: Some(report), sweep: None })
}

/// Writes `bytes` to a temporary file beside `path`, then renames it into place, so a failure
/// never leaves a partial file. A path that is a link is resolved first (the link stays); one
/// that is not a regular file (`/dev/null`, a pipe) or names a file descriptor (`/dev/stdout`)
/// is written directly: renaming over it would replace the device with a file.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // The streams themselves, so that a shell's `>>` keeps appending.
    if path == Path::new("/dev/stdout") {
        return std::io::stdout().write_all(bytes);
    }
    if path == Path::new("/dev/stderr") {
        return std::io::stderr().write_all(bytes);
    }
    let target = match std::fs::metadata(path) {
        // A device, a pipe, or a file descriptor's name (`/dev/stdout` links to
        // `/proc/self/fd/1`, which may be a file the shell opened to append): write through.
        Ok(meta) if !meta.is_file() || path.starts_with("/dev") || path.starts_with("/proc") => {
            return std::fs::write(path, bytes)
        }
        // A regular file, possibly behind links: replace the file, keep the links.
        Ok(_) => std::fs::canonicalize(path)?,
        Err(_) => path.to_path_buf(),
    };
    let dir = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "output".into());
    let tmp = dir.join(format!(".{name}.remat-opt-{}.tmp", std::process::id()));
    let result = std::fs::write(&tmp, bytes).and_then(|_| std::fs::rename(&tmp, &target));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every declared pass option is a flag, spelled as declared; nothing else is.
    #[test]
    fn the_pass_flags_are_the_declared_options() {
        let command = command();
        for spec in OPTIONS {
            let arg = command.get_arguments().find(|a| a.get_id() == spec.name).expect(spec.name);
            let flag = match spec.flag {
                Flag::Value(flag) | Flag::Switch { flag, .. } => flag,
            };
            assert_eq!(arg.get_long(), Some(flag), "{}", spec.name);
        }
        let own = Cli::command().get_arguments().count();
        assert_eq!(command.get_arguments().count(), own + OPTIONS.len());
    }

    /// A device or a link is written through, never replaced; a regular file is replaced.
    #[test]
    fn atomic_writes_leave_devices_and_links_in_place() {
        let dir = tempfile::tempdir().unwrap();
        write_atomically(Path::new("/dev/null"), b"discarded").unwrap();
        assert!(!std::fs::metadata("/dev/null").unwrap().is_file(), "/dev/null is still a device");
        // A link to a pipe (what /dev/stdout is under a pipeline) is written through.
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let link = dir.path().join("stdout");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        let reader = std::thread::spawn({
            let fifo = fifo.clone();
            move || std::fs::read(fifo).unwrap()
        });
        write_atomically(&link, b"piped").unwrap();
        assert_eq!(reader.join().unwrap(), b"piped");
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        let file = dir.path().join("out.mlir");
        let link = dir.path().join("link.mlir");
        std::fs::write(&file, "old").unwrap();
        std::os::unix::fs::symlink(&file, &link).unwrap();
        write_atomically(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
        write_atomically(&dir.path().join("fresh.mlir"), b"made").unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("fresh.mlir")).unwrap(), "made");
    }

    #[test]
    fn flags_become_pass_options_in_declaration_order() {
        let matches = command().try_get_matches_from(["remat-opt", "--no-polish", "--budget=60%", "--remat", "greedy"]);
        let cli = cli_from_matches(&matches.unwrap()).unwrap();
        let expected = [("strategy", "greedy"), ("budget", "60%"), ("polish", "false")];
        assert_eq!(cli.pass_options.iter().map(|(n, v)| (*n, v.as_str())).collect::<Vec<_>>(), expected);
        assert_eq!(remat_options(&cli).unwrap(), RematOptions::from_pairs(expected).unwrap());
    }
}
