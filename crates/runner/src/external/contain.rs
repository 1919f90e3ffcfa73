//! Keeping an external command in bounds: its whole process tree ends with it, its scratch
//! directory is removed on every path, and where bubblewrap works its writes are confined to the
//! scratch directory.
//!
//! Mechanisms, the first that works here is used ([`Containment::get`] probes once per process;
//! `STRUCTDR_CONTAIN=bwrap|unshare|group` starts the search lower down the list, for tests and
//! for machines where a probe passes but the sandbox gets in the way):
//! 1. **bubblewrap** (`bwrap --unshare-pid --die-with-parent --new-session`, the file system
//!    read-only but the scratch directory): a PID namespace, so when the command ends or is
//!    killed, or structdr dies, the kernel kills everything left in it;
//! 2. **unshare** (util-linux, `unshare --pid --fork --kill-child`): a PID namespace whose init is
//!    the command; the same guarantees, writes not confined;
//! 3. **process group**: the command leads its own group, gets `PR_SET_PDEATHSIG` (SIGKILL when
//!    structdr dies) and structdr is a child subreaper. After the command ends every process that
//!    carries the run's environment token ([`RUN_VAR`]) is killed; a `setsid` descendant that
//!    outlives a SIGKILLed structdr lives until the next structdr that runs an external method
//!    sweeps dead owners' tokens ([`sweep_dead_owners`]); one that clears its environment escapes.
//!
//! In every mechanism each process of a run carries [`OWNER_VAR`] and [`RUN_VAR`], and the
//! scratch directory is named after its owner (`structdr-external-<pid>.<start time>-...`), so a
//! later structdr removes what a SIGKILLed one left.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The environment variable naming the structdr process that started an external command
/// (`<pid>.<start time in clock ticks>`): inherited by every descendant, read by the sweeps.
pub const OWNER_VAR: &str = "STRUCTDR_EXTERNAL_OWNER";
/// The environment variable naming one run of an external command (`<owner>-<n>`).
pub const RUN_VAR: &str = "STRUCTDR_EXTERNAL_RUN";
/// Prefix of scratch directories in the temporary directory, followed by the owner.
pub const SCRATCH_PREFIX: &str = "structdr-external-";

/// How external commands are kept in bounds on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    /// bubblewrap: PID namespace, writes confined to the scratch directory.
    Bwrap,
    /// util-linux `unshare`: PID namespace, writes not confined.
    Unshare,
    /// Process group, `PR_SET_PDEATHSIG`, subreaper and a sweep by environment token.
    Group,
}

/// The mechanism chosen for this process and what the records say about it.
#[derive(Debug, Clone)]
pub struct Containment {
    /// The mechanism used.
    pub mechanism: Mechanism,
    /// The note every external record gets ("contained by ...").
    pub note: String,
}

/// The identity of this structdr process: pid and start time (pids are reused, start times tell
/// two holders of one pid apart).
pub fn owner_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let pid = std::process::id();
        format!("{pid}.{}", start_time(pid as i32).unwrap_or(0))
    })
}

/// A fresh token for one run of a command.
pub fn run_token() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!("{}-{}", owner_id(), N.fetch_add(1, Ordering::Relaxed))
}

/// Field 22 of `/proc/<pid>/stat` (start time after boot, clock ticks), or `None` for a process
/// that is gone or a zombie.
fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // the command name (field 2) is in parentheses and may hold spaces: fields count after it
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    if fields.first() == Some(&"Z") || fields.first() == Some(&"X") {
        return None;
    }
    fields.get(19)?.parse().ok()
}

/// Whether the structdr process named `owner` (`<pid>.<start time>`) is still running.
fn owner_alive(owner: &str) -> bool {
    let Some((pid, start)) = owner.split_once('.') else { return true };
    let (Ok(pid), Ok(start)) = (pid.parse::<i32>(), start.parse::<u64>()) else { return true };
    start_time(pid) == Some(start)
}

/// The `/proc/<pid>/environ` value of `var` of every process but this one that has it, with the
/// parent pid of each: `(pid, ppid, value)`.
fn processes_with(var: &str) -> Vec<(i32, i32, String)> {
    let me = std::process::id() as i32;
    let prefix = format!("{var}=");
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return out };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        if pid == me {
            continue;
        }
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else { continue };
        let Some(value) = env.split(|b| *b == 0).find_map(|kv| kv.strip_prefix(prefix.as_bytes())) else { continue };
        let ppid = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rfind(')').and_then(|i| s[i + 2..].split(' ').nth(1).and_then(|p| p.parse().ok())))
            .unwrap_or(0);
        out.push((pid, ppid, String::from_utf8_lossy(value).into_owned()));
    }
    out
}

/// Kills every process whose `var` satisfies `doomed` until none is left (a process may fork
/// while the scan runs; at most about a second of rounds), reaping those that were reparented to
/// this process. Returns how many were killed.
fn kill_all_with(var: &str, doomed: &dyn Fn(&str) -> bool) -> usize {
    let me = std::process::id() as i32;
    let mut killed = std::collections::BTreeSet::new();
    let t0 = Instant::now();
    loop {
        let found: Vec<(i32, i32)> = processes_with(var).into_iter().filter(|(_, _, v)| doomed(v)).map(|(p, pp, _)| (p, pp)).collect();
        if found.is_empty() || t0.elapsed() > Duration::from_secs(1) {
            return killed.len();
        }
        for (pid, ppid) in found {
            // SAFETY: kill and waitpid on a pid read from /proc; a pid that has gone meanwhile
            // gives ESRCH / ECHILD, which is what we want anyway
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                if ppid == me {
                    libc::waitpid(pid, std::ptr::null_mut(), 0);
                }
            }
            killed.insert(pid);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Once per process, before the first external command: kills the processes and removes the
/// scratch directories that structdr processes no longer running left behind (a SIGKILLed
/// structdr cannot clean up after itself).
pub fn sweep_dead_owners() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        kill_all_with(OWNER_VAR, &|owner| !owner_alive(owner));
        let Ok(dir) = std::fs::read_dir(std::env::temp_dir()) else { return };
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(owner) = name.strip_prefix(SCRATCH_PREFIX).and_then(|r| r.split_once('-')).map(|(o, _)| o.to_string()) else { continue };
            if owner.contains('.') && !owner_alive(&owner) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    });
}

/// A scratch directory for one run, named after this process (removed when dropped).
pub fn scratch() -> Result<tempfile::TempDir, String> {
    tempfile::Builder::new().prefix(&format!("{SCRATCH_PREFIX}{}-", owner_id())).tempdir().map_err(|e| format!("scratch directory: {e}"))
}

/// The arguments that put a command into a bubblewrap sandbox with `work` writable.
fn bwrap_args(work: &Path) -> Vec<std::ffi::OsString> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let mut a: Vec<std::ffi::OsString> =
        ["--die-with-parent", "--unshare-pid", "--new-session", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind"]
            .iter()
            .map(Into::into)
            .collect();
    a.extend([work.as_os_str().to_owned(), work.as_os_str().to_owned(), "--chdir".into(), cwd.into_os_string(), "--".into()]);
    a
}

/// Whether `program args...` exits 0 within a few seconds (a probe).
fn probe(mut cmd: Command) -> Result<(), String> {
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    let out = cmd.output().map_err(|e| format!("cannot start: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// Whether bubblewrap runs a command with a writable scratch directory here.
fn bwrap_works() -> Result<(), String> {
    if !crate::spec::external::program_exists("bwrap") {
        return Err("bwrap is not installed".into());
    }
    let dir = tempfile::Builder::new().prefix("structdr-probe-").tempdir().map_err(|e| format!("probe directory: {e}"))?;
    let mut cmd = Command::new("bwrap");
    cmd.args(bwrap_args(dir.path())).args(["/bin/sh", "-c", ": > \"$0/probe\""]).arg(dir.path());
    probe(cmd).map_err(|e| format!("bwrap does not work here ({e})"))?;
    if !dir.path().join("probe").is_file() {
        return Err("bwrap ran but the scratch directory was not writable".into());
    }
    Ok(())
}

/// Whether util-linux `unshare` can make a PID namespace here.
fn unshare_works() -> Result<(), String> {
    let mut cmd = Command::new("unshare");
    cmd.args(["--pid", "--fork", "--kill-child", "--", "/bin/sh", "-c", "exit 0"]);
    probe(cmd).map_err(|e| format!("unshare --pid does not work here ({e})"))
}

impl Containment {
    /// The mechanism of this process, probed on first use; a warning on stderr, once, when
    /// writes cannot be confined.
    pub fn get() -> &'static Containment {
        static C: OnceLock<Containment> = OnceLock::new();
        C.get_or_init(|| {
            let start = std::env::var("STRUCTDR_CONTAIN").unwrap_or_default();
            let bwrap = if matches!(start.as_str(), "unshare" | "group") { Err(format!("STRUCTDR_CONTAIN={start}")) } else { bwrap_works() };
            let c = match bwrap {
                Ok(()) => Containment {
                    mechanism: Mechanism::Bwrap,
                    note: "contained by bubblewrap (PID namespace: --unshare-pid --die-with-parent --new-session); writes confined to the scratch directory".into(),
                },
                Err(why) => {
                    let unshare = if start == "group" { Err(format!("STRUCTDR_CONTAIN={start}")) } else { unshare_works() };
                    let c = match unshare {
                        Ok(()) => Containment {
                            mechanism: Mechanism::Unshare,
                            note: format!("contained by unshare (PID namespace, the command its init; PR_SET_PDEATHSIG); writes not confined ({why})"),
                        },
                        Err(why2) => {
                            // orphans of the command's tree come to structdr, which kills and reaps them
                            // SAFETY: prctl with constant arguments, no pointers
                            unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
                            Containment {
                                mechanism: Mechanism::Group,
                                note: format!(
                                    "contained by process group, PR_SET_PDEATHSIG, subreaper and a sweep by environment token (no PID namespace: {why2}); writes not confined ({why})"
                                ),
                            }
                        }
                    };
                    eprintln!("structdr: external commands run with their writes not confined: {why}; {}", c.note);
                    c
                }
            };
            c
        })
    }

    /// The command that runs `program args...` with `work` as its scratch directory: wrapped in the
    /// sandbox, in its own process group, killed when this thread dies, carrying the owner and
    /// run tokens (`token`).
    pub fn command(&self, program_and_args: &[String], work: &Path, token: &str) -> Command {
        let mut cmd = match self.mechanism {
            Mechanism::Bwrap => {
                let mut c = Command::new("bwrap");
                c.args(bwrap_args(work)).args(program_and_args);
                // the file system is read-only: temporary files and tools' caches go to the scratch
                let tmp = work.join("tmp");
                let _ = std::fs::create_dir_all(&tmp);
                c.env("TMPDIR", &tmp)
                    .env("XDG_CACHE_HOME", tmp.join("cache"))
                    .env("MPLCONFIGDIR", tmp.join("matplotlib"))
                    .env("NUMBA_CACHE_DIR", tmp.join("numba"))
                    .env("PYTHONDONTWRITEBYTECODE", "1");
                c
            }
            Mechanism::Unshare => {
                let mut c = Command::new("unshare");
                c.args(["--pid", "--fork", "--kill-child", "--"]).args(program_and_args);
                c
            }
            Mechanism::Group => {
                let mut c = Command::new(&program_and_args[0]);
                c.args(&program_and_args[1..]);
                c
            }
        };
        cmd.env(OWNER_VAR, owner_id()).env(RUN_VAR, token);
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0); // its own group, so a kill reaches the children it started too
            let parent = std::process::id() as i32;
            // SAFETY: only async-signal-safe calls between fork and exec (prctl, getppid, _exit)
            unsafe {
                cmd.pre_exec(move || {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                    // structdr may have died before prctl: then nothing would ever kill us
                    if libc::getppid() != parent {
                        libc::_exit(1);
                    }
                    Ok(())
                });
            }
        }
        cmd
    }

    /// Ends what is left of a run: the command's process group, and every process carrying the
    /// run's token (with a PID namespace there is none left; the sweep is cheap and catches a
    /// sandbox that did not hold). Call after the command exited or was killed.
    pub fn end_run(&self, child: &mut Child, token: &str) {
        kill_tree(child);
        kill_all_with(RUN_VAR, &|v| v == token);
    }
}

/// Kills the command's process group (it was started as a group leader) and the command, and
/// reaps it.
pub fn kill_tree(child: &mut Child) {
    #[cfg(unix)]
    // SAFETY: a signal to the group the child leads; ESRCH when it is gone already
    unsafe {
        libc::kill(-(child.id() as i32), libc::SIGKILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}
