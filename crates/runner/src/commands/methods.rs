//! `structdr methods`: the method registry on a terminal. Without a name, one row per method
//! (name, version, output, whether the seed matters, whether it has an out-of-sample map, and the
//! summary cut to fit [`WIDTH`] columns); with a name (or `--params`), a method's whole entry with
//! every parameter (name, type and range, default, stage, meaning). `--markdown` prints the
//! registry as Markdown, the source of docs/methods.md. Tables are laid out by `tabled`.

use anyhow::Result;
use clap::Args;
use structdr_methods::api::Stage;
use structdr_methods::MethodInfo;
use tabled::builder::Builder;
use tabled::settings::peaker::Priority;
use tabled::settings::{Style, Width};

/// The terminal width the listings fit (the usual 100-column terminal; wider lines are cut or
/// wrapped).
pub const WIDTH: usize = 100;

// clap reads doc comments as help text (a doc here would change `--help`): the commands' help documents these.
#[allow(missing_docs)]
#[derive(Args)]
pub struct MethodsArgs {
    /// Show one method: every parameter with type, range, default and meaning.
    pub name: Option<String>,
    /// Show every method's parameters (as `structdr methods NAME` does for one).
    #[arg(long, conflicts_with = "name")]
    pub params: bool,
    /// Print Markdown (the source of docs/methods.md).
    #[arg(long, conflicts_with_all = ["name", "params"])]
    pub markdown: bool,
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// One row per method, cut to [`WIDTH`] columns (the summary gives way first).
pub fn overview(methods: &[MethodInfo]) -> String {
    let mut b = Builder::default();
    b.push_record(["method", "ver", "output", "random", "transform", "what"]);
    for m in methods {
        // the summary's lead (before its first ": ", the method's full name) fits a line; the
        // rest is in `structdr methods NAME`
        let what = m.summary.split(": ").next().unwrap_or(m.summary);
        b.push_record([m.name.to_string(), m.version.to_string(), m.output.to_string(), yes_no(m.randomised).into(), yes_no(m.inductive).into(), what.into()]);
    }
    let mut t = b.build();
    t.with(Style::psql()).with(Width::truncate(WIDTH).suffix("...").priority(Priority::max(true)));
    trim_lines(&t.to_string())
}

/// The table without the padding at the ends of its lines.
fn trim_lines(table: &str) -> String {
    table.lines().map(str::trim_end).collect::<Vec<_>>().join("\n")
}

/// A method's whole entry: summary, reference, flags, and a table of its parameters, wrapped to
/// [`WIDTH`] columns.
pub fn detail(m: &MethodInfo) -> String {
    let mut head = Builder::default();
    head.push_record(["method", &format!("{} (version {})", m.name, m.version)]);
    head.push_record(["summary", m.summary]);
    head.push_record(["reference", m.reference]);
    head.push_record(["output", &m.output.to_string()]);
    head.push_record(["randomised", if m.randomised { "yes: the output depends on --seed" } else { "no: every seed gives the same output" }]);
    head.push_record(["transform", if m.inductive { "yes: out-of-sample map (embed --save-model, then transform)" } else { "no" }]);
    head.push_record(["needs labels", yes_no(m.needs_labels)]);
    head.push_record(["initial value", yes_no(m.accepts_init)]);
    let mut head = head.build();
    head.with(Style::blank()).with(Width::wrap(WIDTH).keep_words(true).priority(Priority::max(true)));
    let mut out = trim_lines(&head.to_string());
    out.push('\n');
    if m.params.is_empty() {
        out.push_str("\nno parameters\n");
        return out;
    }
    let mut b = Builder::default();
    b.push_record(["parameter", "type and range", "default", "stage", "meaning"]);
    for p in &m.params {
        let stage = match p.stage {
            Stage::Fit => "fit",
            Stage::Evaluation => "evaluation",
        };
        b.push_record([p.name.to_string(), p.kind.to_string(), p.default.to_string(), stage.into(), p.doc.into()]);
    }
    let mut t = b.build();
    t.with(Style::psql()).with(Width::wrap(WIDTH).keep_words(true).priority(Priority::max(true)));
    out.push('\n');
    out.push_str(&trim_lines(&t.to_string()));
    out.push('\n');
    out
}

/// `structdr methods`.
pub fn methods(a: MethodsArgs) -> Result<()> {
    let registry = structdr_methods::registry();
    if a.markdown {
        print!("{}", structdr_methods::registry::markdown());
    } else if let Some(name) = &a.name {
        print!("{}", detail(structdr_methods::lookup(name)?));
    } else if a.params {
        let all: Vec<String> = registry.iter().map(detail).collect();
        print!("{}", all.join("\n"));
    } else {
        println!("{}", overview(registry));
        println!("\n`structdr methods NAME` shows a method's parameters (`--params`: every method's).");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listings_fit_the_terminal_and_name_every_method() {
        let registry = structdr_methods::registry();
        let text = overview(registry);
        assert!(text.lines().all(|l| l.chars().count() <= WIDTH), "{text}");
        assert_eq!(text.lines().count(), registry.len() + 2, "header, rule, one line per method:\n{text}");
        for m in registry {
            let line = text.lines().find(|l| l.split('|').next().unwrap().trim() == m.name).unwrap_or_else(|| panic!("{} missing", m.name));
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            assert_eq!(cells[1], m.version.to_string(), "{line}");
            assert_eq!(cells[3], yes_no(m.randomised), "{line}");
            let d = detail(m);
            assert!(d.lines().all(|l| l.chars().count() <= WIDTH), "{d}");
            for p in &m.params {
                assert!(d.contains(p.name), "{}: {} missing\n{d}", m.name, p.name);
            }
        }
    }
}
