//! The command line: `serve`, `review`, `check`, `test`, `explain` and `rules`. Exit codes: 0
//! allowed/clean, 1 denied or findings, 2 unusable input or usage.

pub mod inputs;
pub mod live;
mod logwriter;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use crate::admission::{self, Endpoint};
use crate::rules::config::{RuleSet, DEFAULT_RULES_YAML};
use crate::server::tls::{self, CertPair};
use crate::server::{self, ServeOptions};

/// Writes to stdout. A closed pipe (`check DIR | head -1`) ends the command quietly, as SIGPIPE
/// ends other Unix tools (status 141); any other write error is a failure (2).
fn emit(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("placement-guard: cannot write to stdout: {e}");
            std::process::exit(2);
        }
        std::process::exit(141);
    }
}

macro_rules! out {
    ($($t:tt)*) => { emit(&format!($($t)*)) };
}

macro_rules! outln {
    ($($t:tt)*) => { emit(&format!("{}\n", format_args!($($t)*))) };
}

#[derive(Parser, Debug)]
#[command(
    name = "placement-guard",
    version,
    about = "Admission server and CI checker for pod scheduling directives"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Output {
    Text,
    Json,
    Sarif,
    Junit,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Color {
    Auto,
    Always,
    Never,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ExplainOutput {
    Text,
    Json,
}

/// How `check` and `audit` report: the same formats, filters and exit codes.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    output: Output,
    /// Exit 1 on errors only (default), or on warnings too.
    #[arg(long, value_enum, default_value = "error")]
    fail_on: FailOn,
    /// Color in text output.
    #[arg(long, value_enum, default_value = "auto")]
    color: Color,
    /// Report only these rules (repeatable).
    #[arg(long, value_name = "RULE", conflicts_with = "skip_rule")]
    only_rule: Vec<String>,
    /// Do not report these rules (repeatable).
    #[arg(long, value_name = "RULE")]
    skip_rule: Vec<String>,
    /// Findings only: no summary line, no notes on stderr.
    #[arg(short, long)]
    quiet: bool,
}

/// The line that names a generated certificate and how to try the server with it. An ephemeral
/// port (`:0`) is known only once bound: the hint then points at the line that gives it.
fn dev_cert_hint(cert: &Path, bound: Option<std::net::SocketAddr>, addr: &str) -> String {
    let cert = cert.display();
    match bound {
        Some(a) if a.port() == 0 => {
            let host = local_url_host(a);
            let host = host.strip_suffix(":0").unwrap_or(&host);
            format!("dev certificate: {cert} (try: curl --cacert {cert} https://{host}:PORT/healthz, with PORT from the \"listening on\" line)")
        }
        _ => format!(
            "dev certificate: {cert} (try: curl --cacert {cert} https://{}/healthz)",
            bound.map_or_else(|| addr.to_string(), local_url_host)
        ),
    }
}

/// Where a local client reaches a server bound to `a` (a wildcard address: over loopback).
fn local_url_host(a: std::net::SocketAddr) -> String {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
    let ip = match a.ip() {
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, a.port()).to_string()
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve the admission webhook over HTTPS.
    Serve {
        /// Address to listen on.
        #[arg(long, default_value = "0.0.0.0:8443")]
        addr: String,
        /// PEM certificate (chain). Without it, a self-signed localhost certificate is generated.
        #[arg(long, requires = "tls_key")]
        tls_cert: Option<PathBuf>,
        /// PEM private key of --tls-cert.
        #[arg(long, requires = "tls_cert")]
        tls_key: Option<PathBuf>,
        /// Where the generated development certificate is written (without --tls-cert).
        #[arg(long, conflicts_with = "tls_cert")]
        dev_cert_dir: Option<PathBuf>,
        /// Rule file (built-in defaults otherwise).
        #[arg(long)]
        rules: Option<PathBuf>,
        /// Number of worker threads, 1 to 512 (default: one per core).
        #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=512))]
        workers: Option<usize>,
        /// Log format on stderr.
        #[arg(long, value_enum, default_value = "text")]
        log_format: LogFormat,
        /// How often (seconds) the certificate pair and the rule file are checked for changes.
        #[arg(long, default_value_t = 2)]
        reload_interval: u64,
        /// On SIGTERM, how long (seconds) the server keeps accepting and answering, with
        /// /readyz at 503, while the pod's endpoints are removed.
        #[arg(long, default_value_t = 5)]
        shutdown_delay: u64,
        /// Then how long (seconds) in-flight requests may take before the server exits.
        #[arg(long, default_value_t = 20)]
        shutdown_timeout: u64,
        /// How long (seconds) a request's head and body may take to arrive.
        #[arg(long, default_value_t = 10)]
        request_timeout: u64,
        /// Watch the cluster's Nodes, Pods and Namespaces (needs get/list/watch on them), and
        /// its RuntimeClasses if allowed (list/watch), so that the `feasibility` rule can say
        /// when a pod is left no node to run on.
        #[arg(long)]
        cluster_aware: bool,
        /// With --cluster-aware: kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then
        /// the pod's service account).
        #[arg(long, value_name = "FILE", requires = "cluster_aware")]
        kubeconfig: Option<PathBuf>,
        /// With --cluster-aware: kubeconfig context (default: the current context).
        #[arg(long, requires = "cluster_aware")]
        context: Option<String>,
        /// With --cluster-aware: how long (seconds) a failing watch is tolerated before the
        /// cache counts as stale and its checks are skipped (they never deny on a stale cache).
        #[arg(
            long,
            value_name = "SECONDS",
            default_value_t = 60,
            requires = "cluster_aware"
        )]
        cache_max_stale: u64,
        /// With --cluster-aware: how long (seconds) /readyz waits for the cache's first list.
        /// After that the server is ready without it: the checks that need it are skipped
        /// (never denying) until it syncs, and an error says why.
        #[arg(
            long,
            value_name = "SECONDS",
            default_value_t = 30,
            requires = "cluster_aware"
        )]
        cache_sync_timeout: u64,
        /// With --cluster-aware: how long (seconds) a watch may stay silent before it is taken
        /// for lost (an API server or a load balancer that stopped answering without closing
        /// the connection) and resumed; its failure then counts toward --cache-max-stale. Each
        /// watch is renewed a little sooner when nothing happens. At least 5.
        #[arg(
            long,
            value_name = "SECONDS",
            default_value_t = 60,
            requires = "cluster_aware"
        )]
        cache_max_silence: u64,
    },
    /// Answer one AdmissionReview offline, exactly as /validate (or /mutate) would.
    Review {
        /// Rule file (built-in defaults otherwise).
        #[arg(long)]
        rules: Option<PathBuf>,
        /// Answer as /mutate instead of /validate.
        #[arg(long)]
        mutate: bool,
        /// With --mutate: print the patched object instead of the AdmissionReview.
        #[arg(long, requires = "mutate")]
        apply: bool,
        /// Namespaces (`kubectl get namespaces -o yaml`) whose labels node-selection policies
        /// with a namespaceSelector match, as a server's cluster cache would give them.
        #[arg(long, value_name = "FILE")]
        namespaces: Option<PathBuf>,
        /// AdmissionReview JSON file, or - for stdin.
        #[arg(default_value = "-")]
        file: String,
    },
    /// Check manifests in CI: files, directories (recursive) or - for stdin.
    Check {
        /// Rule file (built-in defaults otherwise).
        #[arg(long)]
        rules: Option<PathBuf>,
        #[command(flatten)]
        report: ReportArgs,
        /// A cluster dump (`kubectl get namespaces,deploy,sts,rs,jobs,clonesets -A -o yaml`):
        /// the targets of WorkloadSpreads are looked up in it when they are not in the input,
        /// and its Namespaces' labels select the node-selection policies with a
        /// namespaceSelector.
        #[arg(long)]
        cluster: Option<PathBuf>,
        /// Leave out files and directories matching this glob (repeatable; `*` spans `/`).
        /// Hidden directories and Helm chart templates are always left out of walks.
        #[arg(long, value_name = "GLOB")]
        exclude: Vec<String>,
        /// No input objects is fine (by default it is an error: a failed `helm template | ...`
        /// must not pass).
        #[arg(long)]
        allow_empty: bool,
        /// The namespace of objects that name none, as `kubectl apply -n` (node-selection
        /// policies and exemptNamespaces are per namespace).
        #[arg(short = 'n', long)]
        namespace: Option<String>,
        /// Manifest files, directories, or - for stdin.
        #[arg(required = true)]
        paths: Vec<String>,
    },
    /// Run rule-file test suites: folders with a rules.yaml and cases, each case's outcome
    /// compared with its snapshot (<case>.expected.yaml).
    Test {
        /// (Re)write the snapshots instead of comparing.
        #[arg(long)]
        update: bool,
        /// Run only the cases whose path contains this text.
        #[arg(long, value_name = "TEXT")]
        filter: Option<String>,
        /// Folders to search for suites.
        #[arg(default_value = ".")]
        dirs: Vec<PathBuf>,
    },
    /// On which nodes may this pod run, and why not elsewhere (kube-scheduler's filters).
    Explain {
        /// A cluster dump (Nodes, Pods, Namespaces and RuntimeClasses, JSON or YAML: `kubectl get
        /// nodes,pods,namespaces,runtimeclasses -A -o json`), or - for stdin. Without it, the
        /// live cluster.
        #[arg(long)]
        cluster: Option<PathBuf>,
        /// A Pod or workload: a manifest file (- for stdin), or in the live cluster NAME (a pod), pod/NAME,
        /// deployment/NAME, sts/NAME, ... A live pod already bound is placed again, without
        /// itself. With --cluster, a NAME is still read from the live cluster, and placed on the
        /// dump's nodes.
        #[arg(
            long,
            required_unless_present = "workloadspread",
            conflicts_with = "workloadspread"
        )]
        pod: Option<String>,
        /// Namespace of a live pod or workload (default: the kubeconfig context's); for a file's
        /// object that names none, as `kubectl apply -n` (default: the context's, or `default`
        /// beside a dump).
        #[arg(short = 'n', long)]
        namespace: Option<String>,
        #[command(flatten)]
        live: live::LiveArgs,
        /// An OpenKruise WorkloadSpread: show how replicas are distributed over its subsets
        /// (the file's one WorkloadSpread).
        #[arg(long, requires = "workload")]
        workloadspread: Option<PathBuf>,
        /// The workload the WorkloadSpread targets (among the file's objects, the target).
        #[arg(long, requires = "workloadspread")]
        workload: Option<PathBuf>,
        /// With --workloadspread: how many fresh replicas (default: the workload's own).
        #[arg(long, requires = "workloadspread")]
        replicas: Option<i64>,
        /// Output format.
        #[arg(short = 'o', long, value_enum, default_value = "text")]
        output: ExplainOutput,
    },
    /// Every Pod and workload of the live cluster through the same rules as `check`, for what
    /// was admitted before the webhook, while it failed open, or under older rules; and the
    /// Pending pods and workload templates no node can run now.
    Audit {
        /// Rule file (built-in defaults otherwise).
        #[arg(long)]
        rules: Option<PathBuf>,
        /// Only this namespace (default: the kubeconfig context's).
        #[arg(short = 'n', long, conflicts_with = "all_namespaces")]
        namespace: Option<String>,
        /// Every namespace.
        #[arg(short = 'A', long)]
        all_namespaces: bool,
        #[command(flatten)]
        report: ReportArgs,
        #[command(flatten)]
        live: live::LiveArgs,
    },
    /// Print a shell completion script: `placement-guard completions bash > /etc/bash_completion.d/placement-guard`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Rule file helpers.
    Rules {
        /// Print the built-in rule file.
        #[arg(long, conflicts_with = "list")]
        print_defaults: bool,
        /// List the rules: id, what the built-in rule file does with a finding, and summary.
        #[arg(long)]
        list: bool,
    },
}

/// `rules --list`: one line per rule id, from the registry.
fn rules_table() -> String {
    let rules: Vec<_> = crate::rules::all_rules().collect();
    let width = rules.iter().map(|m| m.id.as_str().len()).max().unwrap_or(0);
    let mut out = format!("{:width$}  {:7}  SUMMARY\n", "RULE", "DEFAULT");
    for m in rules {
        out.push_str(&format!(
            "{:width$}  {:7}  {}\n",
            m.id.as_str(),
            m.default_action,
            m.summary
        ));
    }
    out
}

fn load_rules(path: Option<&PathBuf>) -> Result<RuleSet, String> {
    load_rules_with_bytes(path, None).map(|(r, _)| r)
}

/// The rules and the bytes they were read from (the server's reloads compare against them);
/// `serving`: for `serve`, with or without `--cluster-aware`.
fn load_rules_with_bytes(
    path: Option<&PathBuf>,
    serving: Option<bool>,
) -> Result<(RuleSet, Option<Vec<u8>>), String> {
    match path {
        None => Ok((RuleSet::default(), None)),
        Some(p) => {
            let bytes = std::fs::read(p)
                .map_err(|e| format!("cannot read rule file {}: {e}", p.display()))?;
            let text = String::from_utf8(bytes.clone())
                .map_err(|e| format!("cannot read rule file {}: {e}", p.display()))?;
            let origin = p.display().to_string();
            let rules = match serving {
                None => RuleSet::from_yaml(&origin, &text),
                Some(aware) => RuleSet::from_yaml_to_serve(&origin, &text, aware),
            }
            .map_err(|e| e.to_string())?;
            Ok((rules, Some(bytes)))
        }
    }
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("placement-guard: {msg}");
    ExitCode::from(2)
}

pub fn run() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            e.print().ok();
            return ExitCode::from(code);
        }
    };
    match cli.command {
        Command::Serve {
            addr,
            tls_cert,
            tls_key,
            dev_cert_dir,
            rules: rules_path,
            workers,
            log_format,
            reload_interval,
            shutdown_delay,
            shutdown_timeout,
            request_timeout,
            cluster_aware,
            kubeconfig,
            context,
            cache_max_stale,
            cache_sync_timeout,
            cache_max_silence,
        } => {
            let _log_guard = init_logging(log_format);
            let (rules, rules_bytes) =
                match load_rules_with_bytes(rules_path.as_ref(), Some(cluster_aware)) {
                    Ok(r) => r,
                    Err(e) => return fail(e),
                };
            // Checked before a development certificate is written, and named in its hint.
            let bound = match std::net::ToSocketAddrs::to_socket_addrs(addr.as_str()) {
                Ok(mut a) => a.next(),
                Err(e) => return fail(format!("binding {addr}: {e}")),
            };
            let cert = match (tls_cert, tls_key) {
                (Some(cert), Some(key)) => CertPair { cert, key },
                _ => {
                    let dir = dev_cert_dir
                        .unwrap_or_else(|| std::env::temp_dir().join("placement-guard-dev"));
                    match tls::dev_cert(&dir) {
                        Ok((pair, reused)) => {
                            outln!("{}", dev_cert_hint(&pair.cert, bound, &addr));
                            if reused {
                                tracing::info!(cert = %pair.cert.display(), "reusing the development certificate a previous start wrote");
                            } else {
                                tracing::info!(cert = %pair.cert.display(), "generated a development certificate");
                            }
                            pair
                        }
                        Err(e) => {
                            return fail(format!(
                                "cannot generate a development certificate: {e:#}"
                            ))
                        }
                    }
                }
            };
            let opts = ServeOptions {
                addr,
                cert,
                rules,
                rules_path,
                rules_bytes,
                workers,
                reload_interval: std::time::Duration::from_secs(reload_interval.max(1)),
                shutdown_delay: std::time::Duration::from_secs(shutdown_delay),
                shutdown_timeout: std::time::Duration::from_secs(shutdown_timeout),
                request_timeout: std::time::Duration::from_secs(request_timeout.max(1)),
                cluster: cluster_aware.then(|| server::ClusterAware {
                    connect: crate::live::Connect {
                        kubeconfig,
                        context,
                        // The read timeout: a connection silent for longer is dropped. Each
                        // watch asks the API server to end it a little sooner (see
                        // `live::cache::spawn`), so only a silent server reaches it.
                        timeout: std::time::Duration::from_secs(cache_max_silence.clamp(5, 295)),
                        page: crate::live::PAGE,
                    },
                    max_stale: std::time::Duration::from_secs(cache_max_stale.max(1)),
                    sync_timeout: std::time::Duration::from_secs(cache_sync_timeout),
                }),
            };
            match actix_web::rt::System::new().block_on(server::serve(opts)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(format!("{e:#}")),
            }
        }
        Command::Review {
            rules,
            mutate,
            apply,
            namespaces,
            file,
        } => {
            let rules = match load_rules(rules.as_ref()) {
                Ok(r) => r,
                Err(e) => return fail(e),
            };
            let namespaces = match namespaces.map(|p| crate::ci::testsuite::namespaces_file(&p)) {
                None => admission::NamespaceLabels::new(),
                Some(Ok(n)) => n,
                Some(Err(e)) => return fail(e),
            };
            let body = match read_input(&file) {
                Ok(b) if b.len() > server::MAX_BODY_BYTES => {
                    return fail(format!(
                        "{file}: {} (the server answers 413)",
                        server::too_large()
                    ))
                }
                Ok(b) => b,
                Err(e) => return fail(e),
            };
            let endpoint = if mutate {
                Endpoint::Mutate
            } else {
                Endpoint::Validate
            };
            match admission::review_with_namespaces(&body, endpoint, &rules, &namespaces) {
                Ok(r) => {
                    let shown = if apply {
                        admission::patched_object(&body, &r).map_err(|e| e.to_string())
                    } else {
                        serde_json::from_slice(&r.body).map_err(|e| e.to_string())
                    };
                    let v: serde_json::Value = match shown {
                        Ok(v) => v,
                        Err(e) => return fail(format!("{file}: {e}")),
                    };
                    outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
                    if r.allowed {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::from(1)
                    }
                }
                Err(e) => fail(format!("{file}: {e}")),
            }
        }
        Command::Check {
            rules,
            report,
            cluster,
            exclude,
            allow_empty,
            namespace,
            paths,
        } => {
            let rules = match load_rules(rules.as_ref()) {
                Ok(r) => r,
                Err(e) => return fail(e),
            };
            run_check(CheckRun {
                rules: &rules,
                paths: &paths,
                cluster: cluster.as_ref(),
                report: &report,
                exclude: &exclude,
                allow_empty,
                namespace,
            })
        }
        Command::Test {
            update,
            filter,
            dirs,
        } => run_tests(&dirs, update, filter.as_deref()),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "placement-guard", &mut buf);
            let mut script = String::from_utf8_lossy(&buf).into_owned();
            if shell == clap_complete::Shell::Bash {
                // clap_complete 4.6 spells the case arms of a hyphenated binary's subcommands
                // `placement__subcmd__guard__subcmd__X` but dispatches to
                // `placement__guard__subcmd__X`, so no subcommand's options would complete
                // (clap-rs/clap#6421).
                script = script.replace(
                    "placement__subcmd__guard__subcmd__",
                    "placement__guard__subcmd__",
                );
            }
            out!("{script}");
            ExitCode::SUCCESS
        }
        Command::Explain {
            cluster,
            pod,
            namespace,
            live,
            workloadspread,
            workload,
            replicas,
            output,
        } => match (workloadspread, workload, pod) {
            (Some(ws), Some(w), _) => {
                run_explain_spread(&ws, &w, replicas, cluster.as_ref(), output)
            }
            (_, _, Some(pod)) => {
                run_explain(cluster.as_ref(), &pod, namespace.as_deref(), &live, output)
            }
            _ => fail("give --pod (with --cluster for a dump), or --workloadspread and --workload"),
        },
        Command::Audit {
            rules,
            namespace,
            all_namespaces,
            report,
            live,
        } => {
            let rules = match load_rules(rules.as_ref()) {
                Ok(r) => r,
                Err(e) => return fail(e),
            };
            if let Err(e) = check_rule_names(&report.only_rule, &report.skip_rule) {
                return fail(e);
            }
            let namespace = match (all_namespaces, namespace) {
                (true, _) => None,
                (false, Some(ns)) => Some(ns),
                (false, None) => match default_namespace(&live) {
                    Ok(ns) => Some(ns),
                    Err(e) => return fail(e),
                },
            };
            match live::audit(live::AuditRun {
                args: &live,
                rules: &rules,
                namespace,
            }) {
                Ok(outcome) => {
                    for n in &outcome.incomplete {
                        eprintln!("placement-guard: {n}");
                    }
                    if !report.quiet {
                        for n in &outcome.notes {
                            eprintln!("placement-guard: {n}");
                        }
                    }
                    render_report(outcome.report, &report)
                }
                Err(e) => fail(e),
            }
        }
        Command::Rules {
            print_defaults,
            list,
        } => {
            if print_defaults {
                out!("{DEFAULT_RULES_YAML}");
                ExitCode::SUCCESS
            } else if list {
                out!("{}", rules_table());
                ExitCode::SUCCESS
            } else {
                fail("nothing to do: use rules --list or rules --print-defaults")
            }
        }
    }
}

struct CheckRun<'a> {
    rules: &'a RuleSet,
    paths: &'a [String],
    cluster: Option<&'a PathBuf>,
    report: &'a ReportArgs,
    exclude: &'a [String],
    allow_empty: bool,
    namespace: Option<String>,
}

fn run_check(run: CheckRun) -> ExitCode {
    use crate::ci::check::Checker;
    if let Err(e) = check_rule_names(&run.report.only_rule, &run.report.skip_rule) {
        return fail(e);
    }
    let collected = crate::cli::inputs::collect(run.paths, run.exclude);
    if !collected.missing.is_empty() {
        return fail(format!(
            "no such file or directory: {}",
            collected.missing.join(", ")
        ));
    }
    if !run.report.quiet {
        for s in &collected.skipped {
            eprintln!("placement-guard: skipped {} ({})", s.path.display(), s.why);
        }
    }
    let inputs = collected.inputs;
    if inputs.is_empty() && !run.allow_empty {
        return fail(format!(
            "no manifests found in {} (looked for .yaml, .yml, .json); pass --allow-empty if that is expected",
            run.paths.join(", ")
        ));
    }
    let spill = Box::new(crate::cli::inputs::FileSpill::new());
    let mut checker = Checker::with_spill(run.rules, spill).in_namespace(run.namespace);
    if let Some(c) = run.cluster {
        let text = match std::fs::read(c) {
            Ok(b) => match crate::cli::inputs::decode(b) {
                Ok(t) => t,
                Err(e) => return fail(format!("{}: {e}", c.display())),
            },
            Err(e) => return fail(format!("cannot read {}: {e}", c.display())),
        };
        if let Err(e) = checker.add_targets(&text) {
            return fail(format!("{}:{e}", c.display()));
        }
    }
    // One input at a time, each read as a stream.
    for i in &inputs {
        match i.reader() {
            Ok(r) => checker.check_reader(&i.name, r),
            Err(e) => checker.unreadable(&i.name, e),
        }
    }
    let mut report = checker.finish();
    let unreadable: Vec<String> = report
        .diagnostics
        .iter()
        .filter(|d| d.rule == crate::ci::check::RULE_UNREADABLE)
        .map(|d| match d.line {
            0 => format!("{}: {}", d.file, d.message),
            line => format!("{}:{line}:{}: {}", d.file, d.column, d.message),
        })
        .collect();
    if !inputs.is_empty() && report.objects == 0 && unreadable.len() == inputs.len() {
        // A machine-read report is still written (with the unreadable findings), so a step
        // that uploads it gets a valid file; the exit status says the run failed.
        if !matches!(run.report.output, Output::Text) {
            let _ = render_report(report, run.report);
        }
        for d in unreadable {
            eprintln!("placement-guard: {d}");
        }
        return fail("no input could be read");
    }
    if report.objects + report.skipped == 0 && report.diagnostics.is_empty() && !run.allow_empty {
        return fail(match report.kindless.first() {
            Some(first) => format!(
                "no Kubernetes objects in the input, only {} document(s) without a kind (first: {first}; a Helm chart? check `helm template` output); pass --allow-empty if that is expected",
                report.kindless.len()
            ),
            None => "no objects in the input (an empty file or stream); pass --allow-empty if that is expected".to_string(),
        });
    }
    if let Some(first) = report.kindless.first() {
        report.notes.push(format!(
            "{} document(s) without a kind not checked (first: {first})",
            report.kindless.len()
        ));
    }
    if !run.report.quiet {
        for n in &report.notes {
            eprintln!("placement-guard: note: {n}");
        }
    }
    render_report(report, run.report)
}

fn check_rule_names(only: &[String], skip: &[String]) -> Result<(), String> {
    let known = crate::ci::report::rule_ids();
    for r in only.iter().chain(skip) {
        if !known.contains(&r.as_str()) {
            return Err(format!("unknown rule {r:?}; rules: {}", known.join(", ")));
        }
    }
    if let Some(r) = skip.iter().find(|r| crate::ci::report::is_input_rule(r)) {
        return Err(format!(
            "--skip-rule {r}: {r} findings say an input could not be checked and are always reported; leave the file out with --exclude instead"
        ));
    }
    Ok(())
}

/// `audit`'s namespace when neither -n nor -A is given: the context's, as kubectl does.
fn default_namespace(args: &live::LiveArgs) -> Result<String, String> {
    use kube::config::{KubeConfigOptions, Kubeconfig};
    let options = KubeConfigOptions {
        context: args.context.clone(),
        ..Default::default()
    };
    let kc = match &args.kubeconfig {
        Some(p) => Kubeconfig::read_from(p).ok(),
        None => Kubeconfig::read().ok(),
    };
    let Some(kc) = kc else {
        // In a pod: its own namespace; the connection reports the error otherwise.
        return Ok(std::fs::read_to_string(
            "/var/run/secrets/kubernetes.io/serviceaccount/namespace",
        )
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "default".into()));
    };
    let name = options.context.clone().or(kc.current_context.clone());
    let ctx = kc.contexts.iter().find(|c| Some(&c.name) == name.as_ref());
    match (name, ctx) {
        (Some(n), None) if args.context.is_some() => {
            Err(format!("kubeconfig: context {n:?} does not exist"))
        }
        (_, Some(c)) => Ok(c
            .context
            .as_ref()
            .and_then(|c| c.namespace.clone())
            .unwrap_or_else(|| "default".into())),
        _ => Ok("default".into()),
    }
}

fn render_report(mut report: crate::ci::report::Report, run: &ReportArgs) -> ExitCode {
    use crate::ci::report::{self, Severity};
    use std::io::IsTerminal;
    // Suppressed findings are filtered alike: they are listed and counted as findings are. An
    // input that could not be checked is always reported: filtered, it would pass in silence.
    let shown = |rule: &String| {
        crate::ci::report::is_input_rule(rule)
            || ((run.only_rule.is_empty() || run.only_rule.contains(rule))
                && !run.skip_rule.contains(rule))
    };
    report.diagnostics.retain(|d| shown(&d.rule));
    report.suppressed.retain(|s| shown(&s.rule));
    let use_color = match run.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    let rendered = match run.output {
        Output::Text if run.quiet => report::findings_text(&report, use_color),
        Output::Text => report::text(&report, use_color),
        Output::Json => report::json(&report),
        Output::Sarif => {
            let root = std::env::current_dir().ok();
            report::sarif(&report, root.as_ref().and_then(|r| r.to_str()))
        }
        Output::Junit => report::junit(&report, run.fail_on == FailOn::Warning),
    };
    out!("{rendered}");
    let failing = report.count(Severity::Error) > 0
        || (run.fail_on == FailOn::Warning && report.count(Severity::Warning) > 0);
    if failing {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn run_tests(dirs: &[PathBuf], update: bool, filter: Option<&str>) -> ExitCode {
    use crate::ci::testsuite::{self, CaseResult};
    if let Some(d) = dirs.iter().find(|d| !d.exists()) {
        return fail(format!("{}: no such file or directory", d.display()));
    }
    let (suites, skipped) = testsuite::find_suites(dirs);
    for s in &skipped {
        eprintln!("placement-guard: skipped {} ({})", s.path.display(), s.why);
    }
    if suites.is_empty() {
        let shown: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        return fail(format!(
            "no test suites (folders with a {}) under {}",
            testsuite::RULES_FILE,
            shown.join(", ")
        ));
    }
    let (mut passed, mut failed, mut updated) = (0, 0, 0);
    for suite in &suites {
        // A broken rule file fails its suite; the other suites still run.
        let rules = match load_rules(Some(&suite.join(testsuite::RULES_FILE))) {
            Ok(r) => r,
            Err(e) => {
                failed += 1;
                // The error names the file (and the line) already.
                outln!("FAILED  {e}");
                continue;
            }
        };
        // So does a broken namespaces.yaml: its cases would be judged without the labels.
        let namespaces = match testsuite::suite_namespaces(suite) {
            Ok(n) => n,
            Err(e) => {
                failed += 1;
                outln!("FAILED  {e}");
                continue;
            }
        };
        for snap in testsuite::orphans(suite) {
            let display = snap.display().to_string();
            if filter.is_some_and(|f| !display.contains(f)) {
                continue;
            }
            if update {
                match std::fs::remove_file(&snap) {
                    Ok(()) => outln!("removed {display} (its case is gone)"),
                    Err(e) => {
                        failed += 1;
                        outln!("FAILED  {display}: cannot remove it: {e}");
                    }
                }
            } else {
                failed += 1;
                outln!("FAILED  {display}: a snapshot whose case is gone; restore the case, or `placement-guard test --update` removes it");
            }
        }
        let (cases, not_files) = testsuite::case_files(suite);
        for p in not_files {
            eprintln!(
                "placement-guard: skipped {} (not a regular file)",
                p.display()
            );
        }
        if cases.is_empty() && filter.is_none() {
            // Cases in a subfolder belong to no suite unless it has a rules.yaml of its own.
            failed += 1;
            outln!(
                "FAILED  {}: no case beside its {}",
                suite.display(),
                testsuite::RULES_FILE
            );
        }
        for case in cases {
            let display = case.display().to_string();
            if filter.is_some_and(|f| !display.contains(f)) {
                continue;
            }
            match testsuite::run_case(&case, &rules, &namespaces, &display, update) {
                Ok(CaseResult::Passed) => {
                    passed += 1;
                    outln!("ok      {display}");
                }
                Ok(CaseResult::Updated) => {
                    updated += 1;
                    passed += 1;
                    outln!("updated {display}");
                }
                Ok(CaseResult::Failed { expected, actual }) => {
                    failed += 1;
                    outln!("FAILED  {display}");
                    match expected {
                        None => outln!(
                            "  no snapshot yet: run `placement-guard test --update` to write {}",
                            testsuite::snapshot_path(&case).display()
                        ),
                        Some(exp) => out!("{}", testsuite::diff(&exp, &actual)),
                    }
                }
                Err(e) => {
                    failed += 1;
                    outln!("FAILED  {display}: {e}");
                }
            }
        }
    }
    if update {
        outln!("{updated} snapshot(s) written");
    }
    outln!("{passed} passed, {failed} failed");
    if failed > 0 {
        ExitCode::from(1)
    } else if passed == 0 {
        // A filter that matches nothing (a typo in CI) must not pass as a run of the suites.
        fail(match filter {
            Some(f) => format!("no test case matched --filter {f:?}"),
            None => "the suites hold no test case".to_string(),
        })
    } else {
        ExitCode::SUCCESS
    }
}

/// The objects of a manifest file, or of stdin for `-`.
pub(crate) fn read_objects(
    path: &std::path::Path,
) -> Result<Vec<crate::k8s::manifest::Object>, String> {
    let bytes = if path.as_os_str() == "-" {
        read_input("-")?
    } else {
        std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?
    };
    let text = crate::cli::inputs::decode(bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    crate::k8s::manifest::parse(&text).map_err(|e| format!("{}:{e}", path.display()))
}

/// A cluster dump, streamed from the file (or stdin for `-`).
/// A dump's snapshot; what it left out of the dump is noted on stderr.
fn read_cluster(path: &PathBuf) -> Result<crate::core::cluster::Cluster, String> {
    use crate::ci::explain::cluster_from;
    let (cluster, notes) = if path.as_os_str() == "-" {
        cluster_from(std::io::stdin()).map_err(|e| e.0)?
    } else {
        let f = std::fs::File::open(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        cluster_from(f).map_err(|e| format!("{}: {}", path.display(), e.0))?
    };
    note_caveats(&notes);
    Ok(cluster)
}

fn run_explain_spread(
    ws: &PathBuf,
    workload: &PathBuf,
    replicas: Option<i64>,
    cluster: Option<&PathBuf>,
    output: ExplainOutput,
) -> ExitCode {
    use crate::ci::explain;
    let stdin = |p: &PathBuf| p.as_os_str() == "-";
    if cluster.is_some_and(stdin) && (stdin(ws) || stdin(workload)) {
        return fail(
            "--cluster and the WorkloadSpread or workload cannot both be read from stdin (-)",
        );
    }
    // Both from stdin: one rendered chart holds both, read once.
    let read = if stdin(ws) && stdin(workload) {
        read_objects(ws).map(|o| (o.clone(), o))
    } else {
        read_objects(ws).and_then(|a| Ok((a, read_objects(workload)?)))
    };
    let (ws_objs, w_objs) = match read {
        Ok(both) => both,
        Err(e) => return fail(e),
    };
    let snapshot = match cluster {
        None => None,
        Some(c) => match read_cluster(c) {
            Ok(s) => Some(s),
            Err(e) => return fail(e),
        },
    };
    match explain::workloadspread(&ws_objs, &w_objs, replicas, snapshot.as_ref()) {
        Ok(v) => {
            if let Some(refused) = v["refused"].as_array() {
                let causes: Vec<&str> = refused
                    .iter()
                    .filter_map(serde_json::Value::as_str)
                    .collect();
                note_caveats(&[format!(
                    "Kruise's webhook refuses this WorkloadSpread as written, so it never places a pod (below: what it would do if it were admitted): {}",
                    causes.join("; ")
                )]);
            }
            match output {
                ExplainOutput::Text => out!("{}", explain::workloadspread_text(&v)),
                ExplainOutput::Json => {
                    outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default())
                }
            }
            // As `explain --pod`: 1 when pods would stay Pending, here those of a subset given
            // pods that no node of the dump can hold.
            if explain::stranded_subsets(&v) > 0 {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => fail(e),
    }
}

fn run_explain(
    cluster: Option<&PathBuf>,
    pod: &str,
    namespace: Option<&str>,
    live_args: &live::LiveArgs,
    output: ExplainOutput,
) -> ExitCode {
    use crate::ci::explain;
    if pod == "-" && cluster.is_some_and(|c| c.as_os_str() == "-") {
        return fail("--pod and --cluster cannot both be read from stdin (-)");
    }
    let dump = match cluster.map(read_cluster).transpose() {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let results = match (&dump, live::pod_source(pod)) {
        // A dump and a manifest: nothing to ask the API server.
        (Some(snapshot), Ok(live::PodSource::File(path))) => {
            let pod_objs = match read_objects(path) {
                Ok(o) => o,
                Err(e) => return fail(e),
            };
            let (mut template, ns) = match explain::pod_from(&pod_objs, namespace, "default") {
                Ok(p) => p,
                Err(e) => return fail(format!("{}: {e}", path.display())),
            };
            note_caveats(&explain::file_caveats(&pod_objs));
            let bound = live::file_binding(&pod_objs, &mut template, &ns);
            let mut caveats = Vec::new();
            let results = live::evaluate_bound(
                snapshot,
                &template,
                &ns,
                bound.as_ref(),
                "the dump",
                explain::admitted_pod(&pod_objs),
                &mut caveats,
            );
            // Said only when it was so: a pod the dump does not hold there gets a note instead.
            if let (Some((node, pod)), true) = (&bound, caveats.is_empty()) {
                eprintln!(
                    "placement-guard: {}",
                    live::placed_without_itself(&ns, &pod.name, node)
                );
            }
            note_caveats(&caveats);
            match results {
                Ok(r) => r,
                Err(e) => return fail(e),
            }
        }
        (_, Err(e)) => return fail(e),
        (dump, Ok(_)) => match live::explain(live_args, pod, namespace, dump.as_ref()) {
            Ok(explained) => {
                eprintln!("placement-guard: {}", explained.description);
                note_caveats(&explained.caveats);
                explained.results
            }
            // A NAME is read from the API server even beside a dump: say how to place one
            // of the dump's own pods instead.
            Err(e)
                if dump.is_some()
                    && (e.starts_with("no cluster to talk to")
                        || e.starts_with("cannot reach the API server")) =>
            {
                let (kind, name) =
                    crate::live::parse_ref(pod).map_or(("Pod", pod), |(k, n)| (k.name(), n));
                let file = cluster.map_or(String::new(), |c| c.display().to_string());
                let (tool, out) = if file.ends_with(".yaml") || file.ends_with(".yml") {
                    ("yq", "pod.yaml")
                } else {
                    ("jq", "pod.json")
                };
                let ns = namespace.map_or(String::new(), |n| {
                    format!(" and .metadata.namespace == \"{n}\"")
                });
                return fail(format!(
                    "{e}; --pod {pod} is read from the live cluster even with --cluster: to explain an object of the dump, give it as a file: {tool} '.items[] | select(.kind == \"{kind}\" and .metadata.name == \"{name}\"{ns})' {file} > {out}"
                ));
            }
            Err(e) => return fail(e),
        },
    };
    match output {
        ExplainOutput::Text => out!("{}", explain::text(&results)),
        ExplainOutput::Json => out!("{}", explain::json(&results)),
    }
    // Scripts can tell: 1 when no node fits.
    if results.iter().any(|r| r.feasible) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// What `explain`'s filters did not weigh, on stderr before the answer.
fn note_caveats(caveats: &[String]) {
    for c in caveats {
        eprintln!("placement-guard: note: {c}");
    }
}

fn read_input(file: &str) -> Result<Vec<u8>, String> {
    if file == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|e| format!("cannot read stdin: {e}"))?;
        Ok(buf)
    } else {
        std::fs::read(file).map_err(|e| format!("cannot read {file}: {e}"))
    }
}

/// Logs go to stderr through a writer thread that writes them in batches
/// ([`logwriter`]), so an admission worker neither waits on the write nor wakes a thread per
/// line; nothing is dropped. Colors only on a terminal.
fn init_logging(format: LogFormat) -> logwriter::Guard {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    // kube's watcher logs each refused retry at warn, in debug form, and kube's client each
    // failed request at error (`failed with error client error (Connect)`, every retry of an
    // outage); the cache says it once (`cluster cache: watch failed`), with the reason.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        EnvFilter::new("info,kube_runtime::watcher=error,kube_client::client::builder=off")
    });
    let (writer, guard) = logwriter::batch(std::io::stderr());
    let ansi = std::io::stderr().is_terminal();
    // Decision lines skip tracing's formatting but keep its filter and format (colors excepted).
    if !ansi {
        let decisions = writer.clone();
        let format = match format {
            LogFormat::Text => crate::server::decisions::Format::Text,
            LogFormat::Json => crate::server::decisions::Format::Json,
        };
        crate::server::decisions::install(
            format,
            Box::new(move |line| {
                let _ = decisions.append(line);
            }),
        );
    }
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(writer);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    guard
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dev_certificate_hint_names_a_reachable_url() {
        let cert = Path::new("/tmp/d/tls.crt");
        let hint = |addr: &str| {
            let bound = std::net::ToSocketAddrs::to_socket_addrs(addr)
                .ok()
                .and_then(|mut a| a.next());
            dev_cert_hint(cert, bound, addr)
        };
        assert_eq!(
            hint("0.0.0.0:8443"),
            "dev certificate: /tmp/d/tls.crt (try: curl --cacert /tmp/d/tls.crt https://127.0.0.1:8443/healthz)"
        );
        assert_eq!(
            hint("[::]:8443"),
            "dev certificate: /tmp/d/tls.crt (try: curl --cacert /tmp/d/tls.crt https://[::1]:8443/healthz)"
        );
        assert_eq!(
            hint("127.0.0.1:0"),
            "dev certificate: /tmp/d/tls.crt (try: curl --cacert /tmp/d/tls.crt https://127.0.0.1:PORT/healthz, with PORT from the \"listening on\" line)"
        );
    }
}
