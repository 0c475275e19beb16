//! The adapter process: spawn it, write lines to its stdin, read lines from its stdout within a
//! wall-clock bound, and keep the tail of its stderr for fault reports.
//!
//! On Unix, stdout is read on the calling thread and every wait is a `poll(2)` with the time left
//! (a reader thread would add a thread hand-off to every answer); elsewhere a reader thread feeds
//! a channel read with `recv_timeout`. Either way a process that stops answering cannot block the
//! simulator. Writes are bounded too: on Unix stdin is non-blocking and a full pipe is waited on
//! with `poll(2)`, so an adapter that never reads its stdin cannot block the simulator in
//! `write()`. A thread keeps the tail of stderr, so a chatty adapter cannot fill that pipe. The
//! wall clock only decides whether an adapter has failed; it never reaches a run, so determinism
//! is unaffected.
//!
//! On Unix the adapter starts in a process group of its own, and ending it ends the group
//! (SIGTERM, then SIGKILL after [`END_WAIT`]): a wrapper script or a module that spawns a child
//! leaves nothing behind. On Linux, three more things make every process an adapter started die
//! with it, or with wakesim:
//! - the adapter gets a parent-death signal (SIGTERM, `PR_SET_PDEATHSIG`), so a wakesim killed
//!   outright (SIGKILL, a crash) takes its adapters with it; the signal follows the *thread* that
//!   spawned the child, so every adapter is spawned by one thread that lives as long as the
//!   process ([`spawner`]), never by a runner thread that may end first;
//! - wakesim is a child subreaper (`PR_SET_CHILD_SUBREAPER`): a grandchild whose parent died is
//!   reparented to wakesim rather than to init;
//! - every adapter and whatever it starts inherit `WAKESIM_ADAPTER_OF=<wakesim pid>:<serial>`;
//!   ending the adapter also kills every process still carrying its value, which catches a
//!   grandchild that left the process group (`setsid`) and is not a child of wakesim's.
//!
//! A line the adapter writes to stderr that starts with `wakesim: ` (an install's progress: a
//! driver installing its pinned packages on first use) is passed on to wakesim's own stderr.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{AdapterFault, FaultKind};
use crate::limits::{
    ADAPTER_LINE_BYTES_MAX as LINE_BYTES_MAX,
    ADAPTER_STDERR_TAIL_BYTES_MAX as STDERR_TAIL_BYTES_MAX,
    ADAPTER_STDERR_TAIL_LINES_MAX as STDERR_TAIL_LINES_MAX,
};

const EXIT_WAIT: Duration = Duration::from_millis(1000);
/// How long an adapter's process group gets to exit after SIGTERM before SIGKILL.
pub const END_WAIT: Duration = Duration::from_millis(300);

/// Why a line could not be read.
pub enum ReadError {
    Timeout,
    Eof,
    TooLong,
    Failed(String),
}

/// A running adapter process.
pub struct Process {
    child: Child,
    /// Non-blocking on Unix: [`Process::write_line`] waits for room with `poll(2)`.
    stdin: Option<ChildStdin>,
    /// The child has been waited for (its exit status read), so its pid may be reused.
    reaped: bool,
    stdout: Lines,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_done: Receiver<()>,
    /// The value of [`TOKEN_VAR`] this adapter and its descendants carry.
    token: String,
}

/// Processes waiting for a driver's start-up (its install, its import of the host): a Ctrl-C
/// then has nothing in flight worth finishing, so `wakesim run` stops at once.
static STARTING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Is a driver starting (see [`Starting`])?
pub fn starting() -> bool {
    STARTING.load(std::sync::atomic::Ordering::SeqCst) > 0
}

/// Held while a driver starts: [`starting`] is true meanwhile.
pub struct Starting(());

impl Starting {
    pub fn begin() -> Starting {
        STARTING.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Starting(())
    }
}

impl Drop for Starting {
    fn drop(&mut self) {
        STARTING.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The variable every adapter process and its descendants inherit: `<wakesim pid>:<serial>`.
pub const TOKEN_VAR: &str = "WAKESIM_ADAPTER_OF";
static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The child gets SIGTERM when wakesim dies (the adapter's default is to exit; `hosts/launch.mjs`
/// ends its process group on it). And wakesim becomes a subreaper, once.
#[cfg(target_os = "linux")]
fn die_with_parent(cmd: &mut Command) {
    static SUBREAPER: std::sync::Once = std::sync::Once::new();
    SUBREAPER.call_once(|| {
        // Without it an orphaned grandchild goes to init; the token sweep still ends it.
        let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    });
    let parent = rustix::process::getpid();
    // SAFETY: the closure runs between fork and exec and makes only two system calls
    // (prctl, getppid), both async-signal-safe; it allocates nothing and takes no lock.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(cmd, move || {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::TERM))?;
            // wakesim died between the fork and the prctl: the signal was missed, so exit now.
            if rustix::process::getppid() != Some(parent) {
                return Err(std::io::Error::other(
                    "wakesim exited while starting the adapter",
                ));
            }
            Ok(())
        });
    }
}

/// The one thread that spawns adapters (see the module's documentation): a parent-death signal
/// fires when the spawning thread ends, so it must be a thread that never does.
mod spawner {
    use std::process::{Child, Command};
    use std::sync::Mutex;
    use std::sync::mpsc::{Sender, channel};

    type Job = (Command, Sender<std::io::Result<Child>>);
    static JOBS: Mutex<Option<Sender<Job>>> = Mutex::new(None);

    pub fn spawn(mut cmd: Command) -> std::io::Result<Child> {
        let tx = {
            let mut jobs = JOBS.lock().unwrap_or_else(|e| e.into_inner());
            if jobs.is_none() {
                let (tx, rx) = channel::<Job>();
                let started = std::thread::Builder::new()
                    .name("wakesim-spawner".into())
                    .spawn(move || {
                        for (mut cmd, reply) in rx {
                            let _ = reply.send(cmd.spawn());
                        }
                    });
                if started.is_err() {
                    // No thread to spare: spawn here (the death signal then follows this thread).
                    return cmd.spawn();
                }
                *jobs = Some(tx);
            }
            jobs.as_ref().expect("just set").clone()
        };
        let (reply, answer) = channel();
        tx.send((cmd, reply))
            .map_err(|_| std::io::Error::other("the spawner thread is gone"))?;
        answer
            .recv()
            .map_err(|_| std::io::Error::other("the spawner thread is gone"))?
    }
}

/// Find `program` as the command line would: a path (with a separator) relative to `cwd`, or a
/// name on `PATH`.
/// A path comes back absolute: the child changes directory to `cwd` before `exec` resolves the
/// program, so a relative one would be looked up from the wrong place.
pub fn resolve_program(program: &str, cwd: &Path) -> Option<PathBuf> {
    if program.contains('/') || program.contains(std::path::MAIN_SEPARATOR) {
        let p = std::path::absolute(cwd.join(program)).ok()?;
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
}

#[cfg(unix)]
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(p: &Path) -> bool {
    p.is_file()
}

impl Process {
    /// Start `command` (program and arguments) in `cwd`.
    pub fn spawn(command: &[String], cwd: &Path) -> Result<Process, String> {
        let (program, args) = command.split_first().ok_or("the command is empty")?;
        let resolved = resolve_program(program, cwd)
            .ok_or_else(|| format!("program `{program}` not found"))?;
        let mut cmd = Command::new(&resolved);
        cmd.args(args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Its own process group: ending the adapter ends whatever it started (a wrapper script's
        // child, a module's subprocess). And a Ctrl-C at the terminal reaches the whole foreground
        // group, and `wakesim run` stops between seeds on it, so the seed in flight must finish
        // against a live adapter rather than end as an adapter fault. If wakesim exits without
        // ending it, the adapter reads EOF on its stdin.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let serial = SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let token = format!("{}:{serial}", std::process::id());
        cmd.env(TOKEN_VAR, &token);
        #[cfg(target_os = "linux")]
        die_with_parent(&mut cmd);
        let mut child = spawner::spawn(cmd)
            .map_err(|e| format!("cannot start `{}`: {e}", resolved.display()))?;
        let stdin = child.stdin.take();
        #[cfg(unix)]
        if let Some(pipe) = &stdin {
            rustix::io::ioctl_fionbio(pipe, true)
                .map_err(|e| format!("cannot make the adapter's stdin non-blocking: {e}"))?;
        }
        let stdout = Lines::new(child.stdout.take().expect("piped stdout"))?;
        let stderr_pipe = child.stderr.take().expect("piped stderr");

        let stderr = Arc::new(Mutex::new(Vec::new()));
        let (done_tx, stderr_done) = mpsc::channel();
        let sink = Arc::clone(&stderr);
        std::thread::Builder::new()
            .name("wakesim-adapter-stderr".into())
            .spawn(move || {
                keep_tail(stderr_pipe, &sink);
                let _ = done_tx.send(());
            })
            .map_err(|e| format!("cannot start a reader thread: {e}"))?;

        Ok(Process {
            child,
            stdin,
            reaped: false,
            stdout,
            stderr,
            stderr_done,
            token,
        })
    }

    /// Write one line (a newline is added), waiting at most `bound` for the adapter to read it.
    /// An adapter that never reads its stdin fills the pipe; the write then ends in a
    /// `TimedOut` error instead of blocking forever.
    pub fn write_line(&mut self, line: &str, bound: Duration) -> std::io::Result<()> {
        let w = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::other("stdin closed"))?;
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        write_within(w, &bytes, Instant::now() + bound)
    }

    /// Write bytes that already end with a newline (one or more whole lines), within `bound`
    /// as [`Process::write_line`].
    pub fn write_lines(&mut self, bytes: &[u8], bound: Duration) -> std::io::Result<()> {
        assert!(bytes.ends_with(b"\n"), "a frame is written as whole lines");
        let w = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::other("stdin closed"))?;
        write_within(w, bytes, Instant::now() + bound)
    }

    /// The next line the adapter wrote, waiting at most `bound`.
    pub fn read_line(&mut self, bound: Duration) -> Result<Vec<u8>, ReadError> {
        self.stdout.next(Instant::now() + bound)
    }

    /// Wait up to `bound` for the child to exit by itself.
    fn wait_exit(&mut self, bound: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + bound;
        loop {
            match self.child.try_wait() {
                Ok(Some(s)) => {
                    self.reaped = true;
                    return Some(s);
                }
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                _ => return None,
            }
        }
    }

    /// Wait a little for a process whose stdout closed to exit; end it (and its group) either
    /// way.
    fn exit_status(&mut self) -> Option<ExitStatus> {
        let status = self.wait_exit(EXIT_WAIT);
        self.end();
        status
    }

    /// End the adapter and everything it started: close its stdin, SIGTERM its process group,
    /// SIGKILL the group after [`END_WAIT`], and reap the child. Idempotent.
    fn end(&mut self) {
        self.stdin = None;
        #[cfg(unix)]
        {
            use rustix::process::{Pid, Signal, kill_process_group};
            // The group id is the child's pid. It stays ours while the child is unreaped (a
            // zombie still holds it); once reaped, a group member may still hold it too, and a
            // new process cannot take an id whose group is alive.
            let group = i32::try_from(self.child.id()).ok().and_then(Pid::from_raw);
            if let Some(g) = group {
                let _ = kill_process_group(g, Signal::TERM);
                if !self.reaped {
                    self.wait_exit(END_WAIT);
                }
                let _ = kill_process_group(g, Signal::KILL);
            }
        }
        if !self.reaped {
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.reaped = true;
        }
        #[cfg(target_os = "linux")]
        sweep_descendants(&self.token, self.child.id());
    }

    /// Stop the process and turn what went wrong into a fault with its stderr tail.
    pub fn into_fault(mut self, kind: FaultKind, detail: String) -> AdapterFault {
        self.stdin = None;
        let detail = if kind == FaultKind::Exited {
            match self.exit_status() {
                Some(s) => format!("{detail} (it exited: {s})"),
                None => format!("{detail} (it closed its stdout but kept running; killed)"),
            }
        } else {
            self.end();
            detail
        };
        let _ = self.stderr_done.recv_timeout(EXIT_WAIT);
        let tail = self.stderr_tail();
        AdapterFault {
            kind,
            detail,
            stderr_tail: tail,
        }
    }

    /// The last lines of what the adapter wrote to stderr so far.
    pub fn stderr_tail(&self) -> String {
        let bytes = self.stderr.lock().map(|b| b.clone()).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.trim_end().lines().collect();
        let from = lines.len().saturating_sub(STDERR_TAIL_LINES_MAX);
        lines[from..].join("\n")
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.end();
    }
}

/// Kill every process still carrying this adapter's token (one that left the adapter's process
/// group), and reap what was reparented to wakesim (a subreaper): those, and members of the
/// adapter's group whose parent died before them (zombies show no environment, but keep their
/// group). Processes that are not ours to read are skipped: a process of another user cannot
/// have inherited the token.
#[cfg(target_os = "linux")]
fn sweep_descendants(token: &str, group: u32) {
    use rustix::process::{Pid, Signal, WaitOptions, kill_process, waitpid};
    let needle = format!("{TOKEN_VAR}={token}");
    let me = rustix::process::getpid();
    let me_s = me.as_raw_nonzero().to_string();
    let group_s = group.to_string();
    // A grandchild that was between fork and exec, or whose parent was still exiting, may show
    // up a moment later: look twice.
    for round in 0..2 {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return;
        };
        let mut found = false;
        for e in entries.flatten() {
            let Some(pid) = (e.file_name().to_str())
                .and_then(|n| n.parse::<i32>().ok())
                .and_then(Pid::from_raw)
            else {
                continue;
            };
            if pid == me {
                continue;
            }
            // `pid (comm) state ppid pgrp ...`: the fields after the command's closing paren.
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let mut fields = stat
                .rsplit_once(')')
                .map_or("", |(_, r)| r)
                .split_whitespace();
            let (state, ppid, pgrp) = (fields.next(), fields.next(), fields.next());
            let ours = ppid == Some(me_s.as_str());
            let tokened = std::fs::read(e.path().join("environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == needle.as_bytes()));
            // Only a zombie is reaped by its group: a live process with that group id could be
            // a new adapter that was given the recycled id.
            let zombie = state == Some("Z") && ours && pgrp == Some(group_s.as_str());
            if !tokened && !zombie {
                continue;
            }
            found = true;
            let _ = kill_process(pid, Signal::KILL);
            if ours {
                let _ = waitpid(Some(pid), WaitOptions::empty());
            }
        }
        if !found && round == 0 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Write all of `bytes` to a non-blocking pipe, waiting for room with `poll(2)` until `deadline`.
#[cfg(unix)]
fn write_within(w: &mut ChildStdin, mut bytes: &[u8], deadline: Instant) -> std::io::Result<()> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use std::io::ErrorKind;
    while !bytes.is_empty() {
        match w.write(bytes) {
            Ok(0) => return Err(std::io::Error::from(ErrorKind::WriteZero)),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(std::io::Error::new(
                        ErrorKind::TimedOut,
                        "the adapter does not read its stdin",
                    ));
                }
                let timeout = Timespec {
                    tv_sec: left.as_secs() as _,
                    tv_nsec: left.subsec_nanos() as _,
                };
                let mut fds = [PollFd::new(&*w, PollFlags::OUT)];
                match poll(&mut fds, Some(&timeout)) {
                    Ok(_) | Err(rustix::io::Errno::INTR) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Without `poll`, a plain blocking write.
#[cfg(not(unix))]
fn write_within(w: &mut ChildStdin, bytes: &[u8], _deadline: Instant) -> std::io::Result<()> {
    w.write_all(bytes)
}

/// Lines from the adapter's stdout.
#[cfg(unix)]
struct Lines {
    pipe: ChildStdout,
    buf: Vec<u8>,
    /// Bytes of `buf` already handed out.
    pos: usize,
    /// What one `read` fills, kept (not zeroed again for every line).
    chunk: Box<[u8]>,
}

#[cfg(unix)]
impl Lines {
    fn new(pipe: ChildStdout) -> Result<Lines, String> {
        Ok(Lines {
            pipe,
            buf: Vec::with_capacity(1 << 16),
            pos: 0,
            chunk: vec![0u8; 1 << 14].into_boxed_slice(),
        })
    }

    /// The next line, waiting until `deadline` at most.
    fn next(&mut self, deadline: Instant) -> Result<Vec<u8>, ReadError> {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        loop {
            if let Some(i) = self.buf[self.pos..].iter().position(|&b| b == b'\n') {
                let line = self.buf[self.pos..self.pos + i].to_vec();
                self.pos += i + 1;
                if self.pos == self.buf.len() {
                    self.buf.clear();
                    self.pos = 0;
                }
                return Ok(line);
            }
            if self.buf.len() - self.pos > LINE_BYTES_MAX {
                return Err(ReadError::TooLong);
            }
            if self.pos > 0 {
                self.buf.drain(..self.pos);
                self.pos = 0;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ReadError::Timeout);
            }
            let timeout = Timespec {
                tv_sec: left.as_secs() as _,
                tv_nsec: left.subsec_nanos() as _,
            };
            let mut fds = [PollFd::new(&self.pipe, PollFlags::IN)];
            match poll(&mut fds, Some(&timeout)) {
                Ok(0) => continue,
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(ReadError::Failed(e.to_string())),
            }
            match self.pipe.read(&mut self.chunk[..]) {
                Ok(0) => return Err(ReadError::Eof),
                Ok(n) => self.buf.extend_from_slice(&self.chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ReadError::Failed(e.to_string())),
            }
        }
    }
}

/// Lines from the adapter's stdout, through a reader thread (no `poll` here).
#[cfg(not(unix))]
struct Lines {
    rx: Receiver<Result<Vec<u8>, ReadError>>,
}

#[cfg(not(unix))]
impl Lines {
    fn new(pipe: ChildStdout) -> Result<Lines, String> {
        use std::io::BufRead;
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("wakesim-adapter-stdout".into())
            .spawn(move || {
                let mut r = std::io::BufReader::new(pipe.take(u64::MAX));
                loop {
                    let mut line = Vec::new();
                    let limited = (&mut r)
                        .take(LINE_BYTES_MAX as u64 + 1)
                        .read_until(b'\n', &mut line);
                    let msg = match limited {
                        Ok(0) => Err(ReadError::Eof),
                        Ok(_) if line.last() == Some(&b'\n') => {
                            line.pop();
                            Ok(line)
                        }
                        Ok(_) if line.len() > LINE_BYTES_MAX => Err(ReadError::TooLong),
                        Ok(_) => Err(ReadError::Eof),
                        Err(e) => Err(ReadError::Failed(e.to_string())),
                    };
                    let stop = msg.is_err();
                    if tx.send(msg).is_err() || stop {
                        return;
                    }
                }
            })
            .map_err(|e| format!("cannot start a reader thread: {e}"))?;
        Ok(Lines { rx })
    }

    fn next(&mut self, deadline: Instant) -> Result<Vec<u8>, ReadError> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.rx.recv_timeout(left) {
            Ok(r) => r,
            Err(mpsc::RecvTimeoutError::Timeout) => Err(ReadError::Timeout),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(ReadError::Eof),
        }
    }
}

/// The stderr reader: keep the last few KiB, so a chatty adapter cannot fill the pipe and block;
/// pass on each line that starts with `wakesim: ` (`super::relay`: above `run`'s progress line).
fn keep_tail(mut stderr: impl Read, sink: &Mutex<Vec<u8>>) {
    let mut buf = [0u8; 4096];
    let mut relay = super::relay::LineRelay::default();
    loop {
        match stderr.read(&mut buf) {
            Ok(0) => {
                relay.finish(&mut super::relay::print);
                return;
            }
            Ok(n) => {
                relay.feed(&buf[..n], &mut super::relay::print);
                let Ok(mut tail) = sink.lock() else { return };
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > 2 * STDERR_TAIL_BYTES_MAX {
                    let cut = tail.len() - STDERR_TAIL_BYTES_MAX;
                    tail.drain(..cut);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}
