//! The bodies of the cargo-fuzz targets (`fuzz/fuzz_targets/<name>.rs`, run by `just fuzz`): one
//! function per input format structdr reads, each taking arbitrary bytes.
//!
//! Each body must return, never panic, and allocate no more than the input's declared sizes (the
//! fuzzer runs with an allocation limit). Where structdr also writes the format, what the parser
//! accepts must survive the writer and the parser again bit for bit (NaN payloads and signs
//! aside). The test `fuzz_corpora` replays every committed corpus file (`fuzz/corpus/<name>/`)
//! through these same functions on the stable toolchain, so each input the fuzzer kept, and each
//! crash it once found, stays a regression test.

use crate::{slurm, spec, store};
use ndarray::Array2;
use structdr_datasets::parse::{self, csv::Delimiter};

/// The targets by name, as `fuzz/fuzz_targets/<name>.rs` and `fuzz/corpus/<name>/` name them.
pub const TARGETS: &[(&str, fn(&[u8]))] = &[
    ("npy", npy),
    ("csv", csv),
    ("libsvm", libsvm),
    ("mat", mat),
    ("idx", idx),
    ("spec_toml", spec_toml),
    ("record_json", record_json),
    ("images", images),
    ("slurm_script", slurm_script),
];

/// Panics unless `a` and `b` have one shape and the same values bit for bit (any NaN equals any
/// NaN: the text formats do not keep payloads or signs of NaN).
fn assert_same(a: &Array2<f64>, b: &Array2<f64>, what: &str) {
    assert_eq!(a.dim(), b.dim(), "{what}: shape changed in the round trip");
    for (x, y) in a.iter().zip(b.iter()) {
        assert!(x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()), "{what}: {x:?} came back as {y:?}");
    }
}

/// `.npy`: [`parse::npy::parse_matrix`] and [`parse::npy::parse_labels`]; an accepted matrix
/// written by ndarray-npy (as `structdr embed --out x.npy` writes) reads back the same.
pub fn npy(data: &[u8]) {
    if let Ok(x) = parse::npy::parse_matrix(data, "fuzz.npy") {
        let mut buf = Vec::new();
        ndarray_npy::WriteNpyExt::write_npy(&x, &mut buf).expect("ndarray-npy writes into memory");
        let back = parse::npy::parse_matrix(&buf, "roundtrip.npy").expect("ndarray-npy's output parses");
        assert_same(&x, &back, "npy");
    }
    if let Ok(y) = parse::npy::parse_labels(data, "fuzz.npy") {
        assert!(y.iter().all(|v| v.unsigned_abs() < 9_000_000_000_000_000), "labels are integers below 9e15");
    }
}

/// Delimited text: [`parse::csv::parse_with`] with each delimiter and detected; an accepted
/// matrix written by [`parse::csv::write`] reads back the same.
pub fn csv(data: &[u8]) {
    for delimiter in [None, Some(Delimiter::Comma), Some(Delimiter::Semicolon), Some(Delimiter::Tab), Some(Delimiter::Whitespace)] {
        if let Ok(x) = parse::csv::parse_with(data, "fuzz.csv", delimiter) {
            assert!(x.nrows() > 0 && x.ncols() > 0, "csv: an accepted table has rows and columns");
            let back = parse::csv::parse(parse::csv::write(&x.view()).as_bytes(), "roundtrip.csv").expect("csv::write's output parses");
            assert_same(&x, &back, "csv");
        }
    }
}

/// LIBSVM text, plain or bzip2-compressed (as the libsvm sets are served): [`parse::libsvm::parse`]
/// with the dimensionality found and with one declared by the first byte.
pub fn libsvm(data: &[u8]) {
    let text = match parse::bunzip2(data, "fuzz.bz2") {
        Ok(t) => t,
        Err(_) => data.to_vec(),
    };
    for n_features in [None, data.first().map(|&b| usize::from(b))] {
        if let Ok(m) = parse::libsvm::parse(&text, "fuzz.libsvm", n_features) {
            assert_eq!(m.x.nrows(), m.y.len(), "libsvm: one label per row");
            assert!(m.x.iter().all(|v| v.is_finite()), "libsvm: values are finite");
            if let Some(d) = n_features {
                assert_eq!(m.x.ncols(), d, "libsvm: the declared dimensionality");
            }
        }
    }
}

/// MATLAB v5 `.mat`: [`parse::mat::MatFile::parse`], then every variable as a matrix.
pub fn mat(data: &[u8]) {
    if let Ok(f) = parse::mat::MatFile::parse(data, "fuzz.mat") {
        for name in f.names() {
            let _ = f.class(&name);
            if let Ok(x) = f.matrix(&name) {
                assert!(x.len() <= data.len().saturating_mul(1032), "mat: a matrix larger than the file could hold");
            }
        }
    }
}

/// IDX tensors, plain or gzip-compressed (as MNIST is served): [`parse::idx::parse`].
pub fn idx(data: &[u8]) {
    let raw = match parse::gunzip(data, "fuzz.gz") {
        Ok(t) => t,
        Err(_) => data.to_vec(),
    };
    if let Ok((dims, values)) = parse::idx::parse(&raw, "fuzz.idx") {
        assert_eq!(dims.iter().product::<usize>(), values.len(), "idx: values match the dimensions");
    }
}

/// Experiment specs: [`spec::parse`] (what `structdr check` and `run` read), on the text as
/// UTF-8 (lossily). An accepted plan stays within the stated cell limits.
pub fn spec_toml(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match spec::parse(&text, "fuzz.toml", std::path::Path::new("fuzz.toml")) {
        Ok(plan) => {
            for m in &plan.methods {
                assert!(m.cells.len() < spec::GRID_CELL_LIMIT, "spec: a grid past the limit was accepted");
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

/// Record files (`results/<id>/records/<hash>.json`) and fit-cache files
/// (`results/<id>/fits/<hash>.json`): [`store::Record::from_json`] and [`store::parse_fit`]. An
/// accepted record written again and read back is the same record (its floats included); sealed
/// with its checksum, written and read back, it verifies; any change to a metric then fails its
/// checksum.
pub fn record_json(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(rec) = store::Record::from_json(text) {
        let _ = rec.integrity();
        let once = serde_json::to_string_pretty(&rec).expect("a parsed record serialises");
        let again = store::Record::from_json(&once).expect("a written record parses");
        assert_eq!(once, serde_json::to_string_pretty(&again).expect("serialises"), "record: JSON round trip changed the record");
        let sealed = serde_json::to_string_pretty(&rec.sealed()).expect("serialises");
        let mut back = store::Record::from_json(&sealed).expect("a sealed record parses");
        assert_eq!(back.integrity(), store::Integrity::Verified, "record: a sealed record does not verify");
        if let Some(v) = back.metrics.values_mut().next() {
            *v = if *v == 0.5 { 0.25 } else { 0.5 };
            assert!(back.integrity().refusal().is_some(), "record: an edited metric kept a matching checksum");
        }
    }
    if let Some((_, fitted, seconds)) = store::parse_fit(text) {
        assert!(seconds.is_finite() && seconds >= 0.0, "fit: seconds are a duration");
        let _ = fitted.drawn_graph();
    }
}

/// Images inside the image zips: PGM/PPM, PNG, JPEG, and the zip itself
/// ([`structdr_datasets::load::parse_image_zip`] with default loader settings).
pub fn images(data: &[u8]) {
    use structdr_datasets::load;
    for decoded in [load::decode_pnm(data, "fuzz.pnm"), load::decode_png(data, "fuzz.png"), load::decode_jpeg(data, "fuzz.jpg")].into_iter().flatten() {
        assert_eq!(decoded.data.len(), decoded.height * decoded.width * decoded.channels, "image: pixels match the header");
    }
    let _ = load::parse_image_zip(data, "fuzz.zip", &Default::default(), 2, 4);
}

/// The Slurm script writer ([`slurm::render`]) on arbitrary values: the input, as UTF-8 (lossily),
/// split at NUL bytes into the spec path, the spec id, the partition, the time limit, the
/// current directory, the binary, the results root, the script directory and an exported value
/// (missing fields take ordinary values). Scripts rendered from accepted values, read back line
/// by line, say exactly what was given: no control character, every directive's arguments as
/// sbatch's `#SBATCH` parser reads them, every command line's words as bash splits them (quotes
/// removed, nothing outside quotes that bash would expand or treat as an operator), and the one
/// command that runs is the binary with the given spec and results root.
pub fn slurm_script(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut f = text.split('\0').map(str::to_string);
    let mut next = |default: &str| f.next().unwrap_or_else(|| default.to_string());
    let v = slurm::ScriptValues {
        spec: next("experiments/t.toml"),
        id: next("t"),
        partition: Some(next("short")).filter(|p| p != "-"),
        time: Some(next("1:00:00")).filter(|t| t != "-"),
        cwd: next("/home/u/structdr"),
        binary: next("/home/u/structdr/target/release/structdr"),
        results: next("/home/u/structdr/results"),
        dir: next("/home/u/structdr/results/t/slurm"),
        exports: vec![("STRUCTDR_MIRROR".into(), next("/srv/mirror"))],
        spec_abs: String::new(),
        tasks: 4,
        cpus_per_task: 2,
    };
    let v = slurm::ScriptValues { spec_abs: format!("/abs/{}", v.spec), ..v };
    let Ok((array, tables)) = slurm::render(&v) else { return };
    for (name, script, tail) in [
        ("array", &array, vec!["--shard", "${SLURM_ARRAY_TASK_ID}/4", "-j", "${SLURM_CPUS_PER_TASK:-2}", "--quiet"]),
        ("tables", &tables, vec!["--max-cells", "0", "-j", "${SLURM_CPUS_PER_TASK:-2}", "--fail-on-error"]),
    ] {
        assert!(script.chars().all(|c| c == '\n' || !c.is_control()), "{name}: a control character in the script");
        let mut directives: Vec<Vec<String>> = Vec::new();
        let mut commands: Vec<Vec<String>> = Vec::new();
        for line in script.lines() {
            if let Some(rest) = line.strip_prefix("#SBATCH") {
                directives.push(sbatch_words(rest).unwrap_or_else(|e| panic!("{name}: directive {line:?}: {e}")));
            } else if line.starts_with('#') {
                continue; // a comment (one line: no value holds a newline)
            } else {
                commands.push(bash_words(line).unwrap_or_else(|e| panic!("{name}: line {line:?}: {e}")));
            }
        }
        let directive = |flag: &str| directives.iter().find_map(|d| d.first().and_then(|a| a.strip_prefix(&format!("{flag}=")).map(str::to_string)));
        assert!(directives.iter().all(|d| d.len() == 1), "{name}: a directive with several arguments: {directives:?}");
        assert_eq!(directive("--partition"), v.partition, "{name}: partition");
        if name == "array" {
            assert_eq!(directive("--time"), v.time, "{name}: time");
        }
        let job = directive("--job-name").expect("a job name");
        assert!(job.starts_with(&format!("structdr-{}", v.id)), "{name}: job name {job:?}");
        let out = directive("--output").expect("an output pattern");
        assert!(out.replace("%%", "%").starts_with(&format!("{}/", v.logs())), "{name}: output {out:?}");
        let mut expect: Vec<Vec<String>> = vec![vec!["set".into(), "-euo".into(), "pipefail".into()], vec!["cd".into(), v.cwd.clone()]];
        expect.extend(v.exports.iter().map(|(k, x)| vec!["export".to_string(), format!("{k}={x}")]));
        let mut exec: Vec<String> = ["exec", &v.binary, "run", &v.spec_abs, "--results", &v.results].iter().map(|s| s.to_string()).collect();
        exec.extend(tail.iter().map(|s| s.to_string()));
        expect.push(exec);
        assert_eq!(commands, expect, "{name}: the commands read back are not the values given");
    }
}

/// The words of a command line as bash reads them, for the forms a generated script uses:
/// single-quoted text (literal), double-quoted text holding only `${NAME}` / `${NAME:-digits}`
/// expansions (kept as written) and plain characters, and unquoted runs of characters bash
/// gives no meaning to, and `\x` for a literal `x` (as in `'\''`). Anything else (an unquoted `$`,
/// backtick, `;`, `|`, `&`, `<`, `>`, `(`, `)`, `*`, `?`, `[`, `#`, `~`, `{`, `}`, `!`, an unterminated quote) is an error.
fn bash_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' => words.extend(word.take()),
            // `'\''` closes a quote, writes a quote, opens the next
            '\\' => match chars.next() {
                Some(x) => word.get_or_insert_with(String::new).push(x),
                None => return Err("a '\\' at the end of the line".into()),
            },
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => w.push(x),
                        None => return Err("unterminated single quote".into()),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('$') => {
                            // only ${NAME} or ${NAME:-digits}
                            if chars.next() != Some('{') {
                                return Err("a '$' in double quotes that is not ${...}".into());
                            }
                            let mut inner = String::new();
                            loop {
                                match chars.next() {
                                    Some('}') => break,
                                    Some(x) => inner.push(x),
                                    None => return Err("unterminated ${".into()),
                                }
                            }
                            let (name, default) = inner.split_once(":-").unwrap_or((&inner, "0"));
                            if !(name.chars().all(|x| x.is_ascii_uppercase() || x == '_') && default.chars().all(|x| x.is_ascii_digit())) {
                                return Err(format!("an expansion ${{{inner}}} in double quotes"));
                            }
                            w.push_str(&format!("${{{inner}}}"));
                        }
                        Some(x @ ('`' | '\\' | '!')) => return Err(format!("{x:?} in double quotes")),
                        Some(x) => w.push(x),
                        None => return Err("unterminated double quote".into()),
                    }
                }
            }
            c if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | ':' | '=' | ',' | '+' | '@' | '%') => {
                word.get_or_insert_with(String::new).push(c)
            }
            c => return Err(format!("unquoted {c:?}")),
        }
    }
    words.extend(word);
    Ok(words)
}

/// The arguments of an `#SBATCH` line as sbatch's script parser reads them: words split at
/// whitespace, `'` and `"` group characters, `\` escapes the next character (inside quotes too),
/// an unquoted `#` ends the line.
fn sbatch_words(rest: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            return Ok(words);
        }
        let (mut w, mut quote, mut escape) = (String::new(), None, false);
        while let Some(&c) = chars.peek() {
            if quote.is_none() && c.is_whitespace() {
                break;
            }
            chars.next();
            if escape {
                escape = false;
                w.push(c);
            } else if c == '\\' {
                escape = true;
            } else if let Some(q) = quote {
                if c == q {
                    quote = None;
                } else {
                    w.push(c);
                }
            } else if c == '"' || c == '\'' {
                quote = Some(c);
            } else if c == '#' {
                return Err("an unquoted '#' (sbatch reads the rest as a comment)".into());
            } else {
                w.push(c);
            }
        }
        if quote.is_some() {
            return Err("unterminated quote".into());
        }
        words.push(w);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn slurm_values_read_back_from_their_scripts() {
        // the ordinary values, and values holding every character bash or sbatch would act on
        super::slurm_script(b"");
        super::slurm_script(
            "s p'c $(x) `y`; z.toml\x00run-1\x00short,gpu\x001-12:30\x00/h/a b'c\x00/h/bin$(id)/structdr\x00/r/x;y\x00/r/x;y/o%j/slurm\x00v'al\\ue".as_bytes(),
        );
        // refused: a newline, a bad time, an id outside its characters
        super::slurm_script(b"a\nb.toml");
        super::slurm_script(b"s.toml\x00t\x00short\x001:00:00;reboot");
        super::slurm_script(b"s.toml\x00$(x)");
    }

    /// A stable-toolchain stand-in for the fuzzer: 20,000 seeded inputs drawn from the characters
    /// bash and sbatch act on, split into fields, through the body.
    #[test]
    fn slurm_script_on_seeded_random_values() {
        let alphabet: Vec<char> = "ab1 09:-,._/'\"\\$()`;|&<>#%*?[]{}~!\n\r\t\0UNLIMITED".chars().collect();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..20_000 {
            let len = (next() % 120) as usize;
            let text: String = (0..len).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]).collect();
            super::slurm_script(text.as_bytes());
        }
    }

    #[test]
    fn script_readers_refuse_what_bash_or_sbatch_would_act_on() {
        for bad in ["exec 'a'; touch x", "exec a$(x)", "exec \"`x`\"", "exec \"$(x)\"", "exec 'a", "exec a > b", "exec ~/x"] {
            assert!(super::bash_words(bad).is_err(), "{bad}");
        }
        assert_eq!(super::bash_words("exec 'it'\\''s' \"${A:-2}\"").unwrap(), ["exec", "it's", "${A:-2}"]);
        assert_eq!(super::sbatch_words(" --output='a b'\\''c'").unwrap(), ["--output=a b'c"]);
        assert!(super::sbatch_words(" --partition=a #b").is_err());
    }

    #[test]
    fn every_target_has_a_fuzz_binary() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/fuzz_targets");
        for (name, _) in super::TARGETS {
            assert!(dir.join(format!("{name}.rs")).is_file(), "fuzz/fuzz_targets/{name}.rs is missing");
        }
    }
}
